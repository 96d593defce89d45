-- Ordered four-step funnel: visitors reaching each step after the previous one, within the range.
WITH scoped AS (
    SELECT visitor_id, name, ts
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
      AND name IN ($step1, $step2, $step3, $step4)
),
s1 AS (SELECT visitor_id, min(ts) AS t FROM scoped WHERE name = $step1 GROUP BY visitor_id),
s2 AS (SELECT s1.visitor_id, min(e.ts) AS t FROM s1 JOIN scoped e ON e.visitor_id = s1.visitor_id
       AND e.name = $step2 AND e.ts >= s1.t GROUP BY s1.visitor_id),
s3 AS (SELECT s2.visitor_id, min(e.ts) AS t FROM s2 JOIN scoped e ON e.visitor_id = s2.visitor_id
       AND e.name = $step3 AND e.ts >= s2.t GROUP BY s2.visitor_id),
s4 AS (SELECT s3.visitor_id, min(e.ts) AS t FROM s3 JOIN scoped e ON e.visitor_id = s3.visitor_id
       AND e.name = $step4 AND e.ts >= s3.t GROUP BY s3.visitor_id)
SELECT (SELECT count(*) FROM s1) AS step1, (SELECT count(*) FROM s2) AS step2,
       (SELECT count(*) FROM s3) AS step3, (SELECT count(*) FROM s4) AS step4
