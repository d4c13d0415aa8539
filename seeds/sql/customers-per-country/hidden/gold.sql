SELECT country, count(*) AS number_of_customers
FROM shop.customers
GROUP BY country
