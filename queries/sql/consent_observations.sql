-- Every consent stated in the range, one row per observation, into the cursor's temporary table
-- `consent_observations`: the site's consent records (kind `record`) and its events that carry at
-- least one consent field (kind `event`), with the person each counts for (a record's own userId,
-- else the user its visitor was linked to, else the visitor). A category an observation does not
-- state is null. `rank` orders observations of the same microsecond: a record (1) after an event (0),
-- so an explicit decision wins; then `id`.
CREATE OR REPLACE TEMP TABLE consent_observations AS
WITH records AS (
    SELECT 'record' AS kind, 1 AS rank, c.consent_id AS id, c.ts,
        person_of(l.user_id, c.user_id, c.visitor_id) AS person_id,
        c.visitor_id, c.session_id, c.user_id, c.source, c.channel,
        c.consent_necessary AS necessary, c.consent_analytics AS analytics,
        c.consent_marketing AS marketing, c.consent_preferences AS preferences
    FROM consents AS c
    LEFT JOIN visitor_users_in([$site_id]) AS l ON l.site_id = c.site_id AND l.visitor_id = c.visitor_id
    WHERE c.site_id = $site_id AND c.date BETWEEN $scan_start AND $scan_end
        AND c.ts >= $range_start AND c.ts < $range_end
),
stated_events AS (
    SELECT 'event' AS kind, 0 AS rank, event_id AS id, ts, person_id,
        visitor_id, session_id, user_id, name AS source, channel,
        consent_necessary AS necessary, consent_analytics AS analytics,
        consent_marketing AS marketing, consent_preferences AS preferences
    FROM events_people_in([$site_id])
    WHERE site_id = $site_id AND date BETWEEN $scan_start AND $scan_end
        AND ts >= $range_start AND ts < $range_end
        AND (consent_necessary IS NOT NULL OR consent_analytics IS NOT NULL
            OR consent_marketing IS NOT NULL OR consent_preferences IS NOT NULL)
)
SELECT * FROM records
UNION ALL
SELECT * FROM stated_events
