-- Per-session shape for one site: sessions, single-event sessions (bounces), durations.
WITH sessions AS (
    SELECT session_id, count(*) AS events, epoch(max(ts)) - epoch(min(ts)) AS seconds
    FROM events
    WHERE site_id = $site_id AND date BETWEEN $start_date AND $end_date
    GROUP BY session_id
)
SELECT count(*) AS sessions,
    count(*) FILTER (WHERE events = 1) AS bounces,
    coalesce(avg(seconds), 0) AS avg_seconds,
    coalesce(avg(events), 0) AS avg_events
FROM sessions
