-- Dwell time of one product per day of the site's time zone (same durations as product_dwell.sql).
WITH dwell AS (
    SELECT ts, dwell_seconds(metadata) AS seconds
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
        AND name = 'product_dwell_time' AND product_item_code = $code
)
SELECT (ts AT TIME ZONE $timezone)::DATE AS day, count(*) AS measured, avg(seconds) AS avg_seconds,
    quantile_cont(seconds, 0.5) AS median_seconds
FROM dwell
WHERE seconds >= 0 AND seconds <= $max_seconds
GROUP BY day
ORDER BY day
