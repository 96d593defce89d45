-- Ordered four-step funnel: visitors reaching each step after the previous one, within the range.
-- Each step reads only its own event name: on compacted files (sorted by name) a step's scan skips
-- the row groups of the other names; on small flush files every step opens every file.
WITH s1 AS (
    SELECT visitor_id, min(ts) AS t FROM events
    WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date AND name = $step1
    GROUP BY visitor_id
),
s2 AS (
    SELECT e.visitor_id, min(e.ts) AS t FROM events e JOIN s1 ON e.visitor_id = s1.visitor_id AND e.ts >= s1.t
    WHERE e.site_id = $site_id AND e.date BETWEEN $start_date AND $end_date AND e.name = $step2
    GROUP BY e.visitor_id
),
s3 AS (
    SELECT e.visitor_id, min(e.ts) AS t FROM events e JOIN s2 ON e.visitor_id = s2.visitor_id AND e.ts >= s2.t
    WHERE e.site_id = $site_id AND e.date BETWEEN $start_date AND $end_date AND e.name = $step3
    GROUP BY e.visitor_id
),
s4 AS (
    SELECT e.visitor_id, min(e.ts) AS t FROM events e JOIN s3 ON e.visitor_id = s3.visitor_id AND e.ts >= s3.t
    WHERE e.site_id = $site_id AND e.date BETWEEN $start_date AND $end_date AND e.name = $step4
    GROUP BY e.visitor_id
)
SELECT (SELECT count(*) FROM s1) AS step1, (SELECT count(*) FROM s2) AS step2,
       (SELECT count(*) FROM s3) AS step3, (SELECT count(*) FROM s4) AS step4
