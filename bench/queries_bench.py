"""Query benchmark: the analytics library over N generated events stored as the lake stores them
(one site, daily partitions, compacted), timed end to end through the same functions the routes call,
side by side in one process with the same funnel and retention computed by ClickHouse (chDB's
``windowFunnel`` and ``retention``) and by a straightforward polars implementation over the same
Parquet files. Counts must match (a parity check is printed); ratios are ours / theirs. The search
analytics (top queries, zero-result queries, products opened from search) read search traffic generated
on a site of its own (``SEARCH_SITE``), and attribution (revenue per entity, touchpoint counts, the
recommendations breakdown) reads campaign, widget and recommendation touchpoints, orders and purchase
events generated on another (``ATTRIBUTION_SITE``), so the other sites' events and figures are as without
them.

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python bench/queries_bench.py [--events 10000000] [--days 28] [--visitors EVENTS/20]
        [--search-events EVENTS/10] [--attribution-events EVENTS/10] [--lake DIR] [--runs 3]
        [--orders-on-events-site]
        [--skip funnel,cohort,journeys,overview,categories,revenue,associations,top,search,attribution,polars,chdb]

Events are written 100,000 at a time (several files per day, never all in memory) and compacted. ``--lake DIR`` keeps the
lake in DIR and reuses it when it already holds events. Every figure is the median of ``--runs``
calls; each call also records its CPU time (all threads of this process, chDB's and polars' included)
and its peak resident memory (``VmHWM``, reset before the call). The load average beside each
analysis says how busy the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.compaction_bench import SITE, STEPS, make_file  # noqa: E402
from queries.attribution import attributed_rows, entity_revenue, recommendations_breakdown, touchpoint_counts  # noqa: E402
from queries.categories import CategoryQuery, category_conversion  # noqa: E402
from queries.cohort import CohortQuery, cohort_report  # noqa: E402
from queries.funnel import FunnelQuery, funnel  # noqa: E402
from queries.journeys import JourneyRange, journey_stats  # noqa: E402
from queries.overview import Scope, overview  # noqa: E402
from queries.products import ProductRange, product_associations, top_sales  # noqa: E402
from queries.revenue import ReportRange, revenue_overview  # noqa: E402
from queries.search_analytics import top_products, top_queries, zero_result_queries  # noqa: E402
from warehouse import visitor_activity  # noqa: E402
from warehouse.compaction import compact_table  # noqa: E402
from warehouse.config_store.product_identity import product_id_for  # noqa: E402
from warehouse.engine import Engine  # noqa: E402
from warehouse.lake import EVENTS, EVENTS_SCHEMA, MONEY, ORDER_ITEM, ORDERS, ORDERS_SCHEMA, Lake  # noqa: E402

FIRST = date(2026, 1, 5)  # a Monday
WINDOW_SECONDS = 7 * 86_400
PERIODS = 12
NOW = datetime(2026, 11, 22, tzinfo=UTC)  # every period of the report has started: no empty cells
CHUNK_ROWS = 100_000  # several flush files per daily partition, as the flusher leaves them
PRODUCTS = 5000
# The carts' orders live on a site of their own, so that the funnel and retention over SITE's events stay
# comparable with chDB's and polars' (which read events only; Aisle counts orders as purchases), unless
# --orders-on-events-site puts them on SITE (product top then reads the sold products' views and
# add-to-carts, as a shop's would).
ORDERS_SITE = "44444444-4444-4444-4444-444444444444"
# Search traffic lives on a site of its own, generated from a generator of its own, so that SITE's events
# (and every figure over them, chDB's and polars' parity included) are the same with it as without it.
SEARCH_SITE = "66666666-6666-6666-6666-666666666666"
SEARCH_LIMIT = 20  # the search routes' default
# Attribution traffic likewise: touchpoints, orders and purchase events on a site of their own.
ATTRIBUTION_SITE = "77777777-7777-7777-7777-777777777777"
VOCABULARY = 3000  # distinct queries (before the way people type them), popularity Zipf-like


# --- measuring ----------------------------------------------------------------------------------


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def _load() -> str:
    one, five, _ = os.getloadavg()
    pressure = ""
    try:
        with open("/proc/pressure/cpu") as cpu:
            pressure = " cpu-pressure " + cpu.readline().split()[1].split("=")[1] + "%"
    except OSError:
        pass
    return f"load {one:.2f} / {five:.2f}{pressure}"


def measure(fn: Callable[[], Any], runs: int) -> tuple[dict[str, Any], Any]:
    """Median wall and CPU seconds of ``runs`` calls, their highest peak RSS, and the last result."""
    walls, cpus, peaks, result = [], [], [], None
    for _ in range(runs):
        _reset_peak_rss()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        peaks.append(_peak_rss_mib())
    figures = {
        "seconds": round(statistics.median(walls), 3),
        "cpuSeconds": round(statistics.median(cpus), 3),
        "peakRssMiB": round(max(peaks)),
        "allSeconds": [round(w, 3) for w in walls],
    }
    return figures, result


def side_by_side(
    candidates: dict[str, Callable[[], Any]], runs: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each candidate ``runs`` times, the candidates taking turns so that a change of machine load
    falls on all of them alike."""
    walls: dict[str, list[float]] = {name: [] for name in candidates}
    cpus: dict[str, list[float]] = {name: [] for name in candidates}
    peaks: dict[str, list[float]] = {name: [] for name in candidates}
    results: dict[str, Any] = {}
    load_before = _load()
    for _ in range(runs):
        for name, fn in candidates.items():
            figures, results[name] = measure(fn, 1)
            walls[name].append(figures["seconds"])
            cpus[name].append(figures["cpuSeconds"])
            peaks[name].append(figures["peakRssMiB"])
    table = {
        name: {
            "seconds": round(statistics.median(walls[name]), 3),
            "cpuSeconds": round(statistics.median(cpus[name]), 3),
            "peakRssMiB": round(max(peaks[name])),
            "allSeconds": walls[name],
        }
        for name in candidates
    }
    table["machine"] = f"{load_before} before, {_load()} after"
    return table, results


# --- data ---------------------------------------------------------------------------------------


def with_products(rng: np.random.Generator, table: pa.Table) -> pa.Table:
    """product_view and add_to_cart events name one of ``PRODUCTS`` products, popularity Zipf-like."""
    names = table["name"]
    named = pc.or_(pc.equal(names, "product_view"), pc.equal(names, "add_to_cart"))
    codes = pa.array((rng.zipf(1.3, table.num_rows) - 1) % PRODUCTS)
    code = pc.if_else(named, pc.binary_join_element_wise("P", pc.cast(codes, pa.string()), ""), None)
    return table.set_column(table.schema.get_field_index("product_item_code"), "product_item_code", code)


def orders_from_carts(rng: np.random.Generator, table: pa.Table, *, prefix: str) -> pa.Table:
    """About a third of the (visitor, session) carts of a file check out a minute after their last
    add_to_cart: one order of the cart's distinct products, one each at 10 EUR (written to ORDERS_SITE)."""
    adds = table.filter(pc.equal(table["name"], "add_to_cart"))
    carts = adds.group_by(["visitor_id", "session_id"]).aggregate(
        [("product_item_code", "distinct"), ("ts", "max")]
    )
    carts = carts.filter(pa.array(rng.random(carts.num_rows) < 0.35))
    n = carts.num_rows
    codes = carts["product_item_code_distinct"].combine_chunks()
    lines = len(codes.values)
    price = pa.array([Decimal(10)] * lines, MONEY)
    item = pa.StructArray.from_arrays(
        [codes.values, pa.nulls(lines, pa.string()), pa.array(np.ones(lines, dtype=np.int64)), price,
         pa.nulls(lines, pa.string()), pa.nulls(lines, pa.string())],
        fields=list(ORDER_ITEM),
    )  # fmt: skip
    items = pa.ListArray.from_arrays(codes.offsets, item)
    counts = pc.list_value_length(items)
    ts = pc.add(carts["ts_max"], pa.scalar(timedelta(minutes=1), pa.duration("us")))
    columns = {
        "order_id": pc.binary_join_element_wise(prefix, pc.cast(pa.array(np.arange(n)), pa.string()), ""),
        "ts": ts, "received_at": ts, "visitor_id": carts["visitor_id"], "session_id": carts["session_id"],
        "currency": pa.array(["EUR"] * n), "total": pa.array([Decimal(10 * c) for c in counts.to_pylist()], MONEY),
        "is_refund": pa.array(np.zeros(n, dtype=bool)), "items": items, "item_count": pc.cast(counts, pa.int64()),
    }  # fmt: skip
    return pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in ORDERS_SCHEMA],
        schema=ORDERS_SCHEMA,
    )


def generate(
    lake: Lake,
    *,
    events: int,
    days: int,
    visitors: int,
    orders_site: str = ORDERS_SITE,
    search_events: int = 0,
    attribution_events: int = 0,
) -> int:
    """``events`` events over ``days`` daily partitions of one site, written a million rows at a time
    (the flusher's way: several files per partition), then compacted; product events name products, and
    a third of the carts become orders of ``orders_site``; about ``search_events`` events of search
    traffic on SEARCH_SITE and about ``attribution_events`` of attribution traffic (with its orders) on
    ATTRIBUTION_SITE over the same days. Returns the events written to SITE."""
    rng = np.random.default_rng(7)
    per_day = events // days
    for day_number in range(days):
        day = FIRST + timedelta(days=day_number)
        for chunk in range(0, per_day, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, per_day - chunk)
            table = make_file(rng, start=day_number * per_day + chunk, rows=rows, day=day, visitors=visitors)
            table = with_products(rng, table)
            lake.write_file(EVENTS, table, site_id=SITE, date=day.isoformat())
            orders = orders_from_carts(rng, table, prefix=f"o{day_number}-{chunk}-")
            lake.write_file(ORDERS, orders, site_id=orders_site, date=day.isoformat())
    if search_events:
        search_rng = np.random.default_rng(11)  # its own: SITE's draws above are as without search traffic
        vocabulary = search_vocabulary(np.random.default_rng(13))
        searched = 0
        for day_number in range(days):
            day = FIRST + timedelta(days=day_number)
            table = make_search_file(search_rng, vocabulary, start=searched, events=search_events // days,
                                     day=day, visitors=max(1, search_events // 20))  # fmt: skip
            # As the flusher leaves a day: several files, each of the events of a stretch of the day.
            table = table.take(pc.sort_indices(table, [("ts", "ascending")]))
            for piece in range(SEARCH_FILES_PER_DAY):
                rows = slice(
                    piece * table.num_rows // SEARCH_FILES_PER_DAY,
                    (piece + 1) * table.num_rows // SEARCH_FILES_PER_DAY,
                )
                lake.write_file(EVENTS, table[rows], site_id=SEARCH_SITE, date=day.isoformat())
            searched += table.num_rows
    if attribution_events:
        # Its own generator: SITE's and SEARCH_SITE's draws above are as without attribution traffic.
        touches, sales = make_attribution_traffic(
            np.random.default_rng(17), events=attribution_events, days=days,
            visitors=max(1, attribution_events // 20),
        )  # fmt: skip
        first = np.datetime64(FIRST.isoformat(), "us")
        day_of = (touches["ts"].to_numpy() - first) // np.timedelta64(1, "D")  # both sorted by ts
        order_day = (sales["ts"].to_numpy() - first) // np.timedelta64(1, "D")
        for day_number in range(days):
            day = FIRST + timedelta(days=day_number)
            lo, hi = np.searchsorted(day_of, [day_number, day_number + 1])
            for piece in range(ATTRIBUTION_FILES_PER_DAY):  # the day's stretches, as the flusher leaves them
                rows = slice(lo + piece * (hi - lo) // ATTRIBUTION_FILES_PER_DAY,
                             lo + (piece + 1) * (hi - lo) // ATTRIBUTION_FILES_PER_DAY)  # fmt: skip
                lake.write_file(EVENTS, touches[rows], site_id=ATTRIBUTION_SITE, date=day.isoformat())
            lo, hi = np.searchsorted(order_day, [day_number, day_number + 1])
            lake.write_file(ORDERS, sales[lo:hi], site_id=ATTRIBUTION_SITE, date=day.isoformat())
    compact_table(lake, EVENTS)
    compact_table(lake, ORDERS)
    return per_day * days


# Search traffic: what one search leads to (the expected events per search sizes a day's searches).
ZERO_SHOWN_AS = (0.4, 0.5, 0.1)  # a zero-result search as search_zero_results, search_results 0, both
PAGE_VIEW_AFTER = 0.6  # the results page's page_view (no step of a search: the analytics skip it)
CLICK_AFTER = 0.4  # a search that found something leads to a product_click, then that product's view
CLICK_CARRIES_QUERY = 0.5  # the click names its query itself (else it is one by following the search)
LOGGED_IN = 0.2  # visitors sending a user id, two visitors (devices) per user
SEARCH_FILES_PER_DAY = 4  # flush files of a day's search traffic, before compaction
NO_TEXT = pa.scalar(None, pa.string())


def search_vocabulary(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """VOCABULARY queries by popularity rank (rank 0 most searched): single nouns and adjective-noun pairs,
    one in twelve past the 30 most popular a typo (it finds nothing); each with its mean result count."""
    nouns = ["mug", "sofa", "lamp", "chair", "table", "rug", "vase", "pillow", "blanket", "mirror", "shelf",
             "desk", "bed", "curtain", "towel", "plate", "bowl", "glass", "candle", "clock", "frame", "basket",
             "stool", "bench", "cabinet", "wardrobe", "dresser", "jar", "kettle", "teapot", "pan", "knife",
             "fork", "spoon", "tray", "planter", "throw", "duvet", "sheet", "mat", "hook", "rack", "bin", "box",
             "cushion", "ottoman", "sideboard", "lantern", "wreath", "doormat", "coaster", "napkin", "apron",
             "grater", "whisk", "colander", "ladle", "trivet", "decanter", "carafe"]  # fmt: skip
    adjectives = ["red", "blue", "green", "black", "white", "grey", "oak", "walnut", "linen", "cotton", "wool",
                  "velvet", "leather", "glass", "ceramic", "marble", "brass", "copper", "steel", "bamboo",
                  "rattan", "large", "small", "round", "square", "vintage", "modern", "rustic", "nordic",
                  "outdoor", "kids", "folding", "stackable", "waterproof", "scented", "striped", "floral",
                  "yellow", "pink", "beige", "navy", "olive", "terracotta", "gold", "silver", "matte",
                  "handmade", "organic", "cheap"]  # fmt: skip
    terms = nouns + [f"{a} {n}" for a in adjectives for n in nouns]
    terms = [terms[i] for i in rng.permutation(len(terms))[:VOCABULARY]]
    typos = np.zeros(VOCABULARY, dtype=bool)
    typos[30:] = rng.random(VOCABULARY - 30) < 1 / 12
    for rank in np.flatnonzero(typos):  # a few hundred terms, once
        term = terms[rank]
        cut = int(rng.integers(1, len(term) - 1))  # a letter (or the space) left out
        terms[rank] = term[:cut] + term[cut + 1 :]
    mean_results = np.where(typos, 0.0, rng.lognormal(np.log(30), 1.2, VOCABULARY))
    weights = 1 / (np.arange(1, VOCABULARY + 1) + 2.7)  # Zipf-Mandelbrot: the head a few % of searches
    return {"terms": np.array(terms), "mean_results": mean_results, "p": weights / weights.sum()}


def _typed(rng: np.random.Generator, terms: pa.Array) -> pa.Array:
    """The queries as people type them, as JSON string text: 70 % as they are (lower case), else Title
    case (12 %), UPPER case (4 %), spaces around (6 %), a doubled inner space (4 %) or a leading tab
    (4 %, ``\\t`` in the JSON)."""
    way = rng.random(len(terms))
    typed = terms
    for low, high, changed in [
        (0.70, 0.82, pc.utf8_title(terms)),
        (0.82, 0.86, pc.utf8_upper(terms)),
        (0.86, 0.92, pc.binary_join_element_wise("  ", terms, " ", "")),
        (0.92, 0.96, pc.replace_substring(terms, " ", "  ")),
        (0.96, 1.00, pc.binary_join_element_wise("\\t", terms, "")),
    ]:
        typed = pc.if_else(pa.array((way >= low) & (way < high)), changed, typed)
    return typed


def _json(*parts: Any) -> pa.Array:
    """JSON text joined from literal pieces and string arrays (one element per row)."""
    return pc.binary_join_element_wise(*parts, "")


def make_search_file(
    rng: np.random.Generator, vocabulary: dict[str, np.ndarray], *, start: int, events: int, day: date,
    visitors: int,
) -> pa.Table:  # fmt: skip
    """About ``events`` events of one day's search traffic on SEARCH_SITE: each search a search_query, its
    outcome (search_results with a resultCount, or for a zero result search_zero_results, search_results
    0 or both), often the results page's page_view, and for some found searches a product_click and the
    product's view. Queries Zipf-like over the vocabulary, typed in varied case and white space, under
    ``query`` (else ``q`` or ``searchTerm``); a session per visitor and day; some visitors logged in."""
    zero_mean = float(vocabulary["p"] @ (vocabulary["mean_results"] == 0))
    per_search = 1 + 1 + ZERO_SHOWN_AS[2] * zero_mean + PAGE_VIEW_AFTER + 2 * CLICK_AFTER * (1 - zero_mean)
    n = max(1, round(events / per_search))
    term = rng.choice(VOCABULARY, n, p=vocabulary["p"])
    results = rng.poisson(vocabulary["mean_results"][term])
    zero = results == 0
    shown = rng.choice(3, n, p=ZERO_SHOWN_AS)  # for zero results: 0 zero event, 1 results 0, 2 both
    visitor = rng.integers(0, visitors, n)
    second = rng.integers(0, 86_400 - 120, n)  # the search and what follows stay on its day
    typed = _typed(rng, pa.array(vocabulary["terms"][term]))
    key = pa.array(np.array(["query", "q", "searchTerm"])[rng.choice(3, n, p=[0.9, 0.05, 0.05])])
    query_json = _json('{"', key, '":"', typed, '"')
    count_text = pc.cast(pa.array(results), pa.string())

    clicked = ~zero & (rng.random(n) < CLICK_AFTER)
    carries = rng.random(n) < CLICK_CARRIES_QUERY
    position = np.minimum(rng.zipf(1.6, n), np.maximum(results, 1))
    product = pc.binary_join_element_wise(
        "P", pc.cast(pa.array((term * 37 + position) % PRODUCTS), pa.string()), ""
    )
    click_second = second + 3 + rng.integers(2, 60, n)
    paged = rng.random(n) < PAGE_VIEW_AFTER

    # (searches, name, seconds, metadata, product) of each kind of event, then all kinds in one table.
    kinds = [
        (np.ones(n, dtype=bool), "search_query", second, _json(query_json, "}"), None),
        (~zero | (shown != 0), "search_results", second + np.where(zero & (shown == 2), 2, 1),
         _json(query_json, ',"resultCount":', count_text, "}"), None),
        (zero & (shown != 1), "search_zero_results", second + 1, _json(query_json, ',"resultCount":0}'), None),
        (paged, "page_view", second + 3, None, None),
        (clicked, "product_click", click_second,
         pc.if_else(pa.array(carries),
                    _json('{"productItemCode":"', product, '","position":', pc.cast(pa.array(position), pa.string()),
                          ',"query":"', typed, '"}'),
                    _json('{"productItemCode":"', product, '","position":', pc.cast(pa.array(position), pa.string()),
                          "}")),
         product),
        (clicked, "product_view", click_second + 1, _json('{"productItemCode":"', product, '"}'), product),
    ]  # fmt: skip
    rows, names, seconds, metadata, products = [], [], [], [], []
    for which, name, when, meta, code in kinds:
        take = pa.array(np.flatnonzero(which))
        rows.append(take.to_numpy())
        names.append(pa.array(np.full(len(take), name)))
        seconds.append(when[which])
        metadata.append(pa.nulls(len(take), pa.string()) if meta is None else meta.take(take))
        products.append(pa.nulls(len(take), pa.string()) if code is None else code.take(take))
    search = np.concatenate(rows)
    total = len(search)
    who = visitor[search]
    base = np.datetime64(day.isoformat(), "us")
    visitor_text = pc.cast(pa.array(who), pa.string())
    logged_in = pa.array(who % 100 < LOGGED_IN * 100)
    columns = {
        "event_id": _json("x", pc.cast(pa.array(np.arange(start, start + total)), pa.string())),
        "name": pa.concat_arrays(names),
        "ts": pa.array(base + np.concatenate(seconds).astype("timedelta64[s]")).cast(EVENTS_SCHEMA.field("ts").type),
        "visitor_id": _json("sv", visitor_text),
        "session_id": _json("ss", visitor_text, f"-{day.isoformat()}"),
        "user_id": pc.if_else(logged_in, _json("u", pc.cast(pa.array(who // 2), pa.string())), NO_TEXT),
        "metadata": pa.concat_arrays(metadata),
        "product_item_code": pa.concat_arrays(products),
        "url": pc.if_else(pc.equal(pa.concat_arrays(names), "page_view"), "/search", NO_TEXT),
    }  # fmt: skip
    return pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(total, f.type) for f in EVENTS_SCHEMA],
        schema=EVENTS_SCHEMA,
    )


# Attribution traffic: impressions and clicks of campaigns, widgets and recommendations on a site of its own,
# orders after some clicks, purchase events naming them (as storefronts send), a few refunds.
# Entities of each kind, ids campaign-00, widget-00, recommendation-00, ...
ENTITIES = {"campaign": 30, "widget": 20, "recommendation": 40}
ENTITY_SHARE = (0.4, 0.25, 0.35)  # of the touchpoints, in ENTITIES' order
# The names storefronts send: an impression (either name) or a click of each kind of entity.
SEEN_AS = {"campaign": ("impression", "view"), "widget": ("widget_impression", "widget_view"),
           "recommendation": ("product_impression", "product_impression")}  # fmt: skip
CLICKED_AS = {"campaign": "click", "widget": "click", "recommendation": "product_click"}
TOUCH_SHARE = 0.9  # of the attribution events (the rest: purchase events and page views)
CLICK_RATE = 0.08  # of the touchpoints
ORDERS_PER_CLICK = 0.35  # of the clicks: an order by the clicker a minute to three days later
PURCHASE_EVENT = 0.6  # of the orders: a purchase event naming it (metadata.orderId) seconds after
PURCHASE_EVENT_LATE = 0.05  # of those: stored 2 to 4 days after its order
MONEYLESS_PURCHASES = 0.1  # purchase events naming no order, per order
REFUNDS = 0.03  # of the orders, refunded 1 to 5 days later (a refund of its own id)
ATTRIBUTION_FILES_PER_DAY = 4


def make_attribution_traffic(
    rng: np.random.Generator, *, events: int, days: int, visitors: int
) -> tuple[pa.Table, pa.Table]:
    """About ``events`` events of attribution traffic on ATTRIBUTION_SITE over ``days`` days from FIRST, and
    its orders (sales and refunds): touchpoints of Zipf-popular entities by uniformly drawn visitors, orders
    after some clicks, each order's purchase event, moneyless purchase events, page views for the rest; a
    fifth of the visitors logged in (two visitors per user). Each table sorted by time."""
    span = days * 86_400
    touches = int(events * TOUCH_SHARE)
    kind = rng.choice(len(ENTITIES), touches, p=ENTITY_SHARE)
    counts = np.array(list(ENTITIES.values()))
    entity = (rng.zipf(1.4, touches) - 1) % counts[kind]
    clicked = rng.random(touches) < CLICK_RATE
    seen_first = rng.random(touches) < 0.5
    names = np.array([[SEEN_AS[t][0], SEEN_AS[t][1], CLICKED_AS[t]] for t in ENTITIES])
    touch_name = names[kind, np.where(clicked, 2, np.where(seen_first, 0, 1))]
    types = np.array(list(ENTITIES))
    touch_type = types[kind]
    capitalised = rng.random(touches) < 0.05  # "Campaign": the SQL compares types in lower case
    touch_type = np.where(capitalised, np.char.capitalize(touch_type), touch_type)
    touch_entity = pc.binary_join_element_wise(
        pa.array(types[kind]), pc.utf8_lpad(pc.cast(pa.array(entity), pa.string()), 2, "0"), "-"
    )
    touch_visitor = rng.integers(0, visitors, touches)
    touch_second = rng.integers(0, span, touches)

    # Orders: after a sample of the clicks, by the clicking visitor, a minute to three days later (in the range).
    clicks = np.flatnonzero(clicked)
    after = clicks[rng.random(len(clicks)) < ORDERS_PER_CLICK]
    n = len(after)
    order_visitor = touch_visitor[after]
    order_second = np.minimum(touch_second[after] + rng.integers(60, 3 * 86_400, n), span - 1)
    order_id = pc.binary_join_element_wise("ao", pc.cast(pa.array(np.arange(n)), pa.string()), "")
    currency = np.where(rng.random(n) < 0.9, "EUR", "USD")
    cents = rng.integers(1_000, 20_000, n)
    refunded = np.flatnonzero(rng.random(n) < REFUNDS)
    refund_second = np.minimum(
        order_second[refunded] + rng.integers(86_400, 5 * 86_400, len(refunded)), span - 1
    )

    # Purchase events: most orders' (a few stored days late), and some naming no order.
    named = np.flatnonzero(rng.random(n) < PURCHASE_EVENT)
    late = rng.random(len(named)) < PURCHASE_EVENT_LATE
    named_second = np.minimum(
        order_second[named] + np.where(late, rng.integers(2 * 86_400, 4 * 86_400, len(named)), 2), span - 1
    )
    moneyless = int(n * MONEYLESS_PURCHASES)
    bare = clicks[rng.integers(0, len(clicks), moneyless)]
    bare_second = np.minimum(touch_second[bare] + rng.integers(60, 86_400, moneyless), span - 1)
    purchases = len(named) + moneyless
    fill = max(0, events - touches - purchases)

    visitor = np.concatenate(
        [touch_visitor, order_visitor[named], touch_visitor[bare], rng.integers(0, visitors, fill)]
    )
    second = np.concatenate([touch_second, named_second, bare_second, rng.integers(0, span, fill)])
    name = np.concatenate([touch_name, np.full(purchases, "purchase"), np.full(fill, "page_view")])
    total = len(name)
    pad = pa.nulls(total - touches, pa.string())
    metadata = pa.concat_arrays([
        pa.nulls(touches, pa.string()), _json('{"orderId":"', order_id.take(pa.array(named)), '"}'),
        pa.nulls(moneyless + fill, pa.string()),
    ])  # fmt: skip
    base = np.datetime64(FIRST.isoformat(), "us")
    ts = pa.array(base + second.astype("timedelta64[s]")).cast(EVENTS_SCHEMA.field("ts").type)
    visitor_text = pc.cast(pa.array(visitor), pa.string())
    day_text = pc.cast(pa.array(second // 86_400), pa.string())
    columns = {
        "event_id": _json("a", pc.cast(pa.array(np.arange(total)), pa.string())),
        "name": pa.array(name), "ts": ts, "received_at": ts,
        "visitor_id": _json("av", visitor_text), "session_id": _json("as", visitor_text, "-", day_text),
        "user_id": pc.if_else(pa.array(visitor % 100 < LOGGED_IN * 100),
                              _json("au", pc.cast(pa.array(visitor // 2), pa.string())), NO_TEXT),
        "entity_type": pa.concat_arrays([pa.array(touch_type), pad]),
        "entity_id": pa.concat_arrays([touch_entity, pad]),
        "metadata": metadata,
        "url": pc.if_else(pc.equal(pa.array(name), "page_view"), "/", NO_TEXT),
    }  # fmt: skip
    events_table = pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(total, f.type) for f in EVENTS_SCHEMA],
        schema=EVENTS_SCHEMA,
    )

    # Orders: the sales, then the refunds (ids of their own, negative totals).
    k = len(refunded)
    who = np.concatenate([order_visitor, order_visitor[refunded]])
    who_text = pc.cast(pa.array(who), pa.string())
    when = pa.array(base + np.concatenate([order_second, refund_second]).astype("timedelta64[s]")).cast(
        ORDERS_SCHEMA.field("ts").type
    )
    amount = np.concatenate([cents, -cents[refunded]])
    money = pa.array([Decimal(int(c)).scaleb(-2) for c in amount], MONEY)  # tens of thousands, once
    columns = {
        "order_id": pa.concat_arrays([order_id, _json("ar", pc.cast(pa.array(refunded), pa.string()))]),
        "ts": when, "received_at": when, "visitor_id": _json("av", who_text),
        "session_id": _json("as", who_text, "-", pc.cast(pa.array(np.concatenate([order_second, refund_second]) // 86_400), pa.string())),
        "user_id": pc.if_else(pa.array(who % 100 < LOGGED_IN * 100), _json("au", pc.cast(pa.array(who // 2), pa.string())), NO_TEXT),
        "currency": pa.array(np.concatenate([currency, currency[refunded]])),
        "total": money,
        "is_refund": pa.array(np.arange(n + k) >= n),
        "refund_of": pa.concat_arrays([pa.nulls(n, pa.string()), order_id.take(pa.array(refunded))]),
        "items": pa.array([[]] * (n + k), ORDERS_SCHEMA.field("items").type),
        "item_count": pa.array(np.zeros(n + k, dtype=np.int64)),
    }  # fmt: skip
    orders_table = pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n + k, f.type) for f in ORDERS_SCHEMA],
        schema=ORDERS_SCHEMA,
    )
    return (
        events_table.take(pc.sort_indices(events_table, [("ts", "ascending"), ("event_id", "ascending")])),
        orders_table.take(pc.sort_indices(orders_table, [("ts", "ascending"), ("order_id", "ascending")])),
    )


# --- the same analyses elsewhere ------------------------------------------------------------------


def chdb_funnel(glob: str, steps: list[str], window_us: int) -> list[int]:
    """People at each step with ClickHouse's windowFunnel (every step-1 event a possible start)."""
    import chdb

    conditions = ", ".join(f"name = '{step}'" for step in steps)
    answer = chdb.query(
        f"""SELECT level, count() FROM (
            SELECT visitor_id, windowFunnel({window_us})(toUInt64(toUnixTimestamp64Micro(ts)), {conditions}) AS level
            FROM file('{glob}', Parquet) GROUP BY visitor_id)
        GROUP BY level""",
        "CSV",
    )
    by_level = dict(tuple(map(int, line.split(","))) for line in str(answer).split())
    return [sum(people for level, people in by_level.items() if level >= k) for k in range(1, len(steps) + 1)]


def polars_funnel(files: list[str], steps: list[str], window_us: int) -> list[int]:
    """The same funnel in plain polars: from every step-1 event, an as-of join forward to the next
    event of each following step; a start reaches the steps met in order within the window."""
    import polars as pl

    events = (
        pl.scan_parquet(files)
        .select("visitor_id", pl.col("ts").dt.epoch("us").alias("t"), "name")
        .filter(pl.col("name").is_in(steps))
    )
    chain = events.filter(pl.col("name") == steps[0]).select("visitor_id", pl.col("t").alias("t1"))
    level, still = pl.lit(1, dtype=pl.Int32), pl.lit(True)
    for k, step in enumerate(steps[1:], start=2):
        following = events.filter(pl.col("name") == step).select("visitor_id", pl.col("t").alias(f"t{k}"))
        chain = chain.sort(f"t{k - 1}").join_asof(
            following.sort(f"t{k}"),
            left_on=f"t{k - 1}",
            right_on=f"t{k}",
            by="visitor_id",
            strategy="forward",
        )
        still = still & pl.col(f"t{k}").is_not_null() & (pl.col(f"t{k}") - pl.col("t1") <= window_us)
        level = level + still.cast(pl.Int32)
    people = chain.group_by("visitor_id").agg(level.max().alias("level")).group_by("level").len().collect()
    by_level = dict(zip(people["level"].to_list(), people["len"].to_list(), strict=True))
    return [sum(n for level, n in by_level.items() if level >= k) for k in range(1, len(steps) + 1)]


def chdb_retention(glob: str, periods: int) -> dict[str, list[int]]:
    """Weekly cohorts by first event, people active in each week after, with ClickHouse's retention."""
    import chdb

    weeks = ", ".join(f"week = cohort + {7 * n}" for n in range(periods + 1))
    answer = chdb.query(
        f"""WITH firsts AS (
            SELECT visitor_id, toMonday(min(assumeNotNull(ts))) AS cohort FROM file('{glob}', Parquet) GROUP BY visitor_id
        )
        SELECT cohort, sumForEach(r) FROM (
            SELECT visitor_id, cohort, retention({weeks}) AS r
            FROM (SELECT visitor_id, toMonday(assumeNotNull(ts)) AS week FROM file('{glob}', Parquet)) AS e
            JOIN firsts AS f USING (visitor_id)
            GROUP BY visitor_id, cohort)
        GROUP BY cohort ORDER BY cohort""",
        "CSV",
    )
    grid = {}
    for line in str(answer).split():
        cohort, cells = line.split(",", 1)
        grid[cohort.strip('"')] = [int(cell) for cell in cells.strip('"[]').split(",")]
    return grid


def polars_retention(files: list[str], periods: int) -> dict[str, list[int]]:
    """The same weekly retention in plain polars: distinct (visitor, week), each visitor's first week."""
    import polars as pl

    weeks = pl.scan_parquet(files).select("visitor_id", pl.col("ts").dt.truncate("1w").alias("week")).unique()
    firsts = weeks.group_by("visitor_id").agg(pl.col("week").min().alias("cohort"))
    counts = (
        weeks.join(firsts, on="visitor_id")
        .with_columns(((pl.col("week") - pl.col("cohort")).dt.total_days() // 7).alias("period"))
        .filter(pl.col("period") <= periods)
        .group_by("cohort", "period")
        .len()
        .collect()
    )
    grid: dict[str, list[int]] = {}
    for cohort, period, people in counts.iter_rows():
        grid.setdefault(cohort.date().isoformat(), [0] * (periods + 1))[period] = people
    return dict(sorted(grid.items()))


def _ratios(table: dict[str, Any], ours: str) -> dict[str, float]:
    return {
        f"{ours}/{name}": round(table[ours]["seconds"] / figures["seconds"], 2)
        for name, figures in table.items()
        if name not in (ours, "machine")
    }


# --- the lake the cases read -------------------------------------------------------------------------


@dataclass(frozen=True)
class Bench:
    """What the cases read: the engine over the lake, SITE's files (for chDB and polars), the range's
    last day, the site of the orders, the runs per figure and what to skip, and how much search and
    attribution traffic the lake holds."""

    engine: Engine
    lake: Lake
    files: list[str]
    glob: str
    last: date
    orders_site: str
    runs: int
    skip: frozenset[str]
    search_events: int
    attribution_events: int


def open_lake(args: argparse.Namespace) -> tuple[Bench, dict[str, Any]]:
    """The lake of ``--lake`` (generated when it holds no events), its engine with the visitor activity
    rolled up, and the report's first part: the machine, the command and what the lake holds."""
    visitors = args.visitors or max(1, args.events // 20)
    root = args.lake or Path(tempfile.mkdtemp(prefix="aisle-queries-bench-"))
    lake = Lake(root / "lake")
    began = time.perf_counter()
    written = (
        None
        if lake.live_files(EVENTS)
        else generate(
            lake,
            events=args.events,
            days=args.days,
            visitors=visitors,
            orders_site=SITE if args.orders_on_events_site else ORDERS_SITE,
            search_events=args.events // 10 if args.search_events is None else args.search_events,
            attribution_events=args.events // 10
            if args.attribution_events is None
            else args.attribution_events,
        )
    )
    prepared = time.perf_counter() - began
    # chDB and polars read SITE's files (not the search traffic's).
    files = [str(f) for f in lake.live_files(EVENTS, site_id=SITE)]
    glob = str(root / "lake" / "events" / f"site_id={SITE}" / "date=*" / "*.parquet")
    engine = Engine(lake, threads=os.cpu_count() or 2)
    # What the compaction job does next on a live lake: roll up the visitor activity of ended months.
    began = time.perf_counter()
    rolled_up = visitor_activity.refresh(engine, {SITE: "UTC"})
    report: dict[str, Any] = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": " ".join(["bench/queries_bench.py", *sys.argv[1:]]),
        "events": written,
        "files": len(files),
        "prepareSeconds": round(prepared, 1),
        "rollupMonthsBuilt": rolled_up,
        "rollupSeconds": round(time.perf_counter() - began, 1),
    }
    report.update(lake_contents(engine, lake, counted=written is None))
    bench = Bench(
        engine=engine,
        lake=lake,
        files=files,
        glob=glob,
        last=FIRST + timedelta(days=args.days - 1),
        orders_site=SITE if report["ordersSite"] == "the events' site" else ORDERS_SITE,
        runs=args.runs,
        skip=frozenset(filter(None, args.skip.split(","))),
        search_events=report["searchEvents"],
        attribution_events=report["attributionEvents"]["events"],
    )
    return bench, report


def lake_contents(engine: Engine, lake: Lake, *, counted: bool) -> dict[str, Any]:
    """What a lake holds: SITE's events (when ``counted``: a reused lake), the search and attribution
    traffic, and which site the orders are on."""
    report: dict[str, Any] = {}
    if counted:
        report["events"] = (
            engine.cursor().sql(f"SELECT count(*) FROM events WHERE site_id = '{SITE}'").fetchall()[0][0]
        )
    search_counts = (
        engine.cursor()
        .sql(
            f"SELECT count(*), count(*) FILTER (WHERE name = 'search_query') FROM events WHERE site_id = '{SEARCH_SITE}'"
        )
        .fetchall()[0]
    )
    report["searchEvents"], report["searchQueryEvents"] = search_counts
    report["searchFiles"] = len(lake.live_files(EVENTS, site_id=SEARCH_SITE))
    attribution_counts = (
        engine.cursor()
        .sql(
            f"""SELECT count(*), count(*) FILTER (WHERE entity_id IS NOT NULL),
                count(*) FILTER (WHERE name = 'purchase'),
                count(*) FILTER (WHERE name = 'purchase' AND metadata IS NOT NULL),
                count(DISTINCT lower(entity_type) || '/' || entity_id)
            FROM events WHERE site_id = '{ATTRIBUTION_SITE}'"""
        )
        .fetchall()[0]
    )
    names = ["events", "touchpoints", "purchaseEvents", "purchaseEventsNamingOrders", "entities"]
    report["attributionEvents"] = dict(zip(names, attribution_counts, strict=True))
    report["attributionEvents"]["sales"], report["attributionEvents"]["refunds"] = (
        engine.cursor()
        .sql(
            "SELECT count(*) FILTER (WHERE NOT is_refund), count(*) FILTER (WHERE is_refund) "
            f"FROM orders WHERE site_id = '{ATTRIBUTION_SITE}'"
        )
        .fetchall()[0]
    )
    report["attributionFiles"] = len(lake.live_files(EVENTS, site_id=ATTRIBUTION_SITE))
    orders_sites = [row[0] for row in engine.cursor().sql("SELECT DISTINCT site_id FROM orders").fetchall()]
    report["ordersSite"] = "the events' site" if orders_sites == [SITE] else "a site of their own"
    return report


def _timed(
    bench: Bench, call: Callable[[], Any], describe: Callable[[Any], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``call`` measured over the bench's runs: its figures, what ``describe`` says of its (last) answer,
    and the machine's load before it."""
    load = _load()
    figures, answer = measure(call, bench.runs)
    return {**figures, **(describe(answer) if describe else {}), "machine": load}


def _first(items: list[Any], *names: str) -> dict[str, Any] | None:
    """The named fields of the first item (a row or an object); None when there is none."""
    if not items:
        return None
    first = items[0]
    return {name: first[name] if isinstance(first, dict) else getattr(first, name) for name in names}


# --- the cases: one per measured query ------------------------------------------------------------


def funnel_case(bench: Bench) -> dict[str, Any]:
    """The 4-step funnel over SITE, side by side with chDB's windowFunnel and polars; counts must match."""
    window_us = WINDOW_SECONDS * 1_000_000
    funnel_query = FunnelQuery(
        site_id=SITE, steps=tuple(STEPS), start_date=FIRST, end_date=bench.last, window_seconds=WINDOW_SECONDS
    )
    candidates = {"aisle": lambda: [s.count for s in funnel(bench.engine, funnel_query).steps]}
    if "chdb" not in bench.skip:
        candidates["chdb windowFunnel"] = lambda: chdb_funnel(bench.glob, STEPS, window_us)
    if "polars" not in bench.skip:
        candidates["polars"] = lambda: polars_funnel(bench.files, STEPS, window_us)
    table, results = side_by_side(candidates, bench.runs)
    parity = len({tuple(r) for r in results.values()}) == 1
    return {**table, "ratios": _ratios(table, "aisle"), "counts": results, "parity": parity}


def cohort_case(bench: Bench) -> dict[str, Any]:
    """Weekly retention of first-visit cohorts over SITE, side by side with chDB's retention and polars."""
    cohort_query = CohortQuery(
        site_id=SITE,
        cohort_type="first_visit",
        interval="week",
        start_date=FIRST,
        end_date=bench.last,
        period_count=PERIODS,
    )

    def ours_retention() -> dict[str, list[int]]:
        rows = cohort_report(bench.engine, cohort_query, now=NOW)["retention"]["rows"]
        return {row["cohort"]: [cell["retainedUsers"] for cell in row["periods"]] for row in rows}

    candidates = {"aisle": ours_retention}
    if "chdb" not in bench.skip:
        candidates["chdb retention"] = lambda: chdb_retention(bench.glob, PERIODS)
    if "polars" not in bench.skip:
        candidates["polars"] = lambda: polars_retention(bench.files, PERIODS)
    table, results = side_by_side(candidates, bench.runs)
    parity = all(r == results["aisle"] for r in results.values())
    return {**table, "ratios": _ratios(table, "aisle"), "grid": results["aisle"], "parity": parity}


def journey_stats_case(bench: Bench) -> dict[str, Any]:
    """Journey stats over SITE's whole range."""
    return _timed(
        bench,
        lambda: journey_stats(
            bench.engine, JourneyRange(site_id=SITE, start_date=FIRST, end_date=bench.last)
        ),
    )


def overview_case(bench: Bench) -> dict[str, Any]:
    """The overview of SITE's whole range."""
    return _timed(bench, lambda: overview(bench.engine, Scope((SITE,), FIRST, bench.last)))


def category_conversion_case(bench: Bench) -> dict[str, Any]:
    """Category conversion over every category: product events and order lines of the whole range (the
    generated events name no category, so they all count under `unknown`)."""
    category_query = CategoryQuery(site_id=SITE, start_date=FIRST, end_date=bench.last)
    return _timed(
        bench,
        lambda: category_conversion(bench.engine, category_query),
        lambda answer: {
            "viewers": answer.metrics.viewers,
            "productViewers": answer.metrics.product_viewers,
            "orders": answer.metrics.orders,
        },
    )


def revenue_overview_case(bench: Bench) -> dict[str, Any]:
    """Sales per currency and per day over the whole range: the orders of their site."""
    revenue_range = ReportRange(bench.orders_site, FIRST, bench.last)
    return _timed(
        bench,
        lambda: revenue_overview(bench.engine, revenue_range, site_currency="EUR"),
        lambda answer: {"orders": sum(row.orders for row in answer.revenue_by_currency)},
    )


def associations_case(source: str, mode: str) -> Callable[[Bench], dict[str, Any]]:
    """One product's associations over the whole range, for one kind of basket: the most popular
    product (the most baskets to read), for carts (SITE's add_to_cart events) or orders (their site).
    The product is named by code and id: queries before product ids read the code, later ones the id."""

    def case(bench: Bench) -> dict[str, Any]:
        site = SITE if source == "cart" else bench.orders_site
        product = {"product_id": str(product_id_for(site, "P0")), "product_item_code": "P0", "name": None}
        product_range = ProductRange(site_id=site, start_date=FIRST, end_date=bench.last)
        return _timed(
            bench,
            lambda: product_associations(
                bench.engine, product_range, product=product, source=source, mode=mode, limit=20, names={}
            ),
            lambda answer: {
                "baskets": answer.baskets,
                "productBaskets": answer.product_baskets,
                "relatedProducts": answer.related_products,
            },
        )

    return case


def product_top_case(bench: Bench) -> dict[str, Any]:
    """The ten best-selling products by revenue over the whole range (the SQL of the top route; the route
    also merges new products into the catalog and looks names up, not timed here), with their views and
    add-to-carts when the orders are on the events' site."""
    top_range = ProductRange(site_id=bench.orders_site, start_date=FIRST, end_date=bench.last)
    return _timed(
        bench,
        lambda: top_sales(bench.engine, top_range, sort_by="revenue", limit=10, currency=None),
        lambda rows: {"rows": len(rows), "first": _first(rows, "code", "orders", "views")},
    )


def search_case(
    analysis: Callable[..., Any], describe: Callable[[Any], dict[str, Any]]
) -> Callable[[Bench], dict[str, Any]]:
    """One of the search analyses of the routes over the whole range of SEARCH_SITE (the routes' default
    limit): each builds the session steps of the range (with a day of lookback), then counts per query
    or per product."""

    def case(bench: Bench) -> dict[str, Any]:
        scope = Scope((SEARCH_SITE,), FIRST, bench.last)
        return _timed(bench, lambda: analysis(bench.engine, scope, limit=SEARCH_LIMIT), describe)

    return case


def _top_queries(answer: Any) -> dict[str, Any]:
    return {
        "totalSearches": answer.total_searches,
        "totalQueries": answer.total_queries,
        "zeroResultRate": answer.zero_result_rate,
        "rows": len(answer.queries),
        "first": _first(answer.queries, "query", "searches", "people", "clicks"),
    }


def _zero_result_queries(answer: Any) -> dict[str, Any]:
    return {
        "totalZeroResultSearches": answer.total_zero_result_searches,
        "totalQueries": answer.total_queries,
        "rows": len(answer.queries),
        "first": _first(answer.queries, "query", "zero_result_searches", "searches"),
    }


def _top_products(answer: Any) -> dict[str, Any]:
    return {
        "totalClicks": answer.total_clicks,
        "rows": len(answer.products),
        "first": _first(answer.products, "product_item_code", "clicks", "queries"),
    }


def attribution_case(
    analysis: Callable[[Engine, ReportRange], Any], describe: Callable[[Any], dict[str, Any]]
) -> Callable[[Bench], dict[str, Any]]:
    """One attribution analysis over the whole range of ATTRIBUTION_SITE (30-day lookback, the routes'
    default)."""

    def case(bench: Bench) -> dict[str, Any]:
        attribution_range = ReportRange(ATTRIBUTION_SITE, FIRST, bench.last)
        return _timed(bench, lambda: analysis(bench.engine, attribution_range), describe)

    return case


def _revenue(model: Any) -> dict[str, Any]:
    return {
        "conversions": model.conversions,
        "revenue": {c.currency: c.revenue for c in model.revenue_by_currency},
    }


def _entity_revenue(answer: Any) -> dict[str, Any]:
    """The revenue of one popular entity: its credits and its counts."""
    return {
        "entity": "campaign/campaign-00",
        "impressions": answer.impressions,
        "clicks": answer.clicks,
        "people": answer.people,
        "assistedConversions": answer.assisted_conversions,
        **{m.model: _revenue(m) for m in answer.models if m.model in ("last_touch", "linear")},
    }


def _attributed_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The credited rows of every campaign (entity_revenue takes one entity; attributed_rows with no id
    is what it reads for a kind)."""
    return {
        "rows": len(rows),
        "entities": len({r["entity_id"] for r in rows}),
        "touchedConversions": sum(r["touched_conversions"] for r in rows),
        "lastTouchConversions": round(sum(r["last_touch_conversions"] for r in rows), 3),
        "lastTouchRevenueEUR": str(sum(r["last_touch_revenue"] for r in rows if r["currency"] == "EUR")),
    }


def _touchpoint_counts(counts: list[dict[str, Any]]) -> dict[str, Any]:
    """The touchpoint counts of every entity."""
    return {
        "entities": len(counts),
        "impressions": sum(c["impressions"] for c in counts),
        "clicks": sum(c["clicks"] for c in counts),
        "first": _first(counts, "entity_type", "entity_id", "impressions", "clicks", "people"),
    }


def _recommendations_breakdown(answer: Any) -> dict[str, Any]:
    """Counts and credits of every recommendation, last touch."""
    first = answer.recommendations[0] if answer.recommendations else None
    return {
        "recommendations": answer.total,
        "impressions": answer.impressions,
        "clicks": answer.clicks,
        "attributedConversions": answer.attributed_conversions,
        "revenue": {c.currency: c.revenue for c in answer.revenue_by_currency},
        "first": None
        if first is None
        else {
            "id": first.recommendation_id,
            "clicks": first.clicks,
            "assistedConversions": first.assisted_conversions,
            "attributedConversions": first.attributed_conversions,
        },
    }


@dataclass(frozen=True)
class Case:
    """A measured query: the group ``--skip`` names it by, where its figures go in the report (a section,
    and the entry within it for a section of several), and the case."""

    group: str
    section: str
    entry: str | None
    run: Callable[[Bench], dict[str, Any]]


# The cases in the order they run and report.
CASES = [
    Case("funnel", "funnel4Steps", None, funnel_case),
    Case("cohort", "cohortWeekly12", None, cohort_case),
    Case("journeys", "journeyStats", None, journey_stats_case),
    Case("overview", "overview", None, overview_case),
    Case("categories", "categoryConversion", None, category_conversion_case),
    Case("revenue", "revenueOverview", None, revenue_overview_case),
    *(
        Case("associations", "associations", f"{source}/{mode}", associations_case(source, mode))
        for source in ("cart", "purchase")
        for mode in ("cart", "session", "all")
    ),
    Case("top", "productTop", None, product_top_case),
    Case("search", "search", "topQueries", search_case(top_queries, _top_queries)),
    Case("search", "search", "zeroResultQueries", search_case(zero_result_queries, _zero_result_queries)),
    Case("search", "search", "topProducts", search_case(top_products, _top_products)),
    Case(
        "attribution",
        "attribution",
        "entityRevenueOne",
        attribution_case(
            partial(entity_revenue, entity_type="campaign", entity_id="campaign-00", site_currency="EUR"),
            _entity_revenue,
        ),
    ),
    Case(
        "attribution",
        "attribution",
        "attributedRowsCampaigns",
        attribution_case(partial(attributed_rows, entity_type="campaign", entity_id=None), _attributed_rows),
    ),
    Case(
        "attribution",
        "attribution",
        "touchpointCounts",
        attribution_case(partial(touchpoint_counts, entity_type=None, entity_id=None), _touchpoint_counts),
    ),
    Case(
        "attribution",
        "attribution",
        "recommendationsBreakdown",
        attribution_case(partial(recommendations_breakdown, site_currency="EUR"), _recommendations_breakdown),
    ),
]
# What --skip also takes: the engines compared with ours by the funnel and cohort cases.
COMPARED = ("polars", "chdb")
# Sections written to stderr as soon as they are complete (the report comes at the end).
ECHOED = ("funnel4Steps", "cohortWeekly12", "search", "attribution")


def run_cases(bench: Bench, report: dict[str, Any]) -> None:
    """The cases ``--skip`` leaves, their figures into ``report``. A lake built before the bench generated
    search or attribution traffic says so in place of those sections."""
    traffic = {"search": bench.search_events, "attribution": bench.attribution_events}
    for index, case in enumerate(CASES):
        if case.group in bench.skip:
            continue
        if traffic.get(case.group) == 0:
            report[case.section] = (
                f"not run: no {case.group} traffic in this lake (built before the bench generated it)"
            )
            continue
        figures = case.run(bench)
        if case.entry is None:
            report[case.section] = figures
        else:
            report.setdefault(case.section, {})[case.entry] = figures
        last_of_section = index + 1 == len(CASES) or CASES[index + 1].section != case.section
        if case.section in ECHOED and last_of_section:
            print(json.dumps({case.section: report[case.section]}, default=str), file=sys.stderr, flush=True)


# --- the run ------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=28)
    parser.add_argument("--visitors", type=int, help="default: one per 20 events")
    parser.add_argument(
        "--search-events",
        type=int,
        help="about this many events of search traffic on a site of their own (default: EVENTS/10); "
        "a reused lake keeps the search traffic it was built with",
    )
    parser.add_argument(
        "--attribution-events",
        type=int,
        help="about this many events of attribution traffic (with its orders) on a site of their own "
        "(default: EVENTS/10); a reused lake keeps the attribution traffic it was built with",
    )
    parser.add_argument("--lake", type=Path, help="keep the lake here; reuse it when it holds events")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--orders-on-events-site",
        action="store_true",
        help="generate the orders on the events' site: product top then counts the views and add-to-carts "
        "of the products sold, but the funnel and retention count orders as purchases (no parity with chDB "
        "and polars). A reused lake keeps the site its orders were generated on",
    )
    parser.add_argument(
        "--skip",
        default="",
        help=f"comma-separated: {', '.join([*dict.fromkeys(case.group for case in CASES), *COMPARED])}",
    )
    return parser.parse_args()


def main() -> None:
    bench, report = open_lake(parse_args())
    run_cases(bench, report)
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
