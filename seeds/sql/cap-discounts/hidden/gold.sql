UPDATE shop.order_items SET discount = 0.30 WHERE discount > 0.30;
ALTER TABLE shop.order_items DROP CONSTRAINT order_items_discount_check;
ALTER TABLE shop.order_items ADD CONSTRAINT order_items_discount_check
    CHECK (discount >= 0 AND discount <= 0.30);
