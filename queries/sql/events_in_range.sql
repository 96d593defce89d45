-- How many events a site has in a time range (for diagnostics).
SELECT count(*) AS events
FROM events
WHERE site_id = $site_id AND date BETWEEN CAST($range_start AS DATE) - 1 AND CAST($range_end AS DATE) + 1
  AND ts >= $range_start AND ts < $range_end
