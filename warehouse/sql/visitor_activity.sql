-- One site's events of one local month ($month_start ≤ ts < $month_end, read from exactly the files
-- in $files), per visitor, the user id the event itself names and event name, plus one row per
-- visitor and user id over all names (name '*'): the first event's time (epoch µs) and the local days
-- of the month with an event, as bits (bit d - 1: day d in $timezone). Purchase events are kept apart
-- by the order they name (`order_id`, metadata.orderId): whether that order is a sale, which makes the
-- event that sale rather than its sender's purchase, is only known when a report reads the rollup.
-- Ordered by name, so a report that needs the '*' rows alone skips the other names' row groups on
-- their statistics.
SELECT $month AS month, visitor_id, nullif(user_id, '') AS user_id, coalesce(name, '*') AS name, order_id,
    min(epoch_us(ts)) AS first_us,
    bit_or(1::UINTEGER << (dayofmonth(timezone($timezone, ts)) - 1)::UINTEGER) AS day_mask
FROM (
    SELECT visitor_id, user_id, name, ts,
        CASE WHEN name = 'purchase' THEN json_extract_string(metadata, '$.orderId') END AS order_id
    FROM read_parquet($files, union_by_name = true, hive_partitioning = false)
    WHERE ts >= $month_start AND ts < $month_end
)
GROUP BY GROUPING SETS ((visitor_id, nullif(user_id, ''), name, order_id), (visitor_id, nullif(user_id, '')))
ORDER BY name
