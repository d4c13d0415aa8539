UPDATE shop.customers SET email = lower(btrim(email)) WHERE email IS NOT NULL;
UPDATE shop.customers c SET email = NULL
WHERE EXISTS (SELECT 1 FROM shop.customers d WHERE d.email = c.email AND d.id < c.id);
ALTER TABLE shop.customers ADD CONSTRAINT customers_email_key UNIQUE (email);
