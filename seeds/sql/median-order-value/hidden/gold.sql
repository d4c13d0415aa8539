SELECT extract(year FROM order_date)::int AS year,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY total))::numeric, 2) AS median
FROM shop.order_totals
WHERE status = 'delivered'
GROUP BY 1
