WITH t AS (
    SELECT o.id, o.order_date, round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS total
    FROM shop.orders o
    JOIN shop.order_items oi ON oi.order_id = o.id
    WHERE o.customer_id = 48 AND o.status <> 'cancelled'
    GROUP BY o.id, o.order_date
)
SELECT id AS order_id, order_date, total,
       sum(total) OVER (ORDER BY order_date, id) AS running_total
FROM t
ORDER BY order_date, id
