-- One site's events of one local month ($month_start ≤ ts < $month_end, read from exactly the files
-- in $files), per visitor, the user id the event itself names and event name, plus one row per
-- visitor and user id over all names (name '*'): the first event's time (epoch µs) and the local days
-- of the month with an event, as bits (bit d - 1: day d in $timezone). Ordered by name, so a report
-- that needs the '*' rows alone skips the other names' row groups on their statistics.
SELECT $month AS month, visitor_id, nullif(user_id, '') AS user_id, coalesce(name, '*') AS name,
    min(epoch_us(ts)) AS first_us,
    bit_or(1::UINTEGER << (dayofmonth(timezone($timezone, ts)) - 1)::UINTEGER) AS day_mask
FROM read_parquet($files, union_by_name = true, hive_partitioning = false)
WHERE ts >= $month_start AND ts < $month_end
GROUP BY GROUPING SETS ((visitor_id, nullif(user_id, ''), name), (visitor_id, nullif(user_id, '')))
ORDER BY name
