CREATE TABLE shop.inventory (
    product_id integer PRIMARY KEY REFERENCES shop.products (id),
    quantity integer NOT NULL CHECK (quantity >= 0)
);
INSERT INTO shop.inventory (product_id, quantity) SELECT id, stock FROM shop.products;
ALTER TABLE shop.products DROP COLUMN stock;
