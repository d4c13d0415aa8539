WITH y AS (
    SELECT extract(year FROM o.order_date)::int AS year, round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS revenue
    FROM shop.orders o
    JOIN shop.order_items oi ON oi.order_id = o.id
    WHERE o.status = 'delivered'
    GROUP BY 1
)
SELECT year, revenue,
       round(100 * (revenue - lag(revenue) OVER (ORDER BY year))
             / lag(revenue) OVER (ORDER BY year), 1) AS growth_percent
FROM y
ORDER BY year
