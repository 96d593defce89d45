-- Everyone active in the range (an event, a sale or a consent observation), grouped by their latest
-- stated value of $category in the range: `granted`, `denied`, or `unstated` (never stated it in the
-- range). Into the cursor's temporary table `consent_groups`. A refund is no activity of its person:
-- the shop sends it, the person did nothing in the range (as the overview and correlations count
-- people); counted, a person whose only row in the range is a refund would join a group as a
-- non-converting person and lower its conversion rate.
CREATE OR REPLACE TEMP TABLE consent_groups AS
WITH latest AS (
    SELECT person_id, arg_max(granted, (ts, rank, id)) AS granted
    FROM consent_states
    WHERE category = $category
    GROUP BY person_id
),
active AS (
    SELECT person_id FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
    UNION
    SELECT person_id FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end AND NOT is_refund
    UNION
    SELECT person_id FROM consent_observations
)
SELECT a.person_id,
    CASE WHEN l.granted THEN 'granted' WHEN NOT l.granted THEN 'denied' ELSE 'unstated' END AS consent_group
FROM active AS a
LEFT JOIN latest AS l USING (person_id)
