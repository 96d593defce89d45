-- Headline counts over a set of sites and a date range (UTC dates of the lake partitions).
WITH scoped AS (
    SELECT * FROM events_people
    WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date
),
orders_scoped AS (
    SELECT * FROM orders_people
    WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date AND NOT is_refund
),
buyers AS (
    SELECT person_id FROM orders_scoped
    UNION
    SELECT person_id FROM scoped WHERE name = 'purchase'
)
SELECT
    (SELECT count(*) FROM scoped) AS events,
    (SELECT count(DISTINCT person_id) FROM scoped) AS people,
    (SELECT count(DISTINCT session_id) FROM scoped) AS sessions,
    (SELECT count(*) FROM scoped WHERE name = 'page_view') AS page_views,
    (SELECT count(*) FROM orders_scoped) AS orders,
    (SELECT count(*) FROM buyers) AS buyers
