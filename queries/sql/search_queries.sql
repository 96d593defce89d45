-- Per site and query, over `search_steps`: searches, people, zero-result searches, the mean
-- resultCount of search_results, search clicks, last search; people and last time with no result. A zero-result search is a
-- search_zero_results event, or a search_results event with resultCount 0 unless its session reported
-- that query as a zero result too (a storefront that sends both reports one search). A search shows
-- as a search_query event and as an outcome (a zero-result search or another search_results event);
-- `searches` is the larger of the two counts, so a storefront that sends only one kind still counts
-- each search once. With $zero_only, only queries with zero-result searches, most of those first.
-- Totals over every row, also those past $limit.
WITH searched AS (
    SELECT * FROM search_steps WHERE query IS NOT NULL AND NOT is_click
),
zero_reports AS (
    SELECT site_id, session_id, query FROM searched WHERE name = 'search_zero_results'
),
zero_results AS (
    SELECT site_id, query, person_id, ts FROM searched WHERE name = 'search_zero_results'
    UNION ALL
    SELECT s.site_id, s.query, s.person_id, s.ts FROM searched AS s
    ANTI JOIN zero_reports AS z ON z.site_id = s.site_id AND z.session_id = s.session_id AND z.query = s.query
    WHERE s.name = 'search_results' AND s.result_count = 0
),
zero_per_query AS (
    SELECT site_id, query, count(*) AS zero_results, count(DISTINCT person_id) AS zero_people,
        max(ts) AS last_zero_at
    FROM zero_results
    GROUP BY site_id, query
),
per_query AS (
    SELECT site_id, query,
        count(*) FILTER (WHERE name = 'search_query') AS query_events,
        count(*) FILTER (WHERE name = 'search_results' AND result_count IS DISTINCT FROM 0) AS found_events,
        count(DISTINCT person_id) AS people,
        avg(result_count) FILTER (WHERE name = 'search_results') AS avg_result_count,
        max(ts) AS last_searched_at
    FROM searched
    WHERE name IN ('search_query', 'search_results', 'search_zero_results')
    GROUP BY site_id, query
),
clicks_per_query AS (
    SELECT site_id, query, count(*) AS clicks FROM search_steps WHERE is_click AND query IS NOT NULL GROUP BY ALL
),
final AS (
    SELECT q.site_id, q.query, q.people, q.avg_result_count, q.last_searched_at,
        greatest(q.query_events, q.found_events + coalesce(z.zero_results, 0)) AS searches,
        coalesce(z.zero_results, 0) AS zero_results, coalesce(z.zero_people, 0) AS zero_people,
        z.last_zero_at, coalesce(c.clicks, 0) AS clicks
    FROM per_query AS q
    LEFT JOIN zero_per_query AS z USING (site_id, query)
    LEFT JOIN clicks_per_query AS c USING (site_id, query)
    WHERE NOT $zero_only OR z.zero_results > 0
)
SELECT *, sum(searches) OVER () AS total_searches, sum(zero_results) OVER () AS total_zero_results,
    count(*) OVER () AS total_queries
FROM final
ORDER BY CASE WHEN $zero_only THEN zero_results ELSE searches END DESC, searches DESC, query, site_id
LIMIT $limit
