-- For each event name, and each event name with its category path (normalised), how many people who
-- did it converted (success_count) and how many did not (failure_count), over the people of one site
-- active in [$range_start, $range_end): anyone with an event or a sale there. A person converted when
-- they have a sale (refunds apart) or a purchase event naming no sale in the range; a converted
-- person's events count up to their first purchase only (what led to it, not what followed), and
-- `purchase` itself is no property. The row with a null name carries the totals: converted and not converted people.
WITH scoped AS (
    SELECT person_id, ts, name, name = 'purchase' AND NOT names_a_sale(site_id, metadata) AS purchase,
        CASE WHEN nullif(trim(category_path), '') IS NOT NULL THEN category_path_of(category_path) END AS category_path
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND ts >= $range_start AND ts < $range_end
),
sales AS (
    SELECT person_id, ts
    FROM orders_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND ts >= $range_start AND ts < $range_end AND NOT is_refund
),
conversions AS (
    SELECT person_id, min(ts) AS converted_at
    FROM (SELECT person_id, ts FROM sales UNION ALL SELECT person_id, ts FROM scoped WHERE purchase)
    GROUP BY person_id
),
people AS (
    SELECT a.person_id, c.converted_at
    FROM (SELECT person_id FROM scoped UNION SELECT person_id FROM sales) AS a
    LEFT JOIN conversions AS c USING (person_id)
),
done AS (
    SELECT DISTINCT e.person_id, e.name, e.category_path, p.converted_at IS NOT NULL AS converted
    FROM scoped AS e
    JOIN people AS p USING (person_id)
    WHERE e.name <> 'purchase' AND (p.converted_at IS NULL OR e.ts <= p.converted_at)
),
counted AS (
    SELECT name, category_path, grouping(category_path) = 1 AS plain,
        count(DISTINCT person_id) FILTER (WHERE converted) AS success_count,
        count(DISTINCT person_id) FILTER (WHERE NOT converted) AS failure_count
    FROM done
    GROUP BY GROUPING SETS ((name), (name, category_path))
)
SELECT name, CASE WHEN plain THEN NULL ELSE category_path END AS category_path, success_count, failure_count
FROM counted
WHERE plain OR category_path IS NOT NULL
UNION ALL
SELECT NULL, NULL, count(*) FILTER (WHERE converted_at IS NOT NULL), count(*) FILTER (WHERE converted_at IS NULL)
FROM people
