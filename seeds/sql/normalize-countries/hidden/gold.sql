UPDATE shop.customers SET country = CASE country
    WHEN 'USA' THEN 'United States'
    WHEN 'US' THEN 'United States'
    WHEN 'U.S.A.' THEN 'United States'
    WHEN 'UK' THEN 'United Kingdom'
    WHEN 'Great Britain' THEN 'United Kingdom'
    WHEN 'Deutschland' THEN 'Germany'
    WHEN 'Brasil' THEN 'Brazil'
    WHEN 'Holland' THEN 'Netherlands'
END
WHERE country IN ('USA', 'US', 'U.S.A.', 'UK', 'Great Britain', 'Deutschland', 'Brasil', 'Holland');
