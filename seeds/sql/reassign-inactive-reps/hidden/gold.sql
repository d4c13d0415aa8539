UPDATE shop.orders o SET employee_id = e.manager_id
FROM shop.employees e
WHERE e.id = o.employee_id AND NOT e.active AND o.status IN ('pending', 'shipped');
