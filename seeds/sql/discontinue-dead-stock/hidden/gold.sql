UPDATE shop.products p SET discontinued = true
WHERE p.stock = 0 AND NOT p.discontinued
  AND NOT EXISTS (
      SELECT 1 FROM shop.order_items oi JOIN shop.orders o ON o.id = oi.order_id
      WHERE oi.product_id = p.id AND o.order_date >= DATE '2024-01-01');
