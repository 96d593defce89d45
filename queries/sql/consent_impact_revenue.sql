-- Per consent group and currency: sales (orders that are not refunds) in the range and their
-- total. Amounts are never converted or summed across currencies.
SELECT g.consent_group, o.currency, sum(o.total) AS revenue, count(*) AS orders
FROM orders_people_in([$site_id]) AS o
JOIN consent_groups AS g USING (person_id)
WHERE o.site_id = $site_id AND o.date BETWEEN $scan_start AND $scan_end
    AND o.ts >= $range_start AND o.ts < $range_end AND NOT o.is_refund
GROUP BY g.consent_group, o.currency
ORDER BY g.consent_group, o.currency
