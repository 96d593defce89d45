-- Sales of the journeys in `journey_keys` (the sales of their streams) per currency; amounts are never
-- summed across currencies.
SELECT s.currency, sum(s.total) AS revenue, count(*) AS orders
FROM journey_sales AS s
SEMI JOIN journey_keys AS k ON k.journey_key = s.journey_key
GROUP BY s.currency
ORDER BY s.currency
