"""Site event analytics on tiny hand-built shops: exact numbers."""

from __future__ import annotations

from datetime import date

from queries.overview import Scope
from queries.site_events import events_page
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
