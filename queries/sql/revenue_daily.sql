-- Sales per day of the site's time zone and currency (refunds excluded), orders timed in
-- [$range_start, $range_end); days without sales have no row.
SELECT timezone($timezone, ts)::DATE AS day, currency,
    sum(total) AS revenue,
    count(*) AS orders
FROM orders
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end AND NOT is_refund
GROUP BY day, currency
ORDER BY day, currency
