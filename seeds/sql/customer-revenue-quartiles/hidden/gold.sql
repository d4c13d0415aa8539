WITH rev AS (
    SELECT o.customer_id, sum(oi.quantity * oi.unit_price * (1 - oi.discount)) AS revenue
    FROM shop.orders o
    JOIN shop.order_items oi ON oi.order_id = o.id
    WHERE o.status = 'delivered'
    GROUP BY o.customer_id
), q AS (
    SELECT revenue, ntile(4) OVER (ORDER BY revenue, customer_id) AS quartile FROM rev
)
SELECT quartile, count(*) AS customers, round(min(revenue), 2) AS min_revenue,
       round(max(revenue), 2) AS max_revenue
FROM q
GROUP BY quartile
