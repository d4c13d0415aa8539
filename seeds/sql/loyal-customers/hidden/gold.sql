SELECT c.name, count(*) AS delivered_orders
FROM shop.customers c
JOIN shop.orders o ON o.customer_id = c.id
WHERE o.status = 'delivered'
GROUP BY c.id, c.name
HAVING count(*) >= 12
ORDER BY delivered_orders DESC, c.name
