"""Search analytics: exact numbers on tiny hand-built search sessions (query normalisation, zero
results reported either way and once, clicks counted once per opened result)."""

from __future__ import annotations

from datetime import date

from queries.overview import Scope
from queries.search_analytics import top_products, top_queries, zero_result_queries
from tests.queries.helpers import SITE, journeys_for
from warehouse.config_store.product_identity import product_id_for

SCOPE = Scope((SITE,), date(2024, 3, 1), date(2024, 3, 1))


def step(clock: str, event: str, session: str, **metadata) -> dict:
    return {"event": event, "at": f"2024-03-01T{clock}Z", "sessionId": session, "metadata": metadata}


def searches(ingest) -> None:
    """ann opens the search box and clicks a popular product, searches "  Red  Mug", opens P1 from the
    results and then browses to P2; her search for "xyz" finds nothing. bob searches "red mug" and opens
    P1 (after identifying himself), clicks P2 from a "blue mug" suggestion, and gets an empty result list
    for "xyz". cy's storefront reports her "xyz" search both as zero results and as an empty list."""
    journeys_for(ingest, {
        "ann": [
            step("10:00:00", "search_instant_open", "s1"),
            step("10:00:01", "popular_product_click", "s1", productItemCode="P5"),
            step("10:00:02", "product_view", "s1", productItemCode="P5"),
            step("10:01:00", "search_query", "s1", query="  Red  Mug"),
            step("10:01:01", "page_view", "s1"),
            step("10:01:02", "search_results", "s1", query="red mug", resultCount=3),
            step("10:01:03", "product_click", "s1", productItemCode="P1"),
            step("10:01:04", "page_view", "s1"),
            step("10:01:05", "product_view", "s1", productItemCode="P1"),
            step("10:02:00", "product_view", "s1", productItemCode="P2"),
            step("10:03:00", "search_query", "s1", query="xyz"),
            step("10:03:01", "search_zero_results", "s1", query="xyz"),
        ],
        "bob": [
            step("11:00:00", "search_query", "s2", query="red mug"),
            step("11:00:01", "search_results", "s2", query="Red Mug", resultCount=5),
            {**step("11:00:02", "identify", "s2"), "userId": "bob@example.com"},
            step("11:00:03", "product_view", "s2", productItemCode="P1"),
            step("11:01:00", "product_click", "s2", productItemCode="P2", query="blue mug"),
            step("11:02:00", "search_results", "s2", q="xyz", resultCount=0),
        ],
        "cy": [
            step("12:00:00", "search_query", "s3", searchTerm="XYZ"),
            step("12:00:01", "search_zero_results", "s3", query="xyz"),
            step("12:00:02", "search_results", "s3", query="xyz", resultCount=0),
        ],
    })  # fmt: skip


def dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json")


def test_top_queries(lake):
    ingest, engine = lake
    searches(ingest)
    body = dump(top_queries(engine, SCOPE, limit=10))
    assert (body["totalSearches"], body["totalQueries"], body["zeroResultRate"]) == (5, 2, 0.6)
    assert body["queries"] == [
        {"siteId": SITE, "query": "xyz", "searches": 3, "people": 3, "zeroResultSearches": 3,
         "zeroResultRate": 1.0, "avgResultCount": 0.0, "clicks": 0, "clicksPerSearch": 0.0,
         "lastSearchedAt": "2024-03-01T12:00:02Z"},
        {"siteId": SITE, "query": "red mug", "searches": 2, "people": 2, "zeroResultSearches": 0,
         "zeroResultRate": 0.0, "avgResultCount": 4.0, "clicks": 2, "clicksPerSearch": 1.0,
         "lastSearchedAt": "2024-03-01T11:00:01Z"},
    ]  # fmt: skip
    limited = dump(top_queries(engine, SCOPE, limit=1))
    assert (len(limited["queries"]), limited["totalSearches"], limited["totalQueries"]) == (1, 5, 2)


def test_a_negative_result_count_is_no_count(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "dee": [step("10:00:00", "search_query", "s1", query="mug"),
                step("10:00:01", "search_results", "s1", query="mug", resultCount=3),
                step("10:01:00", "search_results", "s1", query="mug", resultCount=-1)],
    })  # fmt: skip
    [mug] = dump(top_queries(engine, SCOPE, limit=10))["queries"]
    assert (mug["avgResultCount"], mug["zeroResultSearches"]) == (3.0, 0)


def test_a_query_is_text_or_a_number_never_an_objects_json(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "dee": [step("10:00:00", "search_query", "s1", query={"text": "mug"}, q="Mug"),
                step("10:00:01", "search_query", "s1", query=["mug"]),
                step("10:00:02", "search_query", "s1", query=True),
                step("10:01:00", "search_query", "s1", query=4711)],
    })  # fmt: skip
    body = dump(top_queries(engine, SCOPE, limit=10))
    assert {q["query"]: q["searches"] for q in body["queries"]} == {"mug": 1, "4711": 1}


def test_zero_result_queries(lake):
    ingest, engine = lake
    searches(ingest)
    body = dump(zero_result_queries(engine, SCOPE, limit=10))
    assert (body["totalZeroResultSearches"], body["totalQueries"]) == (3, 1)
    assert body["queries"] == [
        {"siteId": SITE, "query": "xyz", "zeroResultSearches": 3, "searches": 3, "zeroResultRate": 1.0,
         "people": 3, "lastSeenAt": "2024-03-01T12:00:01Z"},
    ]  # fmt: skip


def test_top_products_from_search(lake):
    ingest, engine = lake
    searches(ingest)
    body = dump(top_products(engine, SCOPE, limit=10))
    assert body["totalClicks"] == 4
    assert body["products"] == [
        {"siteId": SITE, "productId": str(product_id_for(SITE, "P1")), "productItemCode": "P1", "clicks": 2,
         "people": 2, "queries": 1, "topQueries": [{"query": "red mug", "clicks": 2}]},
        {"siteId": SITE, "productId": str(product_id_for(SITE, "P2")), "productItemCode": "P2", "clicks": 1,
         "people": 1, "queries": 1, "topQueries": [{"query": "blue mug", "clicks": 1}]},
        {"siteId": SITE, "productId": str(product_id_for(SITE, "P5")), "productItemCode": "P5", "clicks": 1,
         "people": 1, "queries": 0, "topQueries": []},
    ]  # fmt: skip


def test_a_range_without_searches(lake):
    ingest, engine = lake
    searches(ingest)
    empty = Scope((SITE,), date(2024, 3, 2), date(2024, 3, 3))
    assert dump(top_queries(engine, empty, limit=10))["queries"] == []
    assert dump(zero_result_queries(engine, empty, limit=10))["totalZeroResultSearches"] == 0
    assert dump(top_products(engine, empty, limit=10)) == {
        "scope": {"siteIds": [SITE], "startDate": "2024-03-02", "endDate": "2024-03-03"},
        "totalClicks": 0,
        "products": [],
    }


def test_a_query_is_trimmed_of_every_kind_of_white_space(lake):
    """A tab or line break at an end, and a no-break space inside, are white space like any other."""
    ingest, engine = lake
    journeys_for(ingest, {
        "dee": [step("10:00:00", "search_query", "s1", query="\tRed Mug\n"),
                step("10:01:00", "search_query", "s1", query="red\u00a0 mug"),
                step("10:02:00", "search_query", "s1", query=" RED MUG ")],
    })  # fmt: skip
    body = dump(top_queries(engine, SCOPE, limit=10))
    assert {q["query"]: q["searches"] for q in body["queries"]} == {"red mug": 3}


def test_a_click_carrying_its_query_is_a_search_click_in_a_session_without_searches(lake):
    """eve's search page was in a session that timed out (or was never tracked): the result she opens
    still names its query, so it is a search click."""
    ingest, engine = lake
    journeys_for(ingest, {
        "eve": [step("10:00:00", "page_view", "s9"),
                step("10:00:05", "product_click", "s9", productItemCode="P1", query="Mug"),
                step("10:00:06", "product_view", "s9", productItemCode="P1")],
    })  # fmt: skip
    body = dump(top_products(engine, SCOPE, limit=10))
    assert body["totalClicks"] == 1
    assert [(p["productItemCode"], p["clicks"], p["topQueries"]) for p in body["products"]] == [
        ("P1", 1, [{"query": "mug", "clicks": 1}])
    ]


def test_a_click_without_its_own_query_takes_the_latest_query_a_step_of_its_session_carried(lake):
    """gus searches "mug", adds a result to his cart from a page whose event names the query "teapot",
    then clicks a popular product: the click is "teapot"'s, the latest query of his session before it,
    though no search event named it."""
    ingest, engine = lake
    journeys_for(ingest, {
        "gus": [step("10:00:00", "search_query", "s7", query="mug"),
                step("10:00:05", "add_to_cart", "s7", productItemCode="P1", query="Teapot"),
                step("10:00:09", "popular_product_click", "s7", productItemCode="P2")],
    })  # fmt: skip
    body = dump(top_products(engine, SCOPE, limit=10))
    assert [(p["productItemCode"], p["clicks"], p["topQueries"]) for p in body["products"]] == [
        ("P2", 1, [{"query": "teapot", "clicks": 1}])
    ]
    assert [(q["query"], q["searches"]) for q in dump(top_queries(engine, SCOPE, limit=10))["queries"]] == [
        ("mug", 1)
    ]


def test_a_search_just_before_the_range_leads_to_the_click_just_inside_it(lake):
    """fay searches at 23:59:50 the day before the range and opens P1 from the results 15 s later, on
    the range's first day: a search click of "mug" (her search itself is not the range's)."""
    ingest, engine = lake
    journeys_for(ingest, {
        "fay": [{"event": "search_query", "at": "2024-02-29T23:59:50Z", "sessionId": "s1", "metadata": {"query": "mug"}},
                step("00:00:05", "product_view", "s1", productItemCode="P1")],
    })  # fmt: skip
    body = dump(top_products(engine, SCOPE, limit=10))
    assert [(p["productItemCode"], p["clicks"], p["topQueries"]) for p in body["products"]] == [
        ("P1", 1, [{"query": "mug", "clicks": 1}])
    ]
    assert dump(top_queries(engine, SCOPE, limit=10))["totalSearches"] == 0
