SELECT c.name AS category,
       round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS revenue,
       round(sum(oi.quantity * oi.unit_price * (1 - oi.discount) - oi.quantity * p.cost), 2) AS margin,
       round(100 * sum(oi.quantity * oi.unit_price * (1 - oi.discount) - oi.quantity * p.cost) / sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 1) AS margin_percent
FROM shop.order_items oi
JOIN shop.orders o ON o.id = oi.order_id
JOIN shop.products p ON p.id = oi.product_id
JOIN shop.categories c ON c.id = p.category_id
WHERE o.status = 'delivered'
GROUP BY c.name
