-- Events and people per hour bucket of the site's time zone. $bucket_starts holds every bucket's first
-- instant, ascending, the first at the range start (computed in Python: a bucket is a run of instants
-- with one local wall-clock hour and one UTC offset); an event belongs to the last bucket starting at
-- or before it.
WITH buckets AS (
    SELECT unnest($bucket_starts) AS bucket
),
scoped AS (
    SELECT ts, person_id
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
      AND ts >= $range_start AND ts < $range_end
      AND ($name IS NULL OR name = $name)
)
SELECT b.bucket, count(*) AS events, count(DISTINCT e.person_id) AS people
FROM scoped AS e
ASOF JOIN buckets AS b ON e.ts >= b.bucket
GROUP BY b.bucket
ORDER BY b.bucket
