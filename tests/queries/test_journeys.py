"""Journeys: exact numbers on tiny hand-built journeys (conversion by order, once; revenue per currency;
session fallback; date ranges in the site time zone; paging; sequences)."""

from __future__ import annotations

from datetime import date

from queries.journeys import (
    JourneyRange,
    get_journey,
    iter_journeys,
    journey_funnel,
    journey_sequences,
    journey_stats,
    list_journeys,
    sequence_insights,
)
from tests.queries.helpers import SITE, journeys_for

DAY = date(2024, 1, 10)


def at(hour: int, minute: int = 0, second: int = 0, day: int = 10) -> str:
    return f"2024-01-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def day_range(start: date = DAY, end: date = DAY, timezone: str = "UTC") -> JourneyRange:
    return JourneyRange(site_id=SITE, start_date=start, end_date=end, timezone=timezone)


def listed(engine, query: JourneyRange | None = None, **kwargs) -> list[dict]:
    page = list_journeys(engine, query or day_range(), limit=kwargs.pop("limit", 50),
                         offset=kwargs.pop("offset", 0), **kwargs)  # fmt: skip
    return page.model_dump(by_alias=True, mode="json")["journeys"]


def shop(ingest) -> None:
    """ann buys in journey j-ann (order o-1, plus a purchase event for it); bob pays in two currencies;
    cat browses without a journey id (her session is her journey) and does not buy."""
    journeys_for(ingest, {
        "ann": [
            {"event": "page_view", "at": at(10), "journeyId": "j-ann", "url": "/home"},
            {"event": "product_view", "at": at(10, 1), "journeyId": "j-ann", "url": "/p/1"},
            {"event": "add_to_cart", "at": at(10, 2), "journeyId": "j-ann", "url": "/p/1"},
            {"event": "checkout_begin", "at": at(10, 3), "journeyId": "j-ann", "url": "/checkout"},
            {"order": "o-1", "at": at(10, 5), "journeyId": "j-ann", "total": "30.50"},
            {"event": "purchase", "at": at(10, 5), "journeyId": "j-ann", "url": "/thanks",
             "metadata": {"orderId": "o-1"}},
        ],
        "bob": [
            {"event": "page_view", "at": at(11), "journeyId": "j-bob", "url": "/sale"},
            {"order": "o-2", "at": at(11, 10), "journeyId": "j-bob", "total": "20", "currency": "USD"},
            {"order": "o-3", "at": at(11, 20), "journeyId": "j-bob", "total": "5", "currency": "EUR"},
        ],
        "cat": [
            {"event": "page_view", "at": at(12), "sessionId": "s-cat", "url": "/home"},
            {"event": "product_view", "at": at(12, 0, 30), "sessionId": "s-cat", "url": "/p/2"},
        ],
    })  # fmt: skip


def test_journeys_list_conversion_revenue_and_pages(lake):
    ingest, engine = lake
    shop(ingest)
    assert listed(engine) == [
        {"journeyId": "s-cat", "personId": "cat", "visitorId": "cat", "startedAt": "2024-01-10T12:00:00Z",
         "endedAt": "2024-01-10T12:00:30Z", "durationSeconds": 30.0, "eventCount": 2, "converted": False,
         "entryUrl": "/home", "exitUrl": "/p/2", "revenue": []},
        {"journeyId": "j-bob", "personId": "bob", "visitorId": "bob", "startedAt": "2024-01-10T11:00:00Z",
         "endedAt": "2024-01-10T11:20:00Z", "durationSeconds": 1200.0, "eventCount": 3, "converted": True,
         "entryUrl": "/sale", "exitUrl": "/sale",
         "revenue": [{"currency": "EUR", "amount": "5.00"}, {"currency": "USD", "amount": "20.00"}]},
        # The purchase event names o-1, so o-1 is one purchase (with the event's page), not two.
        {"journeyId": "j-ann", "personId": "ann", "visitorId": "ann", "startedAt": "2024-01-10T10:00:00Z",
         "endedAt": "2024-01-10T10:05:00Z", "durationSeconds": 300.0, "eventCount": 5, "converted": True,
         "entryUrl": "/home", "exitUrl": "/thanks", "revenue": [{"currency": "EUR", "amount": "30.50"}]},
    ]  # fmt: skip


def test_stats_count_journeys_people_and_revenue_per_currency(lake):
    ingest, engine = lake
    shop(ingest)
    stats = journey_stats(engine, day_range()).model_dump(by_alias=True)
    assert stats == {
        "totalJourneys": 3,
        "convertedJourneys": 2,
        "conversionRate": 0.666667,
        "avgEventsPerJourney": 3.333,
        "avgDurationSeconds": 510.0,
        "medianDurationSeconds": 300.0,
        "uniquePeople": 3,
        "revenueByCurrency": [
            {"currency": "EUR", "revenue": "35.50", "orders": 2},
            {"currency": "USD", "revenue": "20.00", "orders": 1},
        ],
        "mixedCurrency": True,
    }


def test_funnel_counts_journeys_containing_each_stage(lake):
    ingest, engine = lake
    shop(ingest)
    funnel = journey_funnel(engine, day_range()).model_dump(by_alias=True)
    assert funnel == {
        "totalJourneys": 3,
        "stages": [
            {"eventName": "page_view", "count": 3, "rate": 1.0},
            {"eventName": "product_view", "count": 2, "rate": 0.666667},
            {"eventName": "add_to_cart", "count": 1, "rate": 0.333333},
            {"eventName": "checkout_begin", "count": 1, "rate": 0.333333},
            {"eventName": "purchase", "count": 2, "rate": 0.666667},
        ],
    }


def test_a_purchase_event_without_an_order_converts_without_revenue(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10), "journeyId": "j1"},
                {"event": "purchase", "at": at(10, 1), "journeyId": "j1", "metadata": {"orderId": "never-sent"}}],
    })  # fmt: skip
    [journey] = listed(engine)
    assert (journey["eventCount"], journey["converted"], journey["revenue"]) == (2, True, [])


def test_refunds_neither_convert_nor_count_as_revenue(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10), "journeyId": "j1"},
                {"order": "r-1", "at": at(10, 1), "journeyId": "j1", "total": "-10", "isRefund": True}],
    })  # fmt: skip
    [journey] = listed(engine)
    assert (journey["eventCount"], journey["converted"], journey["revenue"]) == (1, False, [])


def test_orders_without_a_journey_id_join_the_journey_of_their_session(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        # Events without a journey id: the session is the journey, and the order joins it.
        "cat": [{"event": "page_view", "at": at(10), "sessionId": "s-cat"},
                {"order": "o-cat", "at": at(10, 2), "sessionId": "s-cat"}],
        # Events with a journey id, the order without one: the order joins the journey its session was in.
        "dan": [{"event": "page_view", "at": at(11), "sessionId": "s-dan", "journeyId": "j-dan"},
                {"order": "o-dan", "at": at(11, 2), "sessionId": "s-dan", "total": "7"}],
        # Same session id as cat, another visitor: its own journey only through a journey id.
        "eve": [{"event": "page_view", "at": at(12), "sessionId": "s-eve", "journeyId": "j-eve"}],
        # The order names a journey no event is in: it joins the journey its session was in.
        "fay": [{"event": "page_view", "at": at(13), "sessionId": "s-fay", "journeyId": "j-fay"},
                {"order": "o-fay", "at": at(13, 2), "sessionId": "s-fay", "journeyId": "j-nowhere", "total": "3"}],
    })  # fmt: skip
    journeys = {j["journeyId"]: j for j in listed(engine)}
    assert set(journeys) == {"s-cat", "j-dan", "j-eve", "j-fay"}
    assert journeys["j-fay"]["revenue"] == [{"currency": "EUR", "amount": "3.00"}]
    assert journeys["s-cat"]["converted"] and journeys["s-cat"]["eventCount"] == 2
    assert journeys["s-cat"]["revenue"] == [{"currency": "EUR", "amount": "10.00"}]
    assert journeys["j-dan"]["revenue"] == [{"currency": "EUR", "amount": "7.00"}]
    assert not journeys["j-eve"]["converted"]


def test_an_order_no_event_places_is_a_converted_journey_of_its_own(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        # Checkouts tracked only server-side: keyed by the order's journey id, else its session.
        "gus": [{"order": "o-gus", "at": at(15), "sessionId": "s-gus", "total": "40"}],
        "hal": [{"order": "o-hal", "at": at(16), "sessionId": "s-hal", "journeyId": "j-hal", "total": "50"}],
    })  # fmt: skip
    journeys = {j["journeyId"]: j for j in listed(engine)}
    assert {k: (j["converted"], j["eventCount"], j["revenue"]) for k, j in journeys.items()} == {
        "s-gus": (True, 1, [{"currency": "EUR", "amount": "40.00"}]),
        "j-hal": (True, 1, [{"currency": "EUR", "amount": "50.00"}]),
    }
    stats = journey_stats(engine, day_range()).model_dump(by_alias=True, mode="json")
    assert (stats["totalJourneys"], stats["convertedJourneys"], stats["uniquePeople"]) == (2, 2, 2)
    one = get_journey(engine, site_id=SITE, journey_id="j-hal").model_dump(by_alias=True, mode="json")
    assert ([e["name"] for e in one["events"]], [o["orderId"] for o in one["orders"]]) == ([], ["o-hal"])


def test_a_journey_that_starts_with_its_order_belongs_to_the_order_s_day(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ida": [{"order": "o-ida", "at": at(23, 59, day=9), "journeyId": "j-ida", "total": "5"},
                {"event": "page_view", "at": at(0, 2), "journeyId": "j-ida"}],
    })  # fmt: skip
    assert listed(engine) == []
    (journey,) = listed(engine, day_range(date(2024, 1, 9), date(2024, 1, 9)))
    assert (journey["journeyId"], journey["startedAt"], journey["eventCount"]) == (
        "j-ida",
        "2024-01-09T23:59:00Z",
        2,
    )


def test_a_purchase_event_naming_another_persons_order_does_not_move_that_order(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        # ann's order carries no journey id: it joins the journey its session was in.
        "ann": [{"event": "page_view", "at": at(10), "sessionId": "s-ann", "journeyId": "j-ann"},
                {"order": "o-1", "at": at(10, 2), "sessionId": "s-ann", "total": "30"}],
        # bob opens a forwarded thank-you page: a purchase event naming ann's order, earlier than ann's.
        "bob": [{"event": "page_view", "at": at(9), "sessionId": "s-bob", "journeyId": "j-bob"},
                {"event": "purchase", "at": at(9, 1), "sessionId": "s-bob", "journeyId": "j-bob",
                 "metadata": {"orderId": "o-1"}}],
    })  # fmt: skip
    journeys = {j["journeyId"]: j for j in listed(engine)}
    assert journeys["j-ann"]["converted"] and journeys["j-ann"]["revenue"] == [
        {"currency": "EUR", "amount": "30.00"}
    ]
    assert journeys["j-bob"]["revenue"] == [] and journeys["j-bob"]["visitorId"] == "bob"
    assert journeys["j-bob"]["startedAt"] == "2024-01-10T09:00:00Z"
    ann = get_journey(engine, site_id=SITE, journey_id="j-ann").model_dump(by_alias=True, mode="json")
    assert [o["orderId"] for o in ann["orders"]] == ["o-1"]
    bob = get_journey(engine, site_id=SITE, journey_id="j-bob").model_dump(by_alias=True, mode="json")
    assert bob["orders"] == []


def test_a_sale_takes_the_journey_and_page_of_its_first_purchase_event(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        # Three purchase events name o-1: two at its instant (e1 is first by id though sent second), one
        # a later reload. e1 has no page, so neither has the sale.
        "ann": [{"event": "purchase", "at": at(10), "eventId": "e2", "journeyId": "j-b", "url": "/b",
                 "metadata": {"orderId": "o-1"}},
                {"event": "purchase", "at": at(10), "eventId": "e1", "journeyId": "j-a",
                 "metadata": {"orderId": "o-1"}},
                {"event": "purchase", "at": at(10, 5), "eventId": "e3", "journeyId": "j-c", "url": "/thanks",
                 "metadata": {"orderId": "o-1"}},
                {"order": "o-1", "at": at(10)}],
    })  # fmt: skip
    journeys = [
        (j["journeyId"], j["eventCount"], j["converted"], j["entryUrl"], j["exitUrl"]) for j in listed(engine)
    ]
    assert journeys == [("j-a", 1, True, None, None)]


def test_ties_in_a_session_are_broken_by_event_id(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [
            # o-1 at the instant of two events: it joins the latest, e2 (one instant is ordered by id).
            {"event": "page_view", "at": at(10), "eventId": "e1", "sessionId": "s1", "journeyId": "j-a"},
            {"event": "page_view", "at": at(10), "eventId": "e2", "sessionId": "s1", "journeyId": "j-b"},
            {"order": "o-1", "at": at(10), "sessionId": "s1"},
            # o-2 before every event of its session: it joins the first, e3 (though sent second).
            {"event": "page_view", "at": at(12), "eventId": "e4", "sessionId": "s2", "journeyId": "j-d"},
            {"event": "page_view", "at": at(12), "eventId": "e3", "sessionId": "s2", "journeyId": "j-c"},
            {"order": "o-2", "at": at(11), "sessionId": "s2"},
        ],
    })  # fmt: skip
    assert {j["journeyId"]: (j["eventCount"], j["converted"], j["startedAt"]) for j in listed(engine)} == {
        "j-a": (1, False, "2024-01-10T10:00:00Z"),
        "j-b": (2, True, "2024-01-10T10:00:00Z"),
        "j-c": (2, True, "2024-01-10T11:00:00Z"),
        "j-d": (1, False, "2024-01-10T12:00:00Z"),
    }


def test_a_purchase_event_counted_as_its_sale_does_not_start_a_journey(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(20, day=9), "journeyId": "j-ann"},
                {"order": "o-1", "at": at(21, day=9), "journeyId": "j-ann"}],
        # bob opens ann's forwarded thank-you page late on the 9th, then browses on the 10th: his journey
        # starts with that page view, on the 10th. cy only opens the forwarded page: no journey at all.
        "bob": [{"event": "purchase", "at": at(23, day=9), "sessionId": "s-bob", "metadata": {"orderId": "o-1"}},
                {"event": "page_view", "at": at(9), "sessionId": "s-bob", "url": "/home"}],
        "cy": [{"event": "purchase", "at": at(9), "sessionId": "s-cy", "metadata": {"orderId": "o-1"}}],
    })  # fmt: skip
    assert [(j["journeyId"], j["startedAt"], j["eventCount"]) for j in listed(engine)] == [
        ("s-bob", "2024-01-10T09:00:00Z", 1)
    ]  # fmt: skip
    ninth = day_range(date(2024, 1, 9), date(2024, 1, 9))
    assert [j["journeyId"] for j in listed(engine, ninth)] == ["j-ann"]
    assert get_journey(engine, site_id=SITE, journey_id="s-cy") is None


def test_identified_visitors_are_their_user(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "phone": [{"event": "page_view", "at": at(10), "journeyId": "j1"},
                  {"event": "identify", "at": at(10, 5), "journeyId": "j1", "userId": "ada"}],
        "laptop": [{"event": "page_view", "at": at(11), "journeyId": "j2", "userId": "ada"}],
    })  # fmt: skip
    assert [(j["journeyId"], j["personId"], j["visitorId"]) for j in listed(engine)] == [
        ("j2", "ada", "laptop"), ("j1", "ada", "phone")
    ]  # fmt: skip
    assert journey_stats(engine, day_range()).unique_people == 1


def test_a_journey_belongs_to_the_day_it_started_with_all_its_events(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "early": [{"event": "page_view", "at": at(23, 50, day=9), "journeyId": "j-early"},
                  {"event": "product_view", "at": at(0, 10), "journeyId": "j-early"}],
        "late": [{"event": "page_view", "at": at(23, 59, 59), "journeyId": "j-late"},
                 {"event": "add_to_cart", "at": at(0, 5, day=11), "journeyId": "j-late"}],
    })  # fmt: skip
    assert [(j["journeyId"], j["eventCount"]) for j in listed(engine)] == [("j-late", 2)]
    previous = day_range(date(2024, 1, 9), date(2024, 1, 9))
    assert [(j["journeyId"], j["eventCount"]) for j in listed(engine, previous)] == [("j-early", 2)]
    both = day_range(date(2024, 1, 9), date(2024, 1, 11))
    assert [j["journeyId"] for j in listed(engine, both)] == ["j-late", "j-early"]
    # 23:50 UTC on the 9th is already the 10th in Berlin.
    berlin = day_range(timezone="Europe/Berlin")
    assert [j["journeyId"] for j in listed(engine, berlin)] == ["j-early"]


def test_paging_and_the_converted_filter(lake):
    ingest, engine = lake
    shop(ingest)
    page = list_journeys(engine, day_range(), limit=2, offset=0)
    assert (page.total, [j.journey_id for j in page.journeys]) == (3, ["s-cat", "j-bob"])
    page = list_journeys(engine, day_range(), limit=2, offset=2)
    assert (page.total, [j.journey_id for j in page.journeys]) == (3, ["j-ann"])
    page = list_journeys(engine, day_range(), limit=2, offset=10)
    assert (page.total, page.journeys) == (3, [])
    converted = list_journeys(engine, day_range(), limit=50, offset=0, converted=True)
    assert (converted.total, [j.journey_id for j in converted.journeys]) == (2, ["j-bob", "j-ann"])
    browsing = list_journeys(engine, day_range(), limit=50, offset=0, converted=False)
    assert (browsing.total, [j.journey_id for j in browsing.journeys]) == (1, ["s-cat"])


def test_the_export_iterator_gives_the_list_rows(lake):
    ingest, engine = lake
    shop(ingest)
    exported = list(iter_journeys(engine, day_range(), limit=2))
    assert exported == list_journeys(engine, day_range(), limit=2, offset=0).journeys


def test_one_journey_with_its_timeline_and_orders(lake):
    ingest, engine = lake
    shop(ingest)
    journey = get_journey(engine, site_id=SITE, journey_id="j-ann").model_dump(by_alias=True, mode="json")
    assert journey["eventCount"] == 5 and journey["converted"]
    assert [(e["name"], e["url"]) for e in journey["events"]] == [
        ("page_view", "/home"), ("product_view", "/p/1"), ("add_to_cart", "/p/1"),
        ("checkout_begin", "/checkout"), ("purchase", "/thanks"),
    ]  # fmt: skip
    assert journey["events"][1]["productItemCode"] == "P"
    assert journey["events"][1]["metadata"] == {"productItemCode": "P"}
    assert journey["events"][4]["metadata"] == {"orderId": "o-1"}
    assert journey["orders"] == [
        {"orderId": "o-1", "timestamp": "2024-01-10T10:05:00Z", "currency": "EUR", "total": "30.50", "itemCount": 1}
    ]  # fmt: skip
    assert get_journey(engine, site_id=SITE, journey_id="s-cat").event_count == 2
    assert get_journey(engine, site_id=SITE, journey_id="nope") is None
    assert get_journey(engine, site_id="66666666-6666-6666-6666-666666666666", journey_id="j-ann") is None


def sequences_shop(ingest) -> None:
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10), "journeyId": "j1"},
                {"event": "product_view", "at": at(10, 1), "journeyId": "j1"},
                {"event": "add_to_cart", "at": at(10, 2), "journeyId": "j1"}],
        "bob": [{"event": "page_view", "at": at(11), "journeyId": "j2"},
                {"event": "product_view", "at": at(11, 1), "journeyId": "j2"},
                {"event": "page_view", "at": at(11, 2), "journeyId": "j2"},
                {"event": "product_view", "at": at(11, 3), "journeyId": "j2"}],
        "cat": [{"event": "page_view", "at": at(12), "journeyId": "j3"},
                {"event": "add_to_cart", "at": at(12, 1), "journeyId": "j3"},
                {"order": "o-1", "at": at(12, 2), "journeyId": "j3"}],
    })  # fmt: skip


def test_sequence_insights_count_pairs_triples_and_next_events(lake):
    ingest, engine = lake
    sequences_shop(ingest)
    insights = sequence_insights(engine, day_range(), limit=10).model_dump(by_alias=True)
    assert insights["totalJourneys"] == 3
    assert [(p["sequence"], p["count"], p["journeys"], p["share"]) for p in insights["pairs"]] == [
        (["page_view", "product_view"], 3, 2, 0.666667),
        (["add_to_cart", "purchase"], 1, 1, 0.333333),
        (["page_view", "add_to_cart"], 1, 1, 0.333333),
        (["product_view", "add_to_cart"], 1, 1, 0.333333),
        (["product_view", "page_view"], 1, 1, 0.333333),
    ]  # fmt: skip
    assert [(t["sequence"], t["count"], t["journeys"]) for t in insights["triples"]] == [
        (["page_view", "add_to_cart", "purchase"], 1, 1),
        (["page_view", "product_view", "add_to_cart"], 1, 1),
        (["page_view", "product_view", "page_view"], 1, 1),
        (["product_view", "page_view", "product_view"], 1, 1),
    ]  # fmt: skip
    assert insights["nextEvents"] == [
        {"eventName": "add_to_cart", "nextEventName": "purchase", "count": 1, "transitions": 1, "share": 1.0},
        {"eventName": "page_view", "nextEventName": "product_view", "count": 3, "transitions": 4, "share": 0.75},
        {"eventName": "product_view", "nextEventName": "add_to_cart", "count": 1, "transitions": 2,
         "share": 0.5},
    ]  # fmt: skip
    top = sequence_insights(engine, day_range(), limit=1)
    assert [p.sequence for p in top.pairs] == [["page_view", "product_view"]]


def test_raw_sequences_are_paged_newest_first(lake):
    ingest, engine = lake
    sequences_shop(ingest)
    page = journey_sequences(engine, day_range(), limit=2, offset=0).model_dump(by_alias=True)
    assert page == {
        "total": 3, "limit": 2, "offset": 0,
        "journeys": [
            {"journeyId": "j3", "sequence": ["page_view", "add_to_cart", "purchase"]},
            {"journeyId": "j2", "sequence": ["page_view", "product_view", "page_view", "product_view"]},
        ],
    }  # fmt: skip
    rest = journey_sequences(engine, day_range(), limit=2, offset=2)
    assert [j.journey_id for j in rest.journeys] == ["j1"]


def test_an_empty_range_answers_zeros(lake):
    _, engine = lake
    stats = journey_stats(engine, day_range()).model_dump(by_alias=True)
    assert stats["totalJourneys"] == 0 and stats["conversionRate"] == 0.0
    assert stats["medianDurationSeconds"] == 0.0 and stats["revenueByCurrency"] == []
    assert list_journeys(engine, day_range(), limit=50, offset=0).total == 0
    assert [s.count for s in journey_funnel(engine, day_range()).stages] == [0, 0, 0, 0, 0]
    assert sequence_insights(engine, day_range(), limit=5).pairs == []
