SELECT d.name AS department, count(*) AS employees, round(avg(e.salary), 2) AS average_salary
FROM shop.employees e
JOIN shop.departments d ON d.id = e.department_id
WHERE e.active
GROUP BY d.name
