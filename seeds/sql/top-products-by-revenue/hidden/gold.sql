SELECT p.name AS product_name, round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS revenue
FROM shop.order_items oi
JOIN shop.orders o ON o.id = oi.order_id
JOIN shop.products p ON p.id = oi.product_id
WHERE o.status = 'delivered'
GROUP BY p.id, p.name
ORDER BY revenue DESC
LIMIT 5
