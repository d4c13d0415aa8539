DELETE FROM shop.orders o
WHERE o.status = 'pending' AND o.order_date < DATE '2024-06-25'
  AND NOT EXISTS (SELECT 1 FROM shop.payments p WHERE p.order_id = o.id);
