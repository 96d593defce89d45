-- Events by name: how many, and how many distinct people did them (per site: sites share no person).
SELECT name, count(*) AS events, count(DISTINCT (site_id, person_id)) AS people
FROM events_people_in($site_ids)
WHERE list_contains($site_ids, site_id) AND date BETWEEN $start_date AND $end_date
GROUP BY name
ORDER BY events DESC, name
