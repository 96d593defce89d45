-- Per category, changes of mind in the range: consecutive stated values of one person (in
-- observation order) that differ. `grants`: refused then granted; `revocations`: granted then
-- refused; `people_changed`: people with at least one change.
WITH ordered AS (
    SELECT person_id, category, granted,
        lag(granted) OVER (PARTITION BY person_id, category ORDER BY ts, rank, id) AS previous
    FROM consent_states
)
SELECT category,
    count(*) FILTER (WHERE granted AND NOT previous) AS grants,
    count(*) FILTER (WHERE NOT granted AND previous) AS revocations,
    count(DISTINCT person_id) FILTER (WHERE granted <> previous) AS people_changed
FROM ordered
GROUP BY category
