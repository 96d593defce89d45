-- Events and people per day or week (Monday) of the site's time zone, as local dates.
SELECT date_trunc($interval, timezone($timezone, ts)) AS bucket, count(*) AS events,
    count(DISTINCT person_id) AS people
FROM events_people_in([$site_id])
WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
  AND ts >= $range_start AND ts < $range_end
  AND ($name IS NULL OR name = $name)
GROUP BY bucket
ORDER BY bucket
