SELECT date_trunc('month', o.order_date)::date AS month,
       round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS revenue
FROM shop.orders o
JOIN shop.order_items oi ON oi.order_id = o.id
WHERE o.status = 'delivered'
  AND o.order_date >= DATE '2023-01-01' AND o.order_date < DATE '2024-01-01'
GROUP BY 1
ORDER BY 1
