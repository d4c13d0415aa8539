UPDATE shop.customers SET email = lower(btrim(email)) WHERE email IS NOT NULL;
