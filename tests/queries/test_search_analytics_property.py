"""Property: top queries, zero-result queries and the products opened from search over random small shops
equal a plain-Python reading of the documented definitions (the module docstring of
`queries.search_analytics`, the routes' description, docs/decisions.md): queries normalised, searches as
the larger of query events and outcomes, zero results reported either way and once, search clicks
found by walking each session's steps, rows per site and query."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queries.overview import Scope
from queries.search_analytics import top_products, top_queries, zero_result_queries
from tests.queries.random_shops import Shop, examples, new_site, open_lake, rate
from warehouse.config_store.product_identity import product_id_for

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

START, END = date(2024, 3, 2), date(2024, 3, 3)
DAY0 = datetime(2024, 3, 1, tzinfo=UTC)
# Where sessions start: the day before the range, just before a midnight, at one, after the range.
SESSION_STARTS = tuple(
    DAY0 + timedelta(days=d, hours=h, minutes=m)
    for d, h, m in [(0, 10, 0), (0, 23, 58), (1, 0, 0), (1, 12, 0), (1, 23, 59), (2, 9, 0), (2, 23, 57), (3, 1, 0)]
)  # fmt: skip
VISITORS = ("v0", "v1", "v2", "v3")
USERS = ("u0", "u1")

# The documented vocabulary.
SEARCH_STEPS = {"search_instant_open", "search_query", "search_results", "search_zero_results", "search_filter",
                "search_sort", "search_page", "recent_search_click", "popular_search_click"}  # fmt: skip
CLICK_NAMES = {"product_click", "product_view", "popular_product_click"}
# Not steps: page views, scrolls, impressions, dwell time, identity and runtime events, and
# placement interactions (hover, close, slider navigation, custom events).
NOT_STEPS = {"page_view", "virtual_page_view", "scroll", "impression", "view", "widget_impression", "widget_view",
             "product_impression", "product_dwell_time", "identify", "user_login", "script_error", "hover", "close",
             "slider_navigate", "custom_event"}  # fmt: skip
QUERY_KEYS = ("query", "q", "searchQuery", "searchTerm")
SEARCHES = ("search_query", "search_results", "search_zero_results")

# --- random shops ----------------------------------------------------------------------------------

TEXTS = ("Red Mug", "  red\tmug ", "RED\u00a0MUG", "red  mug\n", "xyz", "XYZ ", "Äpfel", "äPFEL", "", "  ")
query_strategy = st.one_of(
    st.none(),
    st.tuples(st.sampled_from(QUERY_KEYS), st.sampled_from(TEXTS)).map(lambda kv: {kv[0]: kv[1]}),
    st.just({"query": 4711}),
    # Not text: the next key's text is the query.
    st.sampled_from([{"query": {"text": "mug"}, "q": "Red Mug"}, {"query": True, "searchTerm": "xyz"}]),
)
STEP_NAMES = (
    "search_query", "search_query", "search_results", "search_results", "search_zero_results",
    "search_instant_open", "search_filter", "search_page", "recent_search_click", "popular_search_click",
    "popular_category_click", "search_close", "popular_product_click", "product_click", "product_click",
    "product_view", "product_view", "page_view", "product_impression", "hover", "custom_event", "add_to_cart",
    "identify",
)  # fmt: skip
step_strategy = st.tuples(
    st.sampled_from(STEP_NAMES),
    query_strategy,
    st.sampled_from([None, 0, 0, 3, 5, -1]),  # resultCount
    st.sampled_from(["P1", "P2", "P3"]),
    st.sampled_from([0, 0, 1, 1, 30]),  # minutes after the previous step: ties happen
)
session_strategy = st.tuples(
    st.integers(0, 1),  # site
    st.sampled_from(VISITORS),
    st.sampled_from(SESSION_STARTS),
    st.lists(step_strategy, min_size=1, max_size=8),
)


def build_shop(sites: tuple[str, str], sessions) -> Shop:
    """Each session of a visitor, its steps in order; its event ids sort in that order too."""
    shop = Shop()
    for n, (site, visitor, start, steps) in enumerate(sessions):
        at = start
        for name, query, result_count, product, minutes in steps:
            at += timedelta(minutes=minutes)
            metadata: dict = {}
            user = None
            if name == "identify":
                user = USERS[VISITORS.index(visitor) // 2]  # v0, v1 are u0; v2, v3 are u1
            if name in CLICK_NAMES | {"add_to_cart", "product_impression"}:
                metadata["productItemCode"] = product
            if query is not None and (name.startswith(("search_", "popular_search", "recent_search"))
                                      or name in CLICK_NAMES):  # fmt: skip
                metadata.update(query)
            if name in ("search_results", "search_zero_results") and result_count is not None:
                metadata["resultCount"] = result_count
            shop.event(site=sites[site], name=name, at=at, visitor=visitor, session=f"{visitor}-{n}", user=user,
                       metadata=metadata)  # fmt: skip
    return shop


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    ingest, engine = open_lake(tmp_path_factory, "search")
    yield ingest, engine
    engine.close()
    ingest.stop()


# --- the reference ---------------------------------------------------------------------------------


def query_of(metadata: dict) -> str | None:
    """The first of query, q, searchQuery, searchTerm that is text or a number; trimmed, lower case,
    runs of white space as one space; none when nothing is left."""
    for key in QUERY_KEYS:
        value = metadata.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return " ".join(re.split(r"\s+", str(value).strip())).lower() or None
    return None


def in_range(e: dict) -> bool:
    return START <= e["at"].date() <= END


def classify(shop: Shop, site_ids: tuple[str, ...]) -> list[dict]:
    """Every event of the range with its query and, for search clicks, the query the click belongs to.
    A session's steps are its events that are steps, in time order (then by event id), from the UTC day
    before the range on."""
    sessions: dict[tuple, list[dict]] = defaultdict(list)
    for e in shop.events:
        if (
            e["site"] in site_ids
            and e["name"] not in NOT_STEPS
            and e["at"].date() >= START - timedelta(days=1)
        ):
            sessions[e["site"], shop.person(e["site"], e["visitor"]), e["session"]].append(e)
    out = []
    for (_, person, _), steps in sessions.items():
        steps.sort(key=lambda e: (e["at"], e["event_id"]))
        latest = None
        for i, e in enumerate(steps):
            query = query_of(e["metadata"])
            latest = query or latest
            previous = steps[i - 1]["name"] if i else None
            is_click = e["name"] in CLICK_NAMES and bool(e["metadata"].get("productItemCode")) and (
                query is not None or e["name"] == "popular_product_click" or previous in SEARCH_STEPS
            )  # fmt: skip
            if in_range(e):
                result_count = e["metadata"].get("resultCount")
                out.append({**e, "person": person, "query": query, "is_click": is_click,
                            "click_query": latest if is_click else None,
                            "result_count": result_count if isinstance(result_count, int) and result_count >= 0
                            else None})  # fmt: skip
    return out


def reference_queries(rows: list[dict]) -> dict[tuple, dict]:
    """Per (site, query): searches, people, zero results (a search_zero_results event, or a
    search_results event with resultCount 0 unless its session reported that query as a zero result),
    the mean resultCount of search_results, clicks, and the last search and zero result."""
    searched = [r for r in rows if r["name"] in SEARCHES and r["query"] is not None and not r["is_click"]]
    zero_reported = {
        (r["site"], r["session"], r["query"]) for r in searched if r["name"] == "search_zero_results"
    }
    out: dict[tuple, dict] = {}
    for r in searched:
        q = out.setdefault((r["site"], r["query"]), {"query_events": 0, "found": 0, "zero": [], "people": set(),
                                                     "counts": [], "last": r["at"], "clicks": 0})  # fmt: skip
        q["people"].add(r["person"])
        q["last"] = max(q["last"], r["at"])
        if r["name"] == "search_query":
            q["query_events"] += 1
        elif r["name"] == "search_zero_results":
            q["zero"].append(r)
        elif r["result_count"] == 0:
            if (r["site"], r["session"], r["query"]) not in zero_reported:
                q["zero"].append(r)
        else:
            q["found"] += 1
        if r["name"] == "search_results" and r["result_count"] is not None:
            q["counts"].append(r["result_count"])
    for r in rows:
        if r["is_click"] and (r["site"], r["click_query"]) in out:
            out[r["site"], r["click_query"]]["clicks"] += 1
    for q in out.values():
        q["searches"] = max(q["query_events"], q["found"] + len(q["zero"]))
    return out


def reference_top_queries(rows: list[dict], limit: int) -> dict:
    found = reference_queries(rows)
    ordered = sorted(found, key=lambda k: (-found[k]["searches"], k[1], k[0]))
    searches = sum(q["searches"] for q in found.values())
    zero = sum(len(q["zero"]) for q in found.values())
    return {
        "totalSearches": searches,
        "totalQueries": len(found),
        "zeroResultRate": rate(zero, searches),
        "queries": [
            {"siteId": site, "query": query, "searches": q["searches"], "people": len(q["people"]),
             "zeroResultSearches": len(q["zero"]), "zeroResultRate": rate(len(q["zero"]), q["searches"]),
             "avgResultCount": float(round(Fraction(sum(q["counts"]), len(q["counts"])), 3)) if q["counts"] else None,
             "clicks": q["clicks"], "clicksPerSearch": rate(q["clicks"], q["searches"]), "lastSearchedAt": q["last"]}
            for site, query in ordered[:limit]
            for q in [found[site, query]]
        ],
    }  # fmt: skip


def reference_zero_results(rows: list[dict], limit: int) -> dict:
    found = {k: q for k, q in reference_queries(rows).items() if q["zero"]}
    ordered = sorted(found, key=lambda k: (-len(found[k]["zero"]), -found[k]["searches"], k[1], k[0]))
    return {
        "totalZeroResultSearches": sum(len(q["zero"]) for q in found.values()),
        "totalQueries": len(found),
        "queries": [
            {"siteId": site, "query": query, "zeroResultSearches": len(q["zero"]), "searches": q["searches"],
             "zeroResultRate": rate(len(q["zero"]), q["searches"]), "people": len({z["person"] for z in q["zero"]}),
             "lastSeenAt": max(z["at"] for z in q["zero"])}
            for site, query in ordered[:limit]
            for q in [found[site, query]]
        ],
    }  # fmt: skip


def reference_top_products(rows: list[dict], limit: int) -> dict:
    """Per (site, product): search clicks, their people, distinct queries, the three queries with most
    clicks (then by query); products by clicks, then people, then code."""
    clicks: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["is_click"]:
            clicks[r["site"], r["metadata"]["productItemCode"]].append(r)

    def people(key: tuple) -> int:
        return len({r["person"] for r in clicks[key]})

    ordered = sorted(clicks, key=lambda k: (-len(clicks[k]), -people(k), k[1], k[0]))
    products = []
    for site, code in ordered[:limit]:
        per_query: dict[str, int] = defaultdict(int)
        for r in clicks[site, code]:
            if r["click_query"] is not None:
                per_query[r["click_query"]] += 1
        top = sorted(per_query, key=lambda q: (-per_query[q], q))[:3]
        products.append({
            "siteId": site, "productId": str(product_id_for(site, code)), "productItemCode": code,
            "clicks": len(clicks[site, code]), "people": people((site, code)), "queries": len(per_query),
            "topQueries": [{"query": q, "clicks": per_query[q]} for q in top],
        })  # fmt: skip
    return {"totalClicks": sum(len(c) for c in clicks.values()), "products": products}


# --- the property ----------------------------------------------------------------------------------


@examples(30)
@given(
    sessions=st.lists(session_strategy, max_size=7),
    both_sites=st.booleans(),
    limit=st.sampled_from([1, 2, 20]),
)
def test_search_analytics_match_the_reference(lake, sessions, both_sites, limit):
    ingest, engine = lake
    sites = (new_site(), new_site())
    shop = build_shop(sites, sessions)
    shop.write(ingest)
    site_ids = sites if both_sites else sites[:1]
    scope = Scope(site_ids, START, END)
    rows = classify(shop, site_ids)

    def dump(model) -> dict:
        body = model.model_dump(by_alias=True)
        assert body.pop("scope") == {
            "siteIds": list(site_ids),
            "startDate": "2024-03-02",
            "endDate": "2024-03-03",
        }
        return body

    assert dump(top_queries(engine, scope, limit=limit)) == reference_top_queries(rows, limit)
    assert dump(zero_result_queries(engine, scope, limit=limit)) == reference_zero_results(rows, limit)
    assert dump(top_products(engine, scope, limit=limit)) == reference_top_products(rows, limit)
