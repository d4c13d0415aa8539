ALTER TABLE shop.categories ADD COLUMN path text;
WITH RECURSIVE tree AS (
    SELECT id, name::text AS path FROM shop.categories WHERE parent_id IS NULL
    UNION ALL
    SELECT c.id, t.path || ' > ' || c.name FROM shop.categories c JOIN tree t ON c.parent_id = t.id
)
UPDATE shop.categories c SET path = tree.path FROM tree WHERE tree.id = c.id;
ALTER TABLE shop.categories ALTER COLUMN path SET NOT NULL;
