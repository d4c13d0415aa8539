SELECT p.sku, p.name
FROM shop.products p
LEFT JOIN shop.order_items oi ON oi.product_id = p.id
WHERE oi.product_id IS NULL
