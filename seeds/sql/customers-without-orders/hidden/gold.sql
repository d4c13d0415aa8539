SELECT c.id, c.name
FROM shop.customers c
WHERE NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = c.id)
