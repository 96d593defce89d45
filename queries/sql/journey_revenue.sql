-- Sales of the journeys in `journey_stream` per currency; amounts are never summed across currencies.
SELECT currency, sum(amount) AS revenue, count(*) AS orders
FROM journey_stream
WHERE source = 'order'
GROUP BY currency
ORDER BY currency
