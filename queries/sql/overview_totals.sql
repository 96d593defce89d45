-- Headline counts over a set of sites and a date range (UTC dates of the lake partitions). People and
-- sessions are per site (two storefronts never share a session, nor, here, a person); people are
-- everyone who did something in the range, an order included, so buyers are a share of them. A
-- purchase event naming a sale is that sale (its buyer is the order's person). A refund is no activity
-- of its person (the shop sends it). Sessions are those of the range's events. Page views are
-- page_view and virtual_page_view events (a single-page storefront's route changes).
WITH scoped AS (
    SELECT * FROM events_people_in($site_ids)
    WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date
),
orders_scoped AS (
    SELECT * FROM orders_people_in($site_ids)
    WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date AND NOT is_refund
),
people AS (
    SELECT site_id, person_id FROM scoped
    UNION
    SELECT site_id, person_id FROM orders_scoped
),
buyers AS (
    SELECT site_id, person_id FROM orders_scoped
    UNION
    SELECT site_id, person_id FROM scoped WHERE name = 'purchase' AND NOT names_a_sale(site_id, metadata)
)
SELECT
    (SELECT count(*) FROM scoped) AS events,
    (SELECT count(*) FROM people) AS people,
    (SELECT count(DISTINCT (site_id, session_id)) FROM scoped) AS sessions,
    (SELECT count(*) FROM scoped WHERE name IN ('page_view', 'virtual_page_view')) AS page_views,
    (SELECT count(*) FROM orders_scoped) AS orders,
    (SELECT count(*) FROM buyers) AS buyers
