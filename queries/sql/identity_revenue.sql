-- Sales (refunds excluded) in [$range_start, $range_end) per currency, split by whether the buyer is
-- an identified person (as in identity_people.sql: a blank user id is no user); never summed across
-- currencies.
SELECT user_of(user_id) IS NOT NULL OR person_id <> visitor_id AS identified, currency,
    count(*) AS orders,
    count(DISTINCT person_id) AS buyers,
    sum(total) AS revenue
FROM orders_people_in([$site_id])
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end AND NOT is_refund
GROUP BY identified, currency
ORDER BY identified DESC, currency
