WITH RECURSIVE tree AS (
    SELECT id FROM shop.categories WHERE name = 'Electronics'
    UNION ALL
    SELECT c.id FROM shop.categories c JOIN tree t ON c.parent_id = t.id
)
UPDATE shop.products SET unit_price = round(unit_price * 1.05, 2)
WHERE category_id IN (SELECT id FROM tree);
