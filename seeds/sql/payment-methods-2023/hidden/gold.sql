SELECT method, round(sum(amount), 2) AS total
FROM shop.payments
WHERE paid_at >= TIMESTAMP '2023-01-01' AND paid_at < TIMESTAMP '2024-01-01'
GROUP BY method
