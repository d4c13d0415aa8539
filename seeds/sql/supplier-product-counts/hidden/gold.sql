SELECT s.name AS supplier, count(p.id) AS products,
       count(p.id) FILTER (WHERE p.discontinued) AS discontinued
FROM shop.suppliers s
LEFT JOIN shop.products p ON p.supplier_id = s.id
GROUP BY s.id, s.name
