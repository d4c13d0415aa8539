DELETE FROM shop.payments p
USING shop.payments q
WHERE p.order_id = q.order_id AND p.amount = q.amount AND p.method = q.method
  AND p.paid_at = q.paid_at AND p.id > q.id;
