WITH units AS (
    SELECT p.category_id, p.id, p.name, sum(oi.quantity) AS units
    FROM shop.order_items oi
    JOIN shop.orders o ON o.id = oi.order_id
    JOIN shop.products p ON p.id = oi.product_id
    WHERE o.status <> 'cancelled'
    GROUP BY p.category_id, p.id, p.name
), ranked AS (
    SELECT category_id, name, units,
           row_number() OVER (PARTITION BY category_id ORDER BY units DESC, id) AS rank
    FROM units
)
SELECT c.name AS category, r.name AS product, r.units, r.rank
FROM ranked r
JOIN shop.categories c ON c.id = r.category_id
WHERE r.rank <= 3
