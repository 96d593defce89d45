-- `consent_observations` one row per stated category (unstated ones dropped), into the cursor's
-- temporary table `consent_states`: who, which category, granted or not, and the observation's
-- order key (ts, rank, id).
CREATE OR REPLACE TEMP TABLE consent_states AS
SELECT * FROM (
    UNPIVOT (
        SELECT kind, rank, id, ts, person_id, necessary, analytics, marketing, preferences
        FROM consent_observations
    )
    ON necessary, analytics, marketing, preferences
    INTO NAME category VALUE granted
)
