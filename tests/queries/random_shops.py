"""Random small shops for the property tests of the reports, and the plain-Python facts they are read
against: events and orders declared once, written to the lake through the real ingest path
(`journeys_for`), and kept as facts for a reference to count.

People are counted as the analytics define them (docs/decisions.md, "Person resolution" and "Visitor
ids and user ids are one namespace"): a row counts for the user its visitor was first linked to on
that site (by an event or an order naming a user, at any time), else for the visitor."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, settings

from ingest.service import Ingest
from queries.money import minor_units
from tests.queries.helpers import journeys_for
from warehouse.engine import Engine


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def examples(count: int):
    return settings(
        max_examples=count, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )


def new_site() -> str:
    return str(uuid.uuid4())


@dataclass
class Shop:
    """Events and orders of one or more sites, as facts: every event a dict with ``site``,
    ``event_id``, ``name``, ``at`` (aware), ``visitor``, ``session``, ``user`` (or None) and
    ``metadata``; every order one with ``site``, ``order_id``, ``at``, ``visitor``, ``session``,
    ``user``, ``currency``, ``total`` (Decimal as sent) and ``refund``."""

    events: list[dict[str, Any]] = field(default_factory=list)
    orders: list[dict[str, Any]] = field(default_factory=list)

    def event(self, *, site: str, name: str, at: datetime, visitor: str, session: str, user: str | None = None,
              metadata: dict | None = None, event_id: str | None = None) -> dict:  # fmt: skip
        fact = {"site": site, "event_id": event_id or f"e{len(self.events):04d}", "name": name, "at": at,
                "visitor": visitor, "session": session, "user": user, "metadata": metadata or {}}  # fmt: skip
        self.events.append(fact)
        return fact

    def order(self, *, site: str, order_id: str, at: datetime, visitor: str, currency: str, total: Decimal,
              refund: bool, user: str | None = None, session: str = "s") -> dict:  # fmt: skip
        fact = {"site": site, "order_id": order_id, "at": at, "visitor": visitor, "session": session, "user": user,
                "currency": currency, "total": total, "refund": refund}  # fmt: skip
        self.orders.append(fact)
        return fact

    def person(self, site: str, visitor: str) -> str:
        """The user the visitor was first linked to on the site, else the visitor."""
        links = [(r["at"], r["user"]) for r in self.events + self.orders
                 if r["site"] == site and r["visitor"] == visitor and r["user"]]  # fmt: skip
        if not links:
            return visitor
        first = min(at for at, _ in links)
        users = {user for at, user in links if at == first}
        assert len(users) == 1, "a generated shop links a visitor to two users at one instant"
        return users.pop()

    def is_sale(self, site: str, order_id: Any) -> bool:
        return any(o["site"] == site and o["order_id"] == order_id and not o["refund"] for o in self.orders)

    def write(self, ingest: Ingest) -> None:
        """Everything, per site, through the ingest path (one flush per site)."""
        per_site: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
        for e in self.events:
            per_site[e["site"]][e["visitor"]].append(
                {
                    "event": e["name"],
                    "at": iso(e["at"]),
                    "eventId": e["event_id"],
                    "sessionId": e["session"],
                    "metadata": e["metadata"],
                    **({"userId": e["user"]} if e["user"] else {}),
                }  # fmt: skip
            )
        for o in self.orders:
            item = {"productItemCode": "P", "quantity": 1, "price": str(abs(o["total"]))}
            per_site[o["site"]][o["visitor"]].append(
                {
                    "order": o["order_id"],
                    "at": iso(o["at"]),
                    "sessionId": o["session"],
                    "currency": o["currency"],
                    "total": str(o["total"]),
                    "isRefund": o["refund"],
                    "items": [item],
                    **({"userId": o["user"]} if o["user"] else {}),
                }  # fmt: skip
            )
        for site, steps in per_site.items():
            journeys_for(ingest, {visitor: list(s) for visitor, s in steps.items()}, site_id=site)


def open_lake(tmp_path_factory, name: str) -> tuple[Ingest, Engine]:
    ingest = Ingest(data_dir=tmp_path_factory.mktemp(name) / "data", flush_interval_seconds=3600)
    return ingest, Engine(ingest.lake)


def money_text(amount: Fraction | Decimal | int, currency: str) -> str:
    """An exact amount rounded half to even to the currency's minor units, as text."""
    exponent = minor_units(currency)
    units = round(Fraction(amount) * 10**exponent)  # Fraction rounds half to even
    return f"{Decimal(units).scaleb(-exponent):f}"


def rate(part: int, whole: int, digits: int = 6) -> float:
    """part / whole rounded to ``digits`` decimals (exactly, then as the nearest float); 0 when whole is 0."""
    return float(round(Fraction(part, whole), digits)) if whole else 0.0


# --- the overview's reference (the site analytics repeat the overview) -------------------------------


def in_days(row: dict, site_ids: tuple[str, ...], start: date, end: date) -> bool:
    """On one of the sites and on a UTC day of the range (the lake's partitions)."""
    return row["site"] in site_ids and start <= row["at"].astimezone(UTC).date() <= end


def reference_totals(shop: Shop, site_ids: tuple[str, ...], start: date, end: date) -> dict:
    """Events, people (everyone with an event or a sale in the range, per site), sessions (of the range's
    events, per site), page views (`page_view` and `virtual_page_view`), sales, and the share of people
    who bought: a sale, or a purchase event that names no sale of its site (one naming a sale is that
    sale, its buyer the order's person)."""
    events = [e for e in shop.events if in_days(e, site_ids, start, end)]
    sales = [o for o in shop.orders if in_days(o, site_ids, start, end) and not o["refund"]]

    def person(row: dict) -> tuple[str, str]:
        return row["site"], shop.person(row["site"], row["visitor"])

    people = {person(r) for r in events + sales}
    buyers = {person(o) for o in sales} | {
        person(e) for e in events
        if e["name"] == "purchase" and not shop.is_sale(e["site"], e["metadata"].get("orderId"))
    }  # fmt: skip
    return {
        "totals": {
            "events": len(events),
            "people": len(people),
            "sessions": len({(e["site"], e["session"]) for e in events}),
            "pageViews": sum(1 for e in events if e["name"] in ("page_view", "virtual_page_view")),
            "orders": len(sales),
        },
        "purchaseConversionRate": rate(len(buyers), len(people)),
    }


def reference_revenue(shop: Shop, site_ids: tuple[str, ...], start: date, end: date) -> list[dict]:
    """Per currency of the range's orders (by code): the sales' sum and count, their mean, and the
    refunds' absolute sum (refunds keep whatever sign the shop sent)."""
    rows: dict[str, dict] = {}
    for o in shop.orders:
        if not in_days(o, site_ids, start, end):
            continue
        row = rows.setdefault(o["currency"], {"revenue": Fraction(0), "orders": 0, "refunded": Fraction(0)})
        if o["refund"]:
            row["refunded"] += abs(Fraction(o["total"]))
        else:
            row["revenue"] += Fraction(o["total"])
            row["orders"] += 1
    return [
        {"currency": c, "revenue": money_text(r["revenue"], c), "orders": r["orders"],
         "avgOrderValue": money_text(r["revenue"] / r["orders"] if r["orders"] else 0, c),
         "refunded": money_text(r["refunded"], c)}
        for c, r in sorted(rows.items())
    ]  # fmt: skip
