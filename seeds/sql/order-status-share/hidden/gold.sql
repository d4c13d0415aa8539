SELECT status, count(*) AS orders,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS percent
FROM shop.orders
GROUP BY status
