-- Sales and refunds per currency of one site, orders timed in [$range_start, $range_end); amounts are
-- never converted or summed across currencies. A refund order's amount counts as its absolute value.
SELECT currency,
    coalesce(sum(total) FILTER (WHERE NOT is_refund), 0) AS revenue,
    count(*) FILTER (WHERE NOT is_refund) AS orders,
    count(*) FILTER (WHERE is_refund) AS refunds,
    coalesce(sum(abs(total)) FILTER (WHERE is_refund), 0) AS refunded
FROM orders
WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
    AND ts >= $range_start AND ts < $range_end
GROUP BY currency
ORDER BY currency
