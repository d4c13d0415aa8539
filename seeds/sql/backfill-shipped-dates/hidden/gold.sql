UPDATE shop.orders SET shipped_date = order_date + 3
WHERE status IN ('shipped', 'delivered') AND shipped_date IS NULL;
