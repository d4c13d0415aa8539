WITH RECURSIVE chain AS (
    SELECT id, 0 AS depth FROM shop.employees WHERE manager_id IS NULL
    UNION ALL
    SELECT e.id, c.depth + 1 FROM shop.employees e JOIN chain c ON e.manager_id = c.id
)
SELECT id AS employee_id, depth FROM chain
