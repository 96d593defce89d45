"""Properties: consent stats and the consent-gate simulation equal a plain-Python reading of their
definitions on random consent records and events (ties at the same instant, partial states, user
links, a time zone whose days are not UTC days)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.consent import CATEGORIES
from ingest.service import Ingest
from ingest.validation import Context
from queries.consent import ConsentRange, consent_stats, simulate_consent
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

START = date(2024, 3, 10)
END = date(2024, 3, 11)
BASE = datetime(2024, 3, 10, tzinfo=UTC)
VISITORS = [f"p{i}" for i in range(5)]


def user_of(visitor: str) -> str:
    return f"u{int(visitor[1:]) // 2}"  # p0 and p1 are one user on two devices, and so on


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("consent") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    yield ingest, engine
    engine.close()
    ingest.stop()


state = st.fixed_dictionaries({c: st.one_of(st.none(), st.booleans()) for c in CATEGORIES})
observation = st.fixed_dictionaries({
    "kind": st.sampled_from(["record", "event"]),
    "visitor": st.sampled_from(VISITORS),
    # Minutes from 2024-03-10T00:00Z: some before the range, many at the same instant, some after it.
    "minute": st.sampled_from([-600, -1, 0, 0, 1, 2, 5, 300, 1500, 2000, 2879, 2880, 3100]),
    "state": state,
    "with_user": st.booleans(),
})  # fmt: skip


def stored(obs: list[dict]) -> list[dict]:
    """The observations the lake keeps: every event; records that state something."""
    kept = []
    for index, item in enumerate(obs):
        stated = any(v is not None for v in item["state"].values())
        if item["kind"] == "record" and not stated:
            continue
        kept.append({**item, "id": f"{item['kind'][0]}{index:03d}", "ts": BASE + timedelta(minutes=item["minute"]),
                     "rank": 1 if item["kind"] == "record" else 0, "stated": stated})  # fmt: skip
    return kept


def write(ingest: Ingest, site_id: str, obs: list[dict]) -> None:
    ctx = Context(site_id=site_id, site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                  historical=True)  # fmt: skip
    events = []
    for item in obs:
        at = item["ts"].isoformat()
        user = {"userId": user_of(item["visitor"])} if item["with_user"] else {}
        if item["kind"] == "event":
            consent = {c: v for c, v in item["state"].items() if v is not None}
            events.append({"name": "page_view", "eventId": item["id"], "visitorId": item["visitor"], "sessionId": "s",
                           "timestamp": at, **({"consent": consent} if consent else {}), **user})  # fmt: skip
        else:
            raw = {"consentId": item["id"], "visitorId": item["visitor"], "timestamp": at,
                   "categories": item["state"], **user}  # fmt: skip
            asyncio.run(ingest.accept_consent(raw, ctx))
    if events:
        assert ingest.accept_events_sync(events, ctx).rejected == []
    ingest.flush()


def person_of(item: dict, linked: set[str]) -> str:
    """The record's or event's own user, else the user its visitor was ever linked to (on an event),
    else the visitor."""
    if item["with_user"] or item["visitor"] in linked:
        return user_of(item["visitor"])
    return item["visitor"]


def local_range(timezone: str) -> tuple[datetime, datetime]:
    zone = ZoneInfo(timezone)
    return (datetime.combine(START, datetime.min.time(), zone),
            datetime.combine(END + timedelta(days=1), datetime.min.time(), zone))  # fmt: skip


def opt_in_figures(latest: dict[str, dict[str, bool]]) -> dict[str, tuple]:
    """Per category, from each person's latest values: (granted, denied, opt-in rate)."""
    figures = {}
    for category in CATEGORIES:
        granted = sum(1 for p in latest.values() if p.get(category) is True)
        denied = sum(1 for p in latest.values() if p.get(category) is False)
        figures[category] = (
            granted,
            denied,
            round(granted / (granted + denied), 6) if granted + denied else 0.0,
        )
    return figures


def reference_stats(obs: list[dict], timezone: str) -> dict:
    start, end = local_range(timezone)
    linked = {o["visitor"] for o in obs if o["kind"] == "event" and o["with_user"]}
    seen = [o for o in obs if o["stated"] and start <= o["ts"] < end]
    latest: dict[str, dict[str, tuple]] = {}
    for item in sorted(seen, key=lambda o: (o["ts"], o["rank"], o["id"])):
        person = latest.setdefault(person_of(item, linked), {})
        for category, value in item["state"].items():
            if value is not None:
                person[category] = value
    rates = opt_in_figures(latest)
    decided = [p for p in latest.values() if all(c in p for c in ("analytics", "marketing", "preferences"))]
    accept = sum(1 for p in decided if all(p[c] for c in ("analytics", "marketing", "preferences")))
    reject = sum(1 for p in decided if not any(p[c] for c in ("analytics", "marketing", "preferences")))
    return {
        "people": len(latest),
        "records": sum(1 for o in seen if o["kind"] == "record"),
        "events": sum(1 for o in seen if o["kind"] == "event"),
        "rates": rates,
        "choices": (len(decided), accept, reject),
    }


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obs=st.lists(observation, max_size=14), timezone=st.sampled_from(["UTC", "America/New_York"]))
def test_stats_opt_in_rates_match_the_reference(lake, obs, timezone):
    ingest, engine = lake
    site_id = str(uuid.uuid4())
    kept = stored(obs)
    write(ingest, site_id, kept)
    stats = consent_stats(
        engine, ConsentRange(site_id=site_id, start_date=START, end_date=END, timezone=timezone)
    )
    expected = reference_stats(kept, timezone)
    assert (stats.people, stats.consent_records, stats.events_with_consent) == (
        expected["people"], expected["records"], expected["events"])  # fmt: skip
    assert {c.category: (c.granted, c.denied, c.opt_in_rate) for c in stats.categories} == expected["rates"]
    assert all(c.unstated == stats.people - c.decided for c in stats.categories)
    assert (stats.choices.decided, stats.choices.accept_all, stats.choices.reject_all) == expected["choices"]


def reference_simulation(obs: list[dict], timezone: str, required: list[str], timeout: timedelta) -> tuple:
    start, end = local_range(timezone)
    linked = {o["visitor"] for o in obs if o["kind"] == "event" and o["with_user"]}
    wait_end = end + timeout
    # Records of any date up to the end of the last wait; events from the range start on.
    visible = [o for o in obs if o["ts"] <= wait_end and (o["kind"] == "record" or o["ts"] >= start)]
    by_person: dict[str, list[dict]] = {}
    for item in sorted(visible, key=lambda o: (o["ts"], o["rank"], o["id"])):
        by_person.setdefault(person_of(item, linked), []).append(item)

    def state_at(person: str, moment: datetime) -> dict[str, bool]:
        known: dict[str, bool] = {}
        for item in by_person.get(person, []):
            if item["ts"] > moment:
                break
            known.update({c: v for c, v in item["state"].items() if v is not None})
        return known

    def is_open(known: dict[str, bool]) -> bool:
        return all(known.get(c) is True for c in required)

    sent = delayed = dropped = refused = 0
    for item in obs:
        if item["kind"] != "event" or not start <= item["ts"] < end:
            continue
        person = person_of(item, linked)
        if is_open(state_at(person, item["ts"])):
            sent += 1
            continue
        later = [o["ts"] for o in by_person[person] if item["ts"] < o["ts"] <= item["ts"] + timeout]
        if any(is_open(state_at(person, moment)) for moment in later):
            delayed += 1
            continue
        dropped += 1
        if any(state_at(person, item["ts"] + timeout).get(c) is False for c in required):
            refused += 1
    return sent, delayed, dropped, refused


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    obs=st.lists(observation, max_size=14),
    timezone=st.sampled_from(["UTC", "America/New_York"]),
    required=st.lists(st.sampled_from(CATEGORIES), max_size=2, unique=True),
    timeout_minutes=st.sampled_from([0, 1, 5, 400]),
)
def test_simulation_matches_the_reference(lake, obs, timezone, required, timeout_minutes):
    ingest, engine = lake
    site_id = str(uuid.uuid4())
    kept = stored(obs)
    write(ingest, site_id, kept)
    query = ConsentRange(site_id=site_id, start_date=START, end_date=END, timezone=timezone)
    result = simulate_consent(
        engine, query, granular=True, required=required, timeout_ms=timeout_minutes * 60_000
    )
    expected = reference_simulation(kept, timezone, required, timedelta(minutes=timeout_minutes))
    assert (result.sent, result.delayed, result.dropped, result.dropped_refused) == expected
    assert result.total_events == sum(expected[:3])
