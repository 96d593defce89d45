"""Properties: the category analytics (overview, top, tree, conversion, products, trends, filters, paths)
over random small shops equal a plain-Python reading of their documented rules (the module docstring of
`queries.categories`, the route descriptions of `api/analytics/categories/`, docs/decisions.md), never
of the SQL: paths normalised (spaces around `>`, blank parts dropped, case kept), `unknown` for what
names none, a category covering its subcategories, people as the linked user across devices, money from
the lines of sales per currency, local days of a site whose clocks change inside the range."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from queries.categories import (
    CategoryQuery,
    category_conversion,
    category_filters,
    category_overview,
    category_paths,
    category_products,
    category_tree,
    category_trends,
    top_categories,
)
from tests.queries.helpers import journeys_for
from tests.queries.random_shops import examples, iso, money_text, new_site, open_lake, rate
from warehouse.config_store.product_identity import product_id_for
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

TIMEZONE = "America/New_York"  # clocks go forward at 02:00 on 10 March: a day of 23 hours in the range
ZONE = ZoneInfo(TIMEZONE)
START, END = date(2024, 3, 9), date(2024, 3, 11)
RANGE_START = datetime(2024, 3, 9, tzinfo=ZONE)
RANGE_END = datetime(2024, 3, 12, tzinfo=ZONE)
SITE_CURRENCY = "EUR"


def local(day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(2024, 3, day, hour, minute, second, micro, tzinfo=ZONE)


# The instants a shop acts at: the range's edges and the instants just outside, local midnights, the
# hour the clocks skip, local evenings that are the next UTC day. Few, so ties happen.
MOMENTS = (
    local(8, 23, 59, 59, 999999),  # 0: the last instant before the range
    local(9),  # 1: the range's first instant
    local(9, 10),
    local(9, 19, 30),  # 3: 00:30 UTC on the 10th
    local(9, 23, 59, 59),
    local(10),  # 5
    local(10, 1, 59, 59),  # 6: EST, just before the clocks go forward
    local(10, 3),  # 7: EDT, just after
    local(10, 20, 15),  # 8: 00:15 UTC on the 11th
    local(11),
    local(11, 12),  # 10
    local(11, 23, 59, 59, 999999),  # 11: the range's last instant
    local(12),  # 12: the first instant after the range
    local(12, 9),
    local(8, 12),  # 14
)
MOMENT = st.integers(0, len(MOMENTS) - 1)

VISITORS = ("v0", "v1", "v2", "u0")  # "u0" is also a user id: one namespace of people
USERS = ("u0", "u1")
LOOSE = "0a0b0c0d-0000-4000-8000-0000000000ff"  # a productId no code derives to

# Category paths as shops send them (None: not sent). Normalised: spaces around `>` do not matter,
# blank parts are dropped, case is kept; a path naming no part is none.
SENT_PATHS = (
    None, "", "Home", "Home>Kitchen", "Home > Kitchen", " Home >  Kitchen > Mugs ", "Home>>Kitchen>", "Garden",
    "Homeware", " > ", "home", "Toys > Lego", "Home >\tKitchen", "Garden > Tools",
)  # fmt: skip
ENTITY_IDS = (None, None, "Garden", "Toys > Lego", " ")
EVENT_NAMES = ("category_view",) * 4 + ("category_filter",) * 2 + ("product_view",) * 2 + (
    "product_click", "add_to_cart", "add_to_cart",
)  # fmt: skip
CATEGORY_EVENTS = ("category_view", "category_filter")
EVENT_CODES = ("A", " A ", "B", "C", "E")
# Order lines as sent: the product wire fields, and how the reference knows the product (its code, or
# the productId a code-less line names, filled in per site).
LINE_KINDS = (
    {"productItemCode": "A"},
    {"productItemCode": " C "},
    {"productItemCode": "B", "productId": LOOSE},  # the code names the line
    {"productId": "pid:A"},  # only A's productId: A
    {"productItemCode": "", "productId": "pid:C"},
    {"productId": LOOSE},
)
SELECTIONS = (None, "Home", "Home > Kitchen", "unknown", "Toys", "Garden", "home")

names_strategy = st.fixed_dictionaries(
    {},
    optional={"name": st.sampled_from(["Apple", "Pomme", ""]), "productName": st.sampled_from(["Apfel", ""])},
)
filter_strategy = st.fixed_dictionaries(
    {},
    optional={
        "filterName": st.sampled_from(["color", "size", None, ""]),
        "filterType": st.sampled_from(["price", "color"]),
        "filter": st.sampled_from(["brand", ""]),
        "filterValue": st.sampled_from(["red", "blue", 10, None, ""]),
        "value": st.sampled_from(["L", 10, ""]),
    },
)
event_strategy = st.fixed_dictionaries(
    {
        "visitor": st.sampled_from(VISITORS),
        # Session ids as some trackers make them (a number per visitor), so two visitors may send the same
        # one: the same person's two visitor ids (a new one at login) in one session, or two people.
        "session": st.integers(0, 2),
        "moment": MOMENT,
        "name": st.sampled_from(EVENT_NAMES),
        "path": st.sampled_from(SENT_PATHS),
        "entity": st.sampled_from(ENTITY_IDS),
        "code": st.sampled_from(EVENT_CODES),
        "coded": st.sampled_from([False, False, False, True]),  # a category event carrying a product code
        "names": names_strategy,
        "filter": filter_strategy,
    }
)
line_strategy = st.fixed_dictionaries(
    {
        "path": st.sampled_from(SENT_PATHS),
        "kind": st.integers(0, len(LINE_KINDS) - 1),
        "quantity": st.integers(0, 3),
        "thousandths": st.integers(0, 20_000),
        "name": st.sampled_from([None, "Apple", "", "Tea"]),
    }
)
order_strategy = st.fixed_dictionaries(
    {
        "visitor": st.sampled_from(VISITORS),
        "moment": MOMENT,
        "currency": st.sampled_from(["EUR", "USD", "JPY"]),
        "refund": st.sampled_from([False, False, False, True]),
        "user": st.sampled_from([None, None, None, "u1"]),
        "lines": st.lists(line_strategy, min_size=1, max_size=3),
    }
)
# Visitors identified as a user (v0 and v1 may be one person on two devices), before or after their
# events, in the range or not.
links_strategy = st.dictionaries(st.sampled_from(VISITORS), st.tuples(st.sampled_from(USERS), MOMENT))


# --- the shop: what is sent, and the facts the reference reads ----------------------------------------


def normalised(path: str | None) -> str | None:
    """The path's parts (split at `>`, blanks trimmed, blank parts dropped) joined by ` > `; None when
    no part is left."""
    parts = [part.strip() for part in (path or "").split(">")]
    return " > ".join(part for part in parts if part) or None


def event_path(e: dict) -> str:
    """category_view and category_filter: their categoryPath, else entityId; product events: their
    categoryPath; `unknown` when that names no category."""
    if e["name"] in CATEGORY_EVENTS:
        return normalised(e["path"]) or normalised(e["entity"]) or "unknown"
    return normalised(e["path"]) or "unknown"


def build_shop(site: str, events: list[dict], orders: list[dict], links: dict) -> dict:
    """The lake's steps per visitor, and the facts: events and orders with their times, normalised
    paths, products and people."""
    steps: dict[str, list[dict]] = defaultdict(list)
    linked: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    for visitor, (user, moment) in links.items():
        steps[visitor].append({"event": "identify", "at": iso(MOMENTS[moment]), "sessionId": f"{visitor}-id",
                               "userId": user})  # fmt: skip
        linked[visitor].append((MOMENTS[moment], user))
    facts_events, facts_orders = [], []
    for n, e in enumerate(events):
        event_id = f"e{n:03d}"
        session = f"s{e['session']}"
        is_category = e["name"] in CATEGORY_EVENTS
        metadata: dict[str, Any] = {}
        if e["path"] is not None:
            metadata["categoryPath"] = e["path"]
        code = None
        if not is_category or e["coded"]:
            code = e["code"].strip()
            metadata["productItemCode"] = e["code"]
            metadata |= e["names"]
        if e["name"] == "category_filter":
            metadata |= e["filter"]
        step = {"event": e["name"], "at": iso(MOMENTS[e["moment"]]), "sessionId": session, "eventId": event_id,
                "metadata": metadata}  # fmt: skip
        if is_category and e["entity"] is not None:
            step["entityId"] = e["entity"]
        steps[e["visitor"]].append(step)
        facts_events.append({**e, "id": event_id, "at": MOMENTS[e["moment"]], "session": session,
                             "category": event_path(e), "code": code, "metadata": metadata})  # fmt: skip
    for n, o in enumerate(orders):
        order_id = f"o{n:02d}"
        items, lines = [], []
        for index, line in enumerate(o["lines"]):
            wire = {k: (str(product_id_for(site, v[4:])) if str(v).startswith("pid:") else v)
                    for k, v in LINE_KINDS[line["kind"]].items()}  # fmt: skip
            code = (wire.get("productItemCode") or "").strip() or None
            quantity = -line["quantity"] if o["refund"] else line["quantity"]
            price = Decimal(line["thousandths"]).scaleb(-3)
            item = {**wire, "quantity": quantity, "price": str(price)}
            if line["path"] is not None:
                item["categoryPath"] = line["path"]
            if line["name"] is not None:
                item["name"] = line["name"]
            items.append(item)
            lines.append({"category": normalised(line["path"]) or "unknown", "code": code,
                          "product": str(product_id_for(site, code)) if code else wire["productId"],
                          "quantity": quantity, "price": price, "name": line["name"], "index": index})  # fmt: skip
        total = sum((line["quantity"] * line["price"] for line in lines), Decimal(0))
        step = {"order": order_id, "at": iso(MOMENTS[o["moment"]]), "sessionId": f"{o['visitor']}-s0",
                "currency": o["currency"], "total": str(total), "isRefund": o["refund"], "items": items}  # fmt: skip
        if o["user"]:
            step["userId"] = o["user"]
            linked[o["visitor"]].append((MOMENTS[o["moment"]], o["user"]))
        steps[o["visitor"]].append(step)
        facts_orders.append({**o, "order_id": order_id, "at": MOMENTS[o["moment"]], "lines": lines})
    # A visitor is the user it was first linked to (at any time; of two at one instant the smaller id).
    person = {v: min(linked[v])[1] if linked[v] else v for v in VISITORS}
    return {
        "site": site,
        "steps": dict(steps),
        "events": facts_events,
        "orders": facts_orders,
        "person": person,
    }


# --- the reference --------------------------------------------------------------------------------------


def in_range(at: datetime) -> bool:
    return RANGE_START <= at < RANGE_END


def covers(selected: str | None, path: str) -> bool:
    """A category covers itself and every path below it."""
    return selected is None or path == selected or path.startswith(selected + " > ")


def ancestors(path: str) -> list[str]:
    """The path and each of its ancestors: `A > B` → `A`, `A > B`."""
    parts = path.split(" > ")
    return [" > ".join(parts[:i]) for i in range(1, len(parts) + 1)]


class Selection:
    """What a report over one category subtree reads: the range's category and product events naming
    it, and the lines of the range's sales naming it that bought something."""

    def __init__(self, shop: dict, selected: str | None) -> None:
        self.shop = shop
        self.selected = selected
        self.person = shop["person"]
        self.events = [e for e in shop["events"] if in_range(e["at"]) and covers(selected, e["category"])]
        self.lines = [
            (o, line) for o in shop["orders"] if in_range(o["at"]) and not o["refund"]
            for line in o["lines"] if line["quantity"] > 0 and covers(selected, line["category"])
        ]  # fmt: skip

    def who(self, row: dict) -> str:
        return self.person[row["visitor"]]


def revenue_rows(lines: Iterable[tuple[dict, dict]]) -> list[dict]:
    """Per currency: the lines' unit price × quantity, the orders holding one, and the average per order."""
    amounts: dict[str, Fraction] = defaultdict(Fraction)
    orders: dict[str, set[str]] = defaultdict(set)
    for o, line in lines:
        amounts[o["currency"]] += Fraction(line["price"]) * line["quantity"]
        orders[o["currency"]].add(o["order_id"])
    return [
        {"currency": c, "revenue": money_text(amounts[c], c), "orders": len(orders[c]),
         "avgOrderValue": money_text(amounts[c] / len(orders[c]), c)}
        for c in sorted(amounts)
    ]  # fmt: skip


def card(rows: list[dict]) -> dict:
    if not rows:
        return {"amount": money_text(0, SITE_CURRENCY), "currency": SITE_CURRENCY, "mixed": False}
    if len(rows) == 1:
        return {"amount": rows[0]["revenue"], "currency": rows[0]["currency"], "mixed": False}
    return {"amount": None, "currency": None, "mixed": True}


def node_metrics(sel: Selection, names: Callable[[str], bool]) -> dict:
    """The activity of the events and lines whose path `names` accepts."""
    events = [e for e in sel.events if names(e["category"])]
    lines = [(o, line) for o, line in sel.lines if names(line["category"])]

    def count(name: str) -> int:
        return sum(1 for e in events if e["name"] == name)

    return {
        "categoryViews": count("category_view"),
        "viewers": len({sel.who(e) for e in events if e["name"] == "category_view"}),
        "filterUses": count("category_filter"),
        "productViews": count("product_view"),
        "addToCarts": count("add_to_cart"),
        "orders": len({o["order_id"] for o, _ in lines}),
        "unitsSold": sum(line["quantity"] for _, line in lines),
        "buyers": len({sel.who(o) for o, _ in lines}),
        "revenueByCurrency": revenue_rows(lines),
    }


def named_paths(sel: Selection) -> set[str]:
    return {e["category"] for e in sel.events} | {line["category"] for _, line in sel.lines}


def reference_top(sel: Selection, limit: int) -> list[dict]:
    """Paths as named (no roll-up), most viewed first, then most orders, then by path."""
    rows = []
    for path in named_paths(sel):
        parent = path.rpartition(" > ")[0] or None
        rows.append({"categoryPath": path, "parentPath": parent, "depth": len(path.split(" > ")),
                     **node_metrics(sel, lambda p, path=path: p == path)})  # fmt: skip
    rows.sort(key=lambda r: (-r["categoryViews"], -r["orders"], r["categoryPath"]))
    return rows[:limit]


def reference_overview(sel: Selection) -> dict:
    views = [e for e in sel.events if e["name"] == "category_view"]
    revenue = revenue_rows(sel.lines)
    totals = node_metrics(sel, lambda _: True)
    return {
        "totals": {
            "categoryViews": totals["categoryViews"],
            "viewers": totals["viewers"],
            "sessions": len({(sel.who(e), e["session"]) for e in views}),  # a person's session id
            "filterUses": totals["filterUses"],
            "productViews": totals["productViews"],
            "addToCarts": totals["addToCarts"],
            "categories": len(named_paths(sel)),
            "orders": totals["orders"],
            "unitsSold": totals["unitsSold"],
        },
        "revenueByCurrency": revenue,
        "revenue": card(revenue),
        "topCategories": reference_top(sel, 5),
    }


def reference_conversion(sel: Selection) -> dict:
    def people(name: str) -> set[str]:
        return {sel.who(e) for e in sel.events if e["name"] == name}

    first_view: dict[str, datetime] = {}
    for e in sel.events:
        if e["name"] == "category_view":
            who = sel.who(e)
            first_view[who] = min(first_view.get(who, e["at"]), e["at"])
    converted = {
        sel.who(o) for o, _ in sel.lines if sel.who(o) in first_view and o["at"] >= first_view[sel.who(o)]
    }
    revenue = revenue_rows(sel.lines)
    return {
        "viewers": len(first_view),
        "productViewers": len(people("product_view")),
        "cartAdders": len(people("add_to_cart")),
        "buyers": len({sel.who(o) for o, _ in sel.lines}),
        "convertedViewers": len(converted),
        "conversionRate": rate(len(converted), len(first_view)),
        "orders": len({o["order_id"] for o, _ in sel.lines}),
        "unitsSold": sum(line["quantity"] for _, line in sel.lines),
        "revenueByCurrency": revenue,
        "revenue": card(revenue),
    }


def reference_tree(sel: Selection) -> list[dict]:
    """Every path named and its ancestors inside the selection, a parent before its children (siblings
    by name); `own` what names the path, `total` what names it or a path below it."""
    nodes = {a for path in named_paths(sel) for a in ancestors(path) if covers(sel.selected, a)}
    return [
        {"categoryPath": path, "parentPath": path.rpartition(" > ")[0] or None, "depth": len(path.split(" > ")),
         "own": node_metrics(sel, lambda p, path=path: p == path),
         "total": node_metrics(sel, lambda p, path=path: covers(path, p))}
        for path in sorted(nodes, key=lambda p: p.split(" > "))
    ]  # fmt: skip


PRODUCT_EVENTS = ("product_view", "product_click", "add_to_cart")


def reference_products(sel: Selection, limit: int) -> list[dict]:
    """Products viewed, clicked, added or sold in the selection, keyed by productId (a code's id; a
    code-less line's productId), most viewed first, then most orders, then by code (products without
    one last), then id. The name: the latest non-empty name (or productName) of its events there, else
    of its lines there."""
    site = sel.shop["site"]
    events = [e for e in sel.events if e["name"] in PRODUCT_EVENTS]
    key_of = {e["id"]: str(product_id_for(site, e["code"])) for e in events}
    codes: dict[str, str] = {}
    for e in events:
        codes[key_of[e["id"]]] = e["code"]
    for _, line in sel.lines:
        if line["code"]:
            codes[line["product"]] = line["code"]
    products = set(key_of.values()) | {line["product"] for _, line in sel.lines}
    rows = []
    for p in products:
        mine = [e for e in events if key_of[e["id"]] == p]
        lines = [(o, line) for o, line in sel.lines if line["product"] == p]
        viewed: dict[str, datetime] = {}
        for e in mine:
            if e["name"] == "product_view":
                viewed[sel.who(e)] = min(viewed.get(sel.who(e), e["at"]), e["at"])
        bought = {sel.who(o) for o, _ in lines if sel.who(o) in viewed and o["at"] >= viewed[sel.who(o)]}
        event_names = [((e["at"], e["id"]), e["metadata"].get("name") or e["metadata"].get("productName"))
                       for e in mine]  # fmt: skip
        line_names = [((o["at"], o["order_id"], line["index"]), line["name"]) for o, line in lines]
        name = max(((k, n) for k, n in event_names if n), default=None) or max(
            ((k, n) for k, n in line_names if n), default=None
        )
        rows.append({
            "productId": p, "productItemCode": codes.get(p), "name": name[1] if name else None,
            "views": sum(1 for e in mine if e["name"] == "product_view"), "viewers": len(viewed),
            "clicks": sum(1 for e in mine if e["name"] == "product_click"),
            "addToCarts": sum(1 for e in mine if e["name"] == "add_to_cart"),
            "orders": len({o["order_id"] for o, _ in lines}), "unitsSold": sum(line["quantity"] for _, line in lines),
            "buyers": len({sel.who(o) for o, _ in lines}), "viewersWhoBought": len(bought),
            "viewToPurchaseRate": rate(len(bought), len(viewed)), "revenueByCurrency": revenue_rows(lines),
        })  # fmt: skip
    rows.sort(key=lambda r: (-r["views"], -r["orders"], r["productItemCode"] is None, r["productItemCode"] or "",
                             r["productId"]))  # fmt: skip
    return rows[:limit]


def reference_trends(sel: Selection) -> list[dict]:
    """Every local day of the range, zero days too."""
    days = []
    day = START
    while day <= END:
        events = [e for e in sel.events if e["at"].astimezone(ZONE).date() == day]
        lines = [(o, line) for o, line in sel.lines if o["at"].astimezone(ZONE).date() == day]
        views = [e for e in events if e["name"] == "category_view"]
        days.append({
            "date": day.isoformat(), "categoryViews": len(views), "viewers": len({sel.who(e) for e in views}),
            "productViews": sum(1 for e in events if e["name"] == "product_view"),
            "addToCarts": sum(1 for e in events if e["name"] == "add_to_cart"),
            "orders": len({o["order_id"] for o, _ in lines}), "revenueByCurrency": revenue_rows(lines),
        })  # fmt: skip
        day += timedelta(days=1)
    return days


def text(value: Any) -> str | None:
    """A metadata value as text (a number as written); None for none (an empty text names nothing)."""
    return None if value is None or value == "" else str(value)


def reference_filters(sel: Selection, limit: int) -> dict:
    """category_filter uses: filterName, else filterType, else filter (`unknown`); filterValue, else
    value (None). Per filter and value: uses, people, distinct paths; most used first."""
    groups: dict[tuple[str, str | None], list[dict]] = defaultdict(list)
    for e in sel.events:
        if e["name"] != "category_filter":
            continue
        m = e["metadata"]
        name = text(m.get("filterName")) or text(m.get("filterType")) or text(m.get("filter")) or "unknown"
        value = text(m.get("filterValue")) or text(m.get("value"))
        groups[(name, value)].append(e)
    rows = [
        {"filter": f, "value": v, "uses": len(uses), "people": len({sel.who(e) for e in uses}),
         "categories": len({e["category"] for e in uses})}
        for (f, v), uses in groups.items()
    ]  # fmt: skip
    rows.sort(key=lambda r: (-r["uses"], r["filter"], r["value"] is not None, r["value"] or ""))
    return {"totalUses": sum(r["uses"] for r in rows), "filters": rows[:limit]}


def reference_paths(shop: dict, selected: str | None, limit: int) -> list[dict]:
    """Each session's (a person's session id) category views in the range in time order (ties by event
    id), repeats in a row folded, each step to the next view; steps with either end in the selection.
    `share`: the step's part of every step leaving its `fromPath`."""
    sessions: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for e in shop["events"]:
        if e["name"] == "category_view" and in_range(e["at"]):
            sessions[(shop["person"][e["visitor"]], e["session"])].append(e)
    steps: list[tuple[str, str, tuple[str, str]]] = []
    for key, views in sessions.items():
        walked: list[str] = []
        for e in sorted(views, key=lambda e: (e["at"], e["id"])):
            if not walked or walked[-1] != e["category"]:
                walked.append(e["category"])
        steps += [(a, b, key) for a, b in zip(walked, walked[1:], strict=False)]
    leaving: dict[str, int] = defaultdict(int)
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for a, b, key in steps:
        leaving[a] += 1
        pairs[(a, b)].append(key)
    rows = [
        {"fromPath": a, "toPath": b, "transitions": len(keys), "sessions": len(set(keys)),
         "people": len({who for who, _ in keys}), "share": rate(len(keys), leaving[a])}
        for (a, b), keys in pairs.items() if covers(selected, a) or covers(selected, b)
    ]  # fmt: skip
    rows.sort(key=lambda r: (-r["transitions"], r["fromPath"], r["toPath"]))
    return rows[:limit]


# --- the tests ------------------------------------------------------------------------------------------


@contextmanager
def written(
    tmp_path_factory, events: list[dict], orders: list[dict], links: dict
) -> Iterator[tuple[dict, Engine]]:
    """The shop in a lake of its own (a lake of many sites reads slower with each) and an engine over it."""
    ingest, engine = open_lake(tmp_path_factory, "categories")
    try:
        shop = build_shop(new_site(), events, orders, links)
        if shop["steps"]:
            journeys_for(ingest, shop["steps"], site_id=shop["site"])
        yield shop, engine
    finally:
        engine.close()
        ingest.stop()


def query(shop: dict, selected: str | None) -> CategoryQuery:
    return CategoryQuery(site_id=shop["site"], start_date=START, end_date=END, timezone=TIMEZONE,
                         currency=SITE_CURRENCY, category_path=selected)  # fmt: skip


def dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json")


def _event(visitor: str, session: int, moment: int, name: str, path: str | None = None, *, entity: str | None = None,
           code: str = "A", coded: bool = False, names: dict | None = None, filter: dict | None = None) -> dict:  # fmt: skip
    return {"visitor": visitor, "session": session, "moment": moment, "name": name, "path": path, "entity": entity,
            "code": code, "coded": coded, "names": names or {}, "filter": filter or {}}  # fmt: skip


def _line(path: str | None, kind: int, quantity: int, thousandths: int, name: str | None = None) -> dict:
    return {"path": path, "kind": kind, "quantity": quantity, "thousandths": thousandths, "name": name}


def _order(visitor: str, moment: int, currency: str, lines: list[dict], *, refund: bool = False,
           user: str | None = None) -> dict:  # fmt: skip
    return {"visitor": visitor, "moment": moment, "currency": currency, "refund": refund, "user": user,
            "lines": lines}  # fmt: skip


# One shop that has it all, tried first. v0 (identified as u0 after its events) and v1 (before them)
# are one person on two devices; v2 becomes u1 through an order; the visitor "u0" is never identified,
# so it is the person u0 too, and their session s0 is one (as a visitor id changing at login within a
# session is); v2's s0 is another person's. Paths spelled every way (`Home>Kitchen`, blank parts, a
# tab, ` > `, lower case, nothing, entityId only, `Homeware` beside `Home`, `Toys > Lego` without a
# `Toys` of its own); views folded and tied in a session; views and orders just outside the range;
# filters under every key, empty ones too; product names empty, from productName, from lines only; a
# category view carrying a product code; sales in EUR, USD and JPY with lines of several categories,
# of quantity 0, by productId only; a refund; a purchase before the buyer's first view and one at the
# instant of it; an order at a local evening that is the next UTC day, and either side of the hour the
# clocks skip.
# fmt: off
RICH = {
    "events": [
        _event("v0", 0, 2, "category_view", "Home"),
        _event("v0", 0, 3, "category_view", "Home>Kitchen"),
        _event("v0", 0, 3, "category_view", "Home >\tKitchen"),  # the same path at the same instant: folded
        _event("v0", 0, 4, "category_filter", "Home > Kitchen", filter={"filterName": "color", "filterValue": "red"}),
        _event("v0", 0, 4, "product_view", "Home > Kitchen", code="A", names={"name": "Apple"}),
        _event("v0", 0, 5, "category_filter", "Home",
               filter={"filterName": "", "filterType": "size", "filterValue": "", "value": "L"}),
        _event("v0", 0, 6, "add_to_cart", "Home>>Kitchen>", code=" A ", names={"name": ""}),
        _event("v0", 0, 7, "category_view", " Home >  Kitchen > Mugs "),
        _event("v0", 0, 8, "category_view", "Home"),
        _event("v1", 0, 0, "category_view", "Garden"),  # before the range
        _event("v1", 0, 1, "category_view", "Garden"),
        _event("v1", 0, 1, "category_view", None, entity="Toys > Lego"),
        _event("v1", 0, 2, "category_filter", None, entity="Garden", filter={"filterType": "price", "value": 10}),
        _event("v1", 0, 2, "category_view", "", entity="Garden"),
        _event("v1", 0, 5, "category_view", " > ", entity="Garden"),
        _event("v1", 1, 7, "category_view", "Homeware"),
        _event("v1", 1, 8, "category_view", "home"),
        _event("v1", 1, 9, "product_view", None, code="B", names={"productName": "Bee"}),
        _event("v1", 1, 9, "product_click", "Homeware", code="B"),
        _event("v1", 1, 10, "category_filter", " > ", filter={"filter": "brand", "filterValue": None}),
        _event("v2", 0, 3, "category_view", "Home > Kitchen", coded=True, code="E", names={"name": "Kitchen"}),
        _event("v2", 0, 5, "product_view", "Home > Kitchen", code="C", names={"name": "Cherry"}),
        _event("v2", 0, 10, "product_view", "Home > Kitchen", code="C", names={"name": "", "productName": "Kirsche"}),
        _event("v2", 0, 11, "category_view", "Toys > Lego"),
        _event("v2", 0, 12, "category_view", "Garden > Tools"),  # after the range
        _event("v2", 2, 10, "category_filter", "Garden > Tools",
               filter={"filterName": None, "filterType": "color", "filterValue": "blue"}),
        _event("u0", 0, 9, "category_view", "Home"),
        _event("u0", 0, 9, "add_to_cart", "Home", code="A"),
        _event("u0", 1, 13, "product_view", "Home", code="A"),  # after the range
    ],
    "orders": [
        _order("v0", 6, "EUR", [_line("Home > Kitchen", 0, 2, 4500, "Apple"), _line("Garden", 5, 1, 5000),
                                _line("Home", 1, 0, 9999)]),
        _order("v1", 1, "USD", [_line("Home>Kitchen", 3, 1, 10_000)]),  # before v1's (u0's) first Home view
        _order("v2", 3, "JPY", [_line("Home > Kitchen", 1, 3, 1000_500), _line("Home", 4, 1, 1001_000, "Tea")],
               user="u1"),
        _order("v2", 8, "JPY", [_line(None, 5, 1, 999_000, "Loose")]),
        _order("v2", 5, "EUR", [_line("Toys > Lego", 2, 1, 333)]),  # before v2's first view of Toys
        _order("u0", 9, "EUR", [_line("Home", 0, 1, 1005)]),  # at the instant of u0's view of Home
        _order("v0", 7, "EUR", [_line("Home > Kitchen", 0, 2, 4500)], refund=True),
        _order("v0", 12, "EUR", [_line("Home", 0, 1, 100)]),  # after the range
        _order("v1", 0, "USD", [_line("Home", 0, 1, 100)]),  # before it
    ],
    "links": {"v0": ("u0", 13), "v1": ("u0", 14)},
}
# fmt: on

events_strategy = st.lists(event_strategy, min_size=4, max_size=24)
orders_strategy = st.lists(order_strategy, max_size=6)
selection_strategy = st.sampled_from(SELECTIONS)


@examples(20)
@example(**RICH, selected="Home", limit=3)
@example(**RICH, selected="Toys", limit=2)
@given(events=events_strategy, orders=orders_strategy, links=links_strategy, selected=selection_strategy,
       limit=st.integers(1, 4))  # fmt: skip
def test_overview_top_tree_and_conversion_match_the_reference(
    tmp_path_factory, events, orders, links, selected, limit
):
    with written(tmp_path_factory, events, orders, links) as (shop, engine):
        check_overview_top_tree_and_conversion(shop, engine, selected, limit)


def check_overview_top_tree_and_conversion(
    shop: dict, engine: Engine, selected: str | None, limit: int
) -> None:
    for chosen in dict.fromkeys((None, selected)):
        sel, q = Selection(shop, chosen), query(shop, chosen)
        got, expected = dump(category_overview(engine, q)), reference_overview(sel)
        for key in ("totals", "revenueByCurrency", "revenue", "topCategories"):
            assert got[key] == expected[key], (chosen, key)
        assert dump(top_categories(engine, q, limit=limit))["categories"] == reference_top(sel, limit), chosen
        assert dump(category_tree(engine, q))["categories"] == reference_tree(sel), chosen
        assert dump(category_conversion(engine, q))["metrics"] == reference_conversion(sel), chosen


@examples(20)
@example(**RICH, selected="Home > Kitchen", limit=2)
@given(events=events_strategy, orders=orders_strategy, links=links_strategy, selected=selection_strategy,
       limit=st.integers(1, 4))  # fmt: skip
def test_products_and_filters_match_the_reference(tmp_path_factory, events, orders, links, selected, limit):
    with written(tmp_path_factory, events, orders, links) as (shop, engine):
        check_products_and_filters(shop, engine, selected, limit)


def check_products_and_filters(shop: dict, engine: Engine, selected: str | None, limit: int) -> None:
    for chosen in dict.fromkeys((None, selected)):
        sel, q = Selection(shop, chosen), query(shop, chosen)
        for n in (limit, 50):
            products = dump(category_products(engine, q, limit=n))["products"]
            assert products == reference_products(sel, n), (chosen, n)
            body = dump(category_filters(engine, q, limit=n))
            assert {k: body[k] for k in ("totalUses", "filters")} == reference_filters(sel, n), (chosen, n)


@examples(20)
@example(**RICH, selected="Home", limit=2)
@given(events=events_strategy, orders=orders_strategy, links=links_strategy, selected=selection_strategy,
       limit=st.integers(1, 4))  # fmt: skip
def test_trends_and_paths_match_the_reference(tmp_path_factory, events, orders, links, selected, limit):
    with written(tmp_path_factory, events, orders, links) as (shop, engine):
        check_trends_and_paths(shop, engine, selected, limit)


def check_trends_and_paths(shop: dict, engine: Engine, selected: str | None, limit: int) -> None:
    for chosen in dict.fromkeys((None, selected)):
        sel, q = Selection(shop, chosen), query(shop, chosen)
        assert dump(category_trends(engine, q))["days"] == reference_trends(sel), chosen
        for n in (limit, 50):
            transitions = dump(category_paths(engine, q, limit=n))["transitions"]
            assert transitions == reference_paths(shop, chosen, n), (chosen, n)
