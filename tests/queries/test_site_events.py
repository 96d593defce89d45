"""Site event analytics on tiny hand-built shops: exact numbers."""

from __future__ import annotations

from datetime import date

from queries.overview import Scope
from queries.site_events import events_page, timeseries
from tests.queries.helpers import SITE, journeys_for

SCOPE = Scope((SITE,), date(2024, 3, 1), date(2024, 3, 1))


def test_a_page_past_the_last_event_still_counts_every_match(lake):
    ingest, engine = lake
    journeys_for(ingest, {"ann": [{"event": "page_view", "at": f"2024-03-01T10:0{m}:00Z"} for m in range(3)]})
    last = events_page(engine, SITE, SCOPE, limit=2, offset=2)
    assert (last["total"], len(last["events"])) == (3, 1)
    past = events_page(engine, SITE, SCOPE, limit=2, offset=4)
    assert (past["total"], past["events"]) == (3, [])
    assert events_page(engine, SITE, SCOPE, limit=2, offset=0, name="scroll")["total"] == 0


def test_an_offset_change_of_half_an_hour_starts_an_hour_bucket_of_its_own(lake):
    """Lord Howe Island leaves summer time (+11:00) at 02:00 on 7 April 2024 for 01:30 (+10:30): the
    half hour from 01:30 again is a bucket of its own, and the hours after it start on the hour."""
    ingest, engine = lake
    journeys_for(ingest, {"ann": [
        {"event": "page_view", "at": "2024-04-06T14:45:00Z"},  # 01:45+11:00
        {"event": "page_view", "at": "2024-04-06T15:15:00Z"},  # 01:45+10:30
        {"event": "page_view", "at": "2024-04-06T16:00:00Z"},  # 02:30+10:30
    ]})  # fmt: skip
    day = date(2024, 4, 7)
    series = timeseries(
        engine, SITE, start=day, end=day, timezone="Australia/Lord_Howe", interval="hour", name=None
    )
    assert len(series) == 25
    assert series[:4] == [
        {"bucket": "2024-04-07T00:00:00+11:00", "events": 0, "people": 0},
        {"bucket": "2024-04-07T01:00:00+11:00", "events": 1, "people": 1},
        {"bucket": "2024-04-07T01:30:00+10:30", "events": 1, "people": 1},
        {"bucket": "2024-04-07T02:00:00+10:30", "events": 1, "people": 1},
    ]
    assert series[-1]["bucket"] == "2024-04-07T23:00:00+10:30"
