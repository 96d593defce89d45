-- Sales per currency (refunds apart); amounts are never converted or summed across currencies.
SELECT currency,
    sum(total) FILTER (WHERE NOT is_refund) AS revenue,
    count(*) FILTER (WHERE NOT is_refund) AS orders,
    coalesce(sum(abs(total)) FILTER (WHERE is_refund), 0) AS refunded
FROM orders
WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date
GROUP BY currency
ORDER BY currency
