-- The cohort's rows from visitor-activity rollups of whole local months ($files, see
-- warehouse/visitor_activity.py), one per rollup row that matters: the person (as `events_people`
-- resolves them), the month, when they first qualified in it (NULL: not by this row) and the local
-- days of the month they did the return event on (0: none). Row '*' is every event name at once;
-- purchase events naming a sale are activity only, as in `cohort_activity` (the sale is counted from
-- the orders, for its own person).
WITH rolled AS (
    SELECT visitor_id, user_id, month, first_us, day_mask,
        CASE WHEN name = 'purchase' AND is_a_sale($site_id, order_id) THEN NULL ELSE name END AS name
    FROM read_parquet($files, hive_partitioning = false)
)
SELECT hash(person_of(l.user_id, r.user_id, r.visitor_id)) AS person_key, r.month,
    CASE WHEN r.name = CASE $cohort_type WHEN 'signup' THEN 'user_signup' WHEN 'first_purchase' THEN 'purchase' ELSE '*' END
        THEN r.first_us END AS first_us,
    CASE WHEN r.name = coalesce($return_event, '*') THEN r.day_mask ELSE 0 END AS day_mask
FROM rolled AS r
LEFT JOIN visitor_users_in([$site_id]) AS l ON l.site_id = $site_id AND l.visitor_id = r.visitor_id
WHERE r.name = coalesce($return_event, '*')
    OR r.name = CASE $cohort_type WHEN 'signup' THEN 'user_signup' WHEN 'first_purchase' THEN 'purchase' ELSE '*' END
