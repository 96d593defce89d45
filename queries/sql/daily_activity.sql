-- Events and people per day of the range.
SELECT date, count(*) AS events, count(DISTINCT (site_id, person_id)) AS people
FROM events_people_in($site_ids)
WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date
GROUP BY date
ORDER BY date
