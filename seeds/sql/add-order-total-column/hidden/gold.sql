ALTER TABLE shop.orders ADD COLUMN total numeric(12,2);
UPDATE shop.orders o SET total = coalesce(
    (SELECT round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) FROM shop.order_items oi WHERE oi.order_id = o.id), 0);
ALTER TABLE shop.orders ALTER COLUMN total SET NOT NULL;
