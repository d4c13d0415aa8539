SELECT e.id AS employee_id, e.first_name || ' ' || e.last_name AS full_name,
       d.name AS department, e.salary
FROM shop.employees e
JOIN shop.departments d ON d.id = e.department_id
WHERE e.active
  AND e.salary > (SELECT avg(x.salary) FROM shop.employees x
                  WHERE x.department_id = e.department_id AND x.active)
