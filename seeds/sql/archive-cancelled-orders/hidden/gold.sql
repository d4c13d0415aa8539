CREATE TABLE shop.cancelled_orders (LIKE shop.orders);
ALTER TABLE shop.cancelled_orders ADD PRIMARY KEY (id);
INSERT INTO shop.cancelled_orders
SELECT * FROM shop.orders WHERE status = 'cancelled' AND order_date < DATE '2023-01-01';
DELETE FROM shop.order_items WHERE order_id IN (SELECT id FROM shop.cancelled_orders);
DELETE FROM shop.orders WHERE id IN (SELECT id FROM shop.cancelled_orders);
