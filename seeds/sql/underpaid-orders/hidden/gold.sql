WITH totals AS (
    SELECT o.id, round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS total
    FROM shop.orders o
    JOIN shop.order_items oi ON oi.order_id = o.id
    WHERE o.status = 'delivered'
    GROUP BY o.id
), paid AS (
    SELECT order_id, sum(amount) AS paid FROM shop.payments GROUP BY order_id
)
SELECT t.id AS order_id, t.total, coalesce(p.paid, 0) AS paid
FROM totals t
LEFT JOIN paid p ON p.order_id = t.id
WHERE coalesce(p.paid, 0) < t.total
ORDER BY t.id
