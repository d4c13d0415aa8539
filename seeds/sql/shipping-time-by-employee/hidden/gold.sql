SELECT e.id AS employee_id, e.first_name || ' ' || e.last_name AS full_name,
       round(avg(o.shipped_date - o.order_date), 1) AS average_days
FROM shop.orders o
JOIN shop.employees e ON e.id = o.employee_id
WHERE o.shipped_date IS NOT NULL
GROUP BY e.id
