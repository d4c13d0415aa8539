SELECT DISTINCT ON (customer_id) customer_id, id AS order_id, order_date
FROM shop.orders
ORDER BY customer_id, order_date, id
