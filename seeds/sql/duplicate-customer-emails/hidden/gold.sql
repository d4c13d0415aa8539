SELECT lower(btrim(email)) AS email, count(*) AS customers
FROM shop.customers
WHERE email IS NOT NULL
GROUP BY 1
HAVING count(*) > 1
