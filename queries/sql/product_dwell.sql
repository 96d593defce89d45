-- Dwell time of one product ($code) from its product_dwell_time events in the range, in seconds
-- (`dwell_seconds`, warehouse/sql/people_views.sql). Durations missing, negative or above
-- $max_seconds are counted apart, not measured.
WITH dwell AS (
    SELECT person_id, ts, dwell_seconds(metadata) AS seconds
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
        AND name = 'product_dwell_time' AND product_item_code = $code
),
measured AS (
    SELECT person_id, ts, seconds FROM dwell WHERE seconds >= 0 AND seconds <= $max_seconds
)
SELECT
    (SELECT count(*) FROM dwell) AS events,
    (SELECT count(*) FROM dwell WHERE seconds IS NULL) AS without_duration,
    (SELECT count(*) FROM dwell WHERE seconds < 0 OR seconds > $max_seconds) AS out_of_range,
    count(*) AS measured,
    count(DISTINCT person_id) AS people,
    sum(seconds) AS total_seconds,
    avg(seconds) AS avg_seconds,
    quantile_cont(seconds, 0.5) AS median_seconds,
    quantile_cont(seconds, 0.75) AS p75_seconds,
    quantile_cont(seconds, 0.9) AS p90_seconds,
    max(seconds) AS max_seconds,
    count(*) FILTER (WHERE seconds < 5) AS under_5,
    count(*) FILTER (WHERE seconds >= 5 AND seconds < 15) AS from_5,
    count(*) FILTER (WHERE seconds >= 15 AND seconds < 30) AS from_15,
    count(*) FILTER (WHERE seconds >= 30 AND seconds < 60) AS from_30,
    count(*) FILTER (WHERE seconds >= 60 AND seconds < 180) AS from_60,
    count(*) FILTER (WHERE seconds >= 180) AS from_180
FROM measured
