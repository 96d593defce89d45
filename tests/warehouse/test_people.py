"""People: a visitor counts as the user it was ever linked to, before or after its events."""

from __future__ import annotations

from datetime import UTC, datetime

from ingest.service import Ingest
from ingest.validation import Context

SITE = "44444444-4444-4444-4444-444444444444"


def journeys_for(ingest: Ingest, people: dict[str, list[dict]]) -> None:
    ctx = Context(
        site_id=SITE, site_currency="EUR", received_at=datetime.now(UTC), channel="server", historical=True
    )
    events = []
    for visitor, steps in people.items():
        for number, step in enumerate(steps):
            events.append({"visitorId": visitor, "sessionId": f"{visitor}-s", "eventId": f"{visitor}-{number}",
                           "timestamp": f"2024-01-0{number + 1}T10:00:00Z", **step})  # fmt: skip
    result = ingest.accept_events_sync(events, ctx)
    assert result.rejected == []
    ingest.flush()


def test_a_visitor_linked_later_counts_as_the_user_from_its_first_event(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "phone": [{"name": "page_view"}, {"name": "identify", "userId": "ada"}],
        "laptop": [{"name": "page_view", "userId": "ada"}],
        "stranger": [{"name": "page_view"}, {"name": "scroll"}],
    })  # fmt: skip
    rows = (
        engine.cursor()
        .execute("SELECT visitor_id, name, person_id FROM events_people ORDER BY visitor_id, ts")
        .fetchall()
    )
    assert rows == [
        ("laptop", "page_view", "ada"),
        ("phone", "page_view", "ada"),
        ("phone", "identify", "ada"),
        ("stranger", "page_view", "stranger"),
        ("stranger", "scroll", "stranger"),
    ]
    people = engine.cursor().execute("SELECT count(DISTINCT person_id) FROM events_people").fetchall()
    assert people == [(2,)]


def test_people_views_work_on_an_empty_lake(lake):
    _, engine = lake
    assert engine.cursor().execute("SELECT count(*) FROM events_people").fetchall() == [(0,)]
    assert engine.cursor().execute("SELECT count(*) FROM orders_people").fetchall() == [(0,)]


def test_a_shared_device_counts_as_its_first_user_even_for_a_second_login(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "kiosk": [{"name": "page_view"}, {"name": "identify", "userId": "ada"},
                  {"name": "page_view", "userId": "bob"}, {"name": "scroll"}],
        "bobs-phone": [{"name": "page_view", "userId": "bob"}],
    })  # fmt: skip
    rows = (
        engine.cursor()
        .execute("SELECT visitor_id, name, person_id FROM events_people ORDER BY ts, visitor_id")
        .fetchall()
    )
    assert rows == [
        ("bobs-phone", "page_view", "bob"), ("kiosk", "page_view", "ada"), ("kiosk", "identify", "ada"),
        ("kiosk", "page_view", "ada"), ("kiosk", "scroll", "ada"),
    ]  # fmt: skip


def test_a_blank_user_id_links_no_one(lake):
    # A client sending userId " " for its anonymous visitors: they stay two people, not one " ".
    ingest, engine = lake
    journeys_for(ingest, {
        "a": [{"name": "page_view", "userId": " "}],
        "b": [{"name": "page_view", "userId": ""}, {"name": "scroll", "userId": "  "}],
    })  # fmt: skip
    rows = (
        engine.cursor()
        .execute("SELECT DISTINCT visitor_id, person_id FROM events_people ORDER BY 1")
        .fetchall()
    )
    assert rows == [("a", "a"), ("b", "b")]


def test_two_users_linked_at_one_instant_the_smaller_id_wins_whatever_the_storage_order(lake):
    # The first link decides; at a tie, the stored order decided, and compaction reorders rows.
    ingest, engine = lake
    ctx = Context(
        site_id=SITE, site_currency="EUR", received_at=datetime.now(UTC), channel="server", historical=True
    )
    for first, second in (("zed", "ada"), ("ada", "zed")):
        for user in (first, second):  # one flush file each, so each visitor's two links lie apart
            events = [{"name": "identify", "visitorId": f"{first}-first-{n}", "sessionId": "s",
                       "eventId": f"{first}-{n}-{user}", "userId": user, "timestamp": "2024-01-01T10:00:00Z"}
                      for n in range(40)]  # fmt: skip
            assert ingest.accept_events_sync(events, ctx).rejected == []
            ingest.flush()
    people = engine.cursor().execute("SELECT DISTINCT person_id FROM events_people").fetchall()
    assert people == [("ada",)]
