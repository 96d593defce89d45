-- One page of `journey_summary`, newest first, optionally only (not) converted journeys.
SELECT journey_key, person_id, visitor_id, started_at, ended_at, duration_seconds, event_count,
    converted, entry_url, exit_url, revenue
FROM journey_summary
WHERE $converted IS NULL OR converted = $converted
ORDER BY started_at DESC, journey_key
LIMIT $limit OFFSET $offset
