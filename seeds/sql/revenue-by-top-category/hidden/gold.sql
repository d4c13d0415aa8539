WITH RECURSIVE tree AS (
    SELECT id, id AS root FROM shop.categories WHERE parent_id IS NULL
    UNION ALL
    SELECT c.id, t.root FROM shop.categories c JOIN tree t ON c.parent_id = t.id
)
SELECT r.name AS category, round(sum(oi.quantity * oi.unit_price * (1 - oi.discount)), 2) AS revenue
FROM shop.order_items oi
JOIN shop.orders o ON o.id = oi.order_id
JOIN shop.products p ON p.id = oi.product_id
JOIN tree t ON t.id = p.category_id
JOIN shop.categories r ON r.id = t.root
WHERE o.status = 'delivered'
GROUP BY r.name
