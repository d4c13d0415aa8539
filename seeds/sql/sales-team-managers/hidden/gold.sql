SELECT e.first_name || ' ' || e.last_name AS employee,
       m.first_name || ' ' || m.last_name AS manager
FROM shop.employees e
JOIN shop.departments d ON d.id = e.department_id
LEFT JOIN shop.employees m ON m.id = e.manager_id
WHERE d.name = 'Sales'
