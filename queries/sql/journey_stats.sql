-- Totals over `journey_summary`: journeys, converted ones, entries, durations, distinct people.
SELECT count(*) AS journeys,
    count(*) FILTER (WHERE converted) AS converted,
    coalesce(sum(event_count), 0) AS events,
    coalesce(sum(duration_seconds), 0) AS duration_seconds,
    median(duration_seconds) AS median_duration_seconds,
    count(DISTINCT person_id) AS people
FROM journey_summary
