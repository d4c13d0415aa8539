ALTER TABLE shop.customers ADD COLUMN phone_digits text;
UPDATE shop.customers SET phone_digits = right(regexp_replace(phone, '\D', '', 'g'), 10)
WHERE phone IS NOT NULL;
