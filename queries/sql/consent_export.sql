-- The observations of `consent_observations` in time order (a record after an event of the same
-- microsecond), of one kind or both ($kind: 'all', 'record', 'event'), at most $limit.
SELECT kind, id, ts, person_id, visitor_id, session_id, user_id, source, channel,
    necessary, analytics, marketing, preferences
FROM consent_observations
WHERE $kind = 'all' OR kind = $kind
ORDER BY ts, rank, id
LIMIT $limit
