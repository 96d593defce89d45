-- People with any consent observation in the range; of them, those whose latest values state all
-- three optional categories (analytics, marketing, preferences), and how many of those granted all
-- three or refused all three; and the consent records and consent-carrying events observed.
WITH latest AS (
    SELECT person_id, category, arg_max(granted, (ts, rank, id)) AS granted
    FROM consent_states
    GROUP BY person_id, category
),
choices AS (
    SELECT person_id,
        count(*) FILTER (WHERE category <> 'necessary') AS optional_stated,
        count(*) FILTER (WHERE category <> 'necessary' AND granted) AS optional_granted
    FROM latest
    GROUP BY person_id
)
SELECT
    count(*) AS people,
    count(*) FILTER (WHERE optional_stated = 3) AS decided,
    count(*) FILTER (WHERE optional_stated = 3 AND optional_granted = 3) AS accept_all,
    count(*) FILTER (WHERE optional_stated = 3 AND optional_granted = 0) AS reject_all,
    (SELECT count(*) FROM consent_observations WHERE kind = 'record') AS records,
    (SELECT count(*) FROM consent_observations WHERE kind = 'event') AS stated_events
FROM choices
