-- Events and people per hour of the site's time zone. A bucket is the instant its local hour began
-- (the event's instant less its minutes past the local hour), so the hour a clock repeats when summer
-- time ends is two buckets, and the hour it skips when summer time starts is none.
SELECT ts - (timezone($timezone, ts) - date_trunc('hour', timezone($timezone, ts))) AS bucket,
    count(*) AS events, count(DISTINCT person_id) AS people
FROM events_people
WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
  AND ts >= $range_start AND ts < $range_end
  AND ($name IS NULL OR name = $name)
GROUP BY bucket
ORDER BY bucket
