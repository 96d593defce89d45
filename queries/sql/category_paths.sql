-- How people move between categories: the category_view events of each session (of each person) in
-- time order, repeated views of the same category in a row folded into one, and every step from one
-- category to the next. Per (from, to): transitions, sessions and people, and the share of all steps
-- leaving `from`. Steps are kept when either end lies in the subtree of $category_path (if not null).
WITH views AS (
    SELECT person_id, session_id, ts, event_id,
        category_path_of(category_path) AS category_path
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
      AND ts >= $range_start AND ts < $range_end AND name = 'category_view'
),
marked AS (
    SELECT *, lag(category_path) OVER (PARTITION BY person_id, session_id ORDER BY ts, event_id) AS previous
    FROM views
),
folded AS (
    SELECT * FROM marked WHERE previous IS NULL OR previous <> category_path
),
steps AS (
    SELECT person_id, session_id, category_path AS from_path,
        lead(category_path) OVER (PARTITION BY person_id, session_id ORDER BY ts, event_id) AS to_path
    FROM folded
),
pairs AS (
    SELECT from_path, to_path, count(*) AS transitions, count(DISTINCT (person_id, session_id)) AS sessions,
        count(DISTINCT person_id) AS people
    FROM steps
    WHERE to_path IS NOT NULL
    GROUP BY from_path, to_path
),
final AS (
    SELECT *, sum(transitions) OVER (PARTITION BY from_path) AS leaving
    FROM pairs
)
SELECT from_path, to_path, transitions, sessions, people, leaving
FROM final
WHERE $category_path IS NULL
   OR from_path = $category_path OR starts_with(from_path, $category_path || ' > ')
   OR to_path = $category_path OR starts_with(to_path, $category_path || ' > ')
ORDER BY transitions DESC, from_path, to_path
LIMIT $limit
