-- The search activity of a set of sites over UTC dates, as the temporary table `search_steps` of the
-- cursor: every search-family event and every search click, with its query (`search_query_of`:
-- metadata.query, else q, searchQuery or searchTerm, the first that is text or a number; lower case,
-- runs of white space as one space, trimmed). A search click is a product_click, product_view
-- or popular_product_click naming a product that carries a query itself, is a
-- popular_product_click, or whose previous step in its session was one of $search_steps; steps skip
-- the events in $ignored (page views, impressions, identity...). A click's query is its own, else the
-- latest query any step of its session carried so far. Sessions are read back to the UTC day before
-- the range, so a search just before midnight leads to the click after it (a session is cut there
-- when it is longer);
-- the rows of that day are not the range's. Only sessions with a search event or a click carrying a
-- query are read past the first scan.
CREATE OR REPLACE TEMP TABLE search_steps AS
-- Each event's query and result count are read from its metadata once, here, and the metadata goes no
-- further: carrying it through the materialised CTE costs more than reading it, and the session
-- filter and the steps both need the query.
WITH scoped AS (
    SELECT e.site_id, person_of(l.user_id, e.user_id, e.visitor_id) AS person_id, e.session_id, e.event_id, e.ts,
        e.date, e.name, e.product_item_code, e.result_count, e.query
    FROM (
        SELECT site_id, visitor_id, user_id, session_id, event_id, ts, date, name, product_item_code,
            CASE WHEN name IN ('search_results', 'search_zero_results')
                -- A negative count is no count: it would pull the average down.
                AND TRY_CAST(json_extract_string(metadata, '$.resultCount') AS BIGINT) >= 0
                THEN TRY_CAST(json_extract_string(metadata, '$.resultCount') AS BIGINT) END AS result_count,
            search_query_of(metadata) AS query
        FROM events
        WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date - 1 AND $end_date
          AND NOT list_contains($ignored, name)
    ) AS e
    -- People as events_people_in resolves them (`visitor_users_in`, `person_of`), joined here rather
    -- than through that macro so that the metadata is read before the join.
    LEFT JOIN visitor_users_in($site_ids) AS l
        ON l.site_id = e.site_id AND l.visitor_id = e.visitor_id
),
-- Sessions with a search event, or with a product click or view that carries a query: that is a search
-- click wherever it is (the search may have been another session's, or never tracked).
search_sessions AS (
    SELECT DISTINCT site_id, session_id FROM scoped WHERE starts_with(name, 'search_') OR name LIKE 'popular_%'
        OR name = 'recent_search_click'
        OR (name IN ('product_click', 'product_view') AND product_item_code IS NOT NULL AND query IS NOT NULL)
),
steps AS (
    SELECT s.* FROM scoped AS s
    SEMI JOIN search_sessions AS k ON k.site_id = s.site_id AND k.session_id = s.session_id
),
sequenced AS (
    SELECT *,
        lag(name) OVER session AS previous_name,
        last_value(query IGNORE NULLS) OVER (session ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            AS session_query
    FROM steps
    WINDOW session AS (PARTITION BY site_id, person_id, session_id ORDER BY ts, event_id)
),
final AS (
    SELECT site_id, person_id, session_id, ts, date, name, product_item_code, result_count, query, session_query,
        name IN ('product_click', 'product_view', 'popular_product_click') AND product_item_code IS NOT NULL
            AND (query IS NOT NULL OR name = 'popular_product_click' OR list_contains($search_steps, previous_name))
            AS is_click
    FROM sequenced
)
SELECT site_id, person_id, session_id, ts, name, product_item_code, result_count, is_click,
    CASE WHEN is_click THEN coalesce(query, session_query) ELSE query END AS query
FROM final
WHERE date >= $start_date AND (is_click OR starts_with(name, 'search_')
    OR name IN ('recent_search_click', 'popular_search_click', 'popular_category_click', 'popular_product_click'))
