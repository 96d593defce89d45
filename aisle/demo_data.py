"""Deterministic demo traffic: a catalog, visitors, sessions, funnels with drop-off, and orders.

Everything here is pure. Randomness comes only from ``random.Random`` objects seeded from the
arguments (one per visitor, so a visitor's history does not depend on anyone else's), and time
only from the explicit ``end`` date: the same arguments always give byte-identical output.

``generate_site_traffic`` yields, in the order of session start times:

* ``{"kind": "events", "events": [...]}``: one session's events, in the wire format of the
  events API (camelCase keys, ISO 8601 timestamps in UTC with ``Z``);
* ``{"kind": "order", "order": {...}}``: the order a purchasing session placed, in the wire
  format of the orders API, right after that session's events;
* ``{"kind": "consent", "consent": {...}}``: a consent decision made in that session, in the wire
  format of the public consent route, after the session's events and order.

Besides the funnel (pages, categories, search, products, cart, checkout, orders) a session carries
what the commerce analytics read: product clicks from search results, category listings, widgets
and recommendations; ``product_dwell_time`` events; impressions and clicks of campaigns, widgets and
recommendations (``entityType``/``entityId``, see ``CAMPAIGN_IDS``, ``WIDGET_IDS``,
``RECOMMENDATION_IDS``); category filters with a name and a value; consent decisions, and the
consent state on some events. Those events are decided and timed by a second random stream per
visitor (``_Visitor.extra``), so the funnel's own draws, and with them the sessions, carts and orders,
are the same as without them.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

SUPPORTED_CURRENCIES = ("EUR", "USD", "JPY")
# Units of each currency per euro; fixed so the data never depends on a rate source.
RATES = {"EUR": Decimal("1"), "USD": Decimal("1.08"), "JPY": Decimal("162")}
EXPONENTS = {"EUR": 2, "USD": 2, "JPY": 0}
TAX_RATES = {"EUR": Decimal("0.20"), "USD": Decimal("0.08"), "JPY": Decimal("0.10")}
SHIPPING = {"EUR": Decimal("4.95"), "USD": Decimal("5.95"), "JPY": Decimal("800")}
FREE_SHIPPING_FROM = {"EUR": Decimal("60"), "USD": Decimal("65"), "JPY": Decimal("9000")}
# Rough standard offsets of each site's audience, for the daily rhythm (no DST needed for that).
UTC_OFFSET_HOURS = {"EUR": 1, "USD": -5, "JPY": 9}

DEFAULT_PRODUCTS = 120
DEFAULT_BASE_URL = "https://shop.example"
ORDER_IN_OTHER_CURRENCY = 0.05
IDENTIFYING_VISITORS = 0.30

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
# No session starts later than this before `end`, and none lasts longer, so all stay in range.
SESSION_ROOM_MS = 3 * HOUR_MS
MAX_SESSIONS = 24

# Local hour-of-day weights: quiet nights, a lunch bump and an evening peak.
HOUR_WEIGHTS = (
    2,
    1,
    1,
    1,
    1,
    2,
    4,
    7,
    9,
    10,
    10,
    11,
    13,
    12,
    11,
    11,
    12,
    14,
    17,
    20,
    21,
    18,
    12,
    6,
)
WEEKDAY_WEIGHTS = (10, 10, 10, 10, 11, 13, 12)  # Monday first

REFERRERS = (
    (None, 34),
    ("https://www.google.com/", 34),
    ("https://www.bing.com/", 4),
    ("https://www.instagram.com/", 10),
    ("https://www.pinterest.com/", 6),
    ("https://mail.example.com/", 12),
)
CAMPAIGNS = {
    "https://www.instagram.com/": "instagram",
    "https://www.pinterest.com/": "pinterest",
    "https://mail.example.com/": "newsletter",
}
# Storefront placements the commerce analytics attribute conversions to (`entityType`/`entityId`).
HOME_CAMPAIGN = "homepage-hero"
POPUP_CAMPAIGN = "welcome-popup"
CAMPAIGN_IDS = (*CAMPAIGNS.values(), HOME_CAMPAIGN, POPUP_CAMPAIGN)  # the utm ones on landing
HOME_WIDGET = "bestsellers-carousel"
CATEGORY_WIDGET = "new-arrivals"
WIDGET_IDS = (HOME_WIDGET, CATEGORY_WIDGET)
RECOMMENDATION_IDS = ("similar-products", "frequently-bought-together")
RECOMMENDATION_WEIGHTS = (7, 3)
# Shares of the pages that show a placement, and of the next navigations that come from a click on it.
HERO_SHOWN, HERO_CLICKED = 0.40, 0.20
HOME_WIDGET_SHOWN, CATEGORY_WIDGET_SHOWN, WIDGET_CLICKED = 0.40, 0.08, 0.30
RECOMMENDATIONS_SHOWN, RECOMMENDATION_CLICKED = 0.15, 0.35
LISTING_CLICKED, SEARCH_RESULT_CLICKED = 0.30, 0.60
POPUP_SHOWN, POPUP_SIGNUP = 0.35, 0.22
# Dwell time on a product page: reported for about a fifth of product views, lognormal around half a
# minute (mostly 5-180 s), a few long reads, nothing beyond 20 minutes.
DWELL_REPORTED = 0.22
DWELL_MEDIAN_SECONDS, DWELL_SIGMA = 30.0, 0.95
DWELL_LONG_READ, DWELL_LONG_MEDIAN_SECONDS = 0.05, 240.0
DWELL_MAX_SECONDS = 1200.0
# Consent: most first visits answer the banner; undecided visitors see it again; a few change their mind.
CONSENT_DECIDES, CONSENT_ASKED_AGAIN, CONSENT_CHANGED = 0.88, 0.5, 0.03
# Events that carry the visitor's consent state (besides the first event of each session after a decision).
CONSENT_CARRIERS = frozenset({"identify", "add_to_cart", "checkout_begin", "purchase"})
SORTS = {"price": "price_asc", "newest": "newest", "popular": "popular"}
PRICE_BANDS = {
    "EUR": ("0-25", "25-50", "50-100", "100+"),
    "USD": ("0-25", "25-50", "50-100", "100+"),
    "JPY": ("0-4000", "4000-8000", "8000-16000", "16000+"),
}
ZERO_RESULT_QUERIES = ("gift card", "unicorn lamp", "teh mug", "vinyl records", "xmas jumper", "drone")


@dataclass(frozen=True)
class Leaf:
    path: str
    noun: str
    queries: tuple[str, ...]
    low: int  # price range in euros
    high: int


# A fixed tree: 4 top categories, 8 middle ones, 12 leaves.
CATEGORY_TREE: tuple[Leaf, ...] = (
    Leaf("Home > Kitchen > Mugs", "Mug", ("mug", "coffee mug", "cup"), 9, 24),
    Leaf("Home > Kitchen > Teapots", "Teapot", ("teapot", "tea pot", "tea"), 22, 69),
    Leaf("Home > Decor > Candles", "Candle", ("candle", "scented candle"), 8, 35),
    Leaf("Fashion > Accessories > Scarves", "Scarf", ("scarf", "wool scarf"), 19, 79),
    Leaf("Fashion > Accessories > Bags", "Tote Bag", ("bag", "tote", "tote bag"), 15, 120),
    Leaf("Fashion > Jewellery > Necklaces", "Necklace", ("necklace", "pendant"), 25, 160),
    Leaf("Stationery > Paper > Notebooks", "Notebook", ("notebook", "journal"), 6, 28),
    Leaf("Stationery > Writing > Pens", "Fountain Pen", ("pen", "fountain pen"), 12, 95),
    Leaf("Stationery > Cards > Greeting Cards", "Greeting Card", ("card", "birthday card"), 3, 9),
    Leaf("Toys > Games > Board Games", "Board Game", ("board game", "game"), 18, 59),
    Leaf("Toys > Games > Puzzles", "Puzzle", ("puzzle", "jigsaw"), 12, 39),
    Leaf("Toys > Plush > Teddy Bears", "Teddy Bear", ("teddy", "teddy bear", "plush"), 14, 49),
)
LEAVES = {leaf.path: leaf for leaf in CATEGORY_TREE}
ADJECTIVES = (
    "Speckled",
    "Nordic",
    "Classic",
    "Hand-made",
    "Vintage",
    "Botanical",
    "Midnight",
    "Sunny",
    "Linen",
    "Marbled",
    "Little",
    "Grand",
    "Cosy",
    "Coastal",
    "Golden",
    "Forest",
    "Paper",
    "Velvet",
)
COLOURS = ("Sage", "Cream", "Navy", "Terracotta", "Charcoal", "Blush", "Ochre", "Teal")


@dataclass(frozen=True)
class Product:
    product_item_code: str  # SKU-00042
    name: str
    category_path: str  # Home > Kitchen > Mugs
    price: Decimal  # in `currency`: 2 decimals, or none for JPY
    currency: str = "EUR"


def quantize(amount: Decimal, currency: str) -> Decimal:
    return amount.quantize(Decimal(1).scaleb(-EXPONENTS[currency]), rounding=ROUND_HALF_UP)


def convert(amount: Decimal, source: str, target: str) -> Decimal:
    """A price in another currency, at the fixed demo rates, rounded to the target's minor unit."""
    if source == target:
        return quantize(amount, target)
    return quantize(amount / RATES[source] * RATES[target], target)


def _shelf_price(euros: Decimal, currency: str) -> Decimal:
    """A price as a shop would print it: x.99 / x.50 / x.00, or whole tens of yen."""
    if currency == "JPY":
        return (euros * RATES["JPY"] / 10).quantize(Decimal(1), rounding=ROUND_HALF_UP) * 10
    converted = euros * RATES[currency]
    whole = int(converted)
    cents = Decimal("0.99") if whole < 40 or whole % 3 else Decimal("0.00")
    return Decimal(max(whole, 1)) + cents


def make_catalog(rng: random.Random, *, products: int, currency: str = "EUR") -> list[Product]:
    """``products`` products spread over the 12 leaf categories, priced in ``currency``.

    The same rng state gives the same products (codes, names, categories) in every currency, with
    prices converted at the fixed demo rates."""
    if currency not in RATES:
        raise ValueError(f"demo prices exist for {', '.join(SUPPORTED_CURRENCIES)} only")
    catalog = []
    for index in range(products):
        leaf = (
            CATEGORY_TREE[index % len(CATEGORY_TREE)]
            if index < len(CATEGORY_TREE)
            else rng.choice(CATEGORY_TREE)
        )
        euros = Decimal(rng.randint(leaf.low * 100, leaf.high * 100)) / 100
        name = f"{rng.choice(ADJECTIVES)} {rng.choice(COLOURS)} {leaf.noun}"
        catalog.append(
            Product(
                product_item_code=f"SKU-{index + 1:05d}",
                name=name,
                category_path=leaf.path,
                price=_shelf_price(euros, currency),
                currency=currency,
            )
        )
    return catalog


# --- helpers -------------------------------------------------------------------------------------------


@functools.cache
def _day_text(day: int) -> str:
    return (date(1970, 1, 1) + timedelta(days=day)).isoformat()


def _iso(ms: int) -> str:
    """``ms`` since the epoch as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (a day's text is made once: this is hot)."""
    day, rest = divmod(ms, DAY_MS)
    seconds, milli = divmod(rest, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return f"{_day_text(day)}T{hours:02d}:{minutes:02d}:{seconds:02d}.{milli:03d}Z"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _slug(text: str) -> str:
    return "-".join(text.lower().replace(">", " ").split())


def _cumulative(weights) -> list[float]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return out


def _money(amount: Decimal) -> str:
    return format(amount, "f")


class _Shop:
    """What every visitor of one site shares: catalog by category with popularity, URLs, currency."""

    def __init__(self, *, catalog: list[Product], currency: str, base_url: str, seed: int) -> None:
        self.currency = currency
        self.base_url = base_url.rstrip("/")
        self.products = [
            p
            if p.currency == currency
            else Product(
                p.product_item_code, p.name, p.category_path, convert(p.price, p.currency, currency), currency
            )
            for p in catalog
        ]
        if not self.products:
            raise ValueError("the catalog is empty")
        # A popularity order fixed by the seed: a few best sellers, a long tail (Zipf-like weights).
        order = random.Random(f"popularity:{seed}")
        by_leaf: dict[str, list[Product]] = {}
        for product in self.products:
            by_leaf.setdefault(product.category_path, []).append(product)
        self.leaves = sorted(by_leaf)
        self.by_leaf: dict[str, tuple[list[Product], list[float]]] = {}
        leaf_weights = []
        for path in self.leaves:
            items = list(by_leaf[path])
            order.shuffle(items)
            weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(items))]
            self.by_leaf[path] = (items, _cumulative(weights))
            leaf_weights.append(sum(weights) * order.uniform(0.6, 1.4))
        self.leaf_cum = _cumulative(leaf_weights)
        self.queries = [
            (q, path) for path in self.leaves for q in LEAVES.get(path, Leaf(path, "", (), 0, 0)).queries
        ]

    def leaf(self, rng: random.Random) -> str:
        return rng.choices(self.leaves, cum_weights=self.leaf_cum)[0]

    def product(self, rng: random.Random, leaf: str | None = None) -> Product:
        items, cum = self.by_leaf[leaf or self.leaf(rng)]
        return rng.choices(items, cum_weights=cum)[0]

    def category_url(self, path: str) -> str:
        return f"{self.base_url}/c/{_slug(path)}"

    def product_url(self, product: Product) -> str:
        return f"{self.base_url}/p/{product.product_item_code.lower()}"


class _Visitor:
    def __init__(self, *, seed: int, currency: str, index: int, start_ms: int, end_ms: int) -> None:
        self.index = index
        self.rng = rng = random.Random(f"aisle-demo:{seed}:{currency}:{index}")
        # The commerce events' own stream: they never draw from `rng`, so the funnel is the same with
        # them as without them.
        self.extra = random.Random(f"aisle-demo-commerce:{seed}:{currency}:{index}")
        self.consent: dict[str, bool] | None = None  # the state after the latest decision
        self.consents = 0
        self.visitor_id = _uuid(rng)
        self.user_id: str | None = None
        self.identifies = rng.random() < IDENTIFYING_VISITORS
        self.cart: dict[str, list] = {}  # code -> [product, quantity]
        self.journeys = 0
        self.journey_id = ""
        self.orders = 0
        self.last_ms: int | None = None
        self.bought_last = False
        self.buyer_bias = rng.uniform(0.6, 1.6)  # some visitors simply buy more
        self.sessions = self._plan(start_ms, end_ms, UTC_OFFSET_HOURS[currency])
        self.identify_session = rng.randrange(len(self.sessions)) if self.identifies else -1

    def _time_on_day(self, day_start_ms: int, offset_hours: int) -> int:
        local_hour = self.rng.choices(range(24), cum_weights=_HOUR_CUM)[0]
        return day_start_ms + ((local_hour - offset_hours) % 24) * HOUR_MS + self.rng.randrange(HOUR_MS)

    def _plan(self, start_ms: int, end_ms: int, offset_hours: int) -> list[int]:
        """Session start times: a first visit anywhere in the range, then returns with a churn
        chance after each visit, so retention decays week on week."""
        rng = self.rng
        days = (end_ms - start_ms) // DAY_MS
        latest = end_ms - SESSION_ROOM_MS
        first_day = rng.choices(range(days), cum_weights=_day_cum(start_ms, days))[0]
        first = min(self._time_on_day(start_ms + first_day * DAY_MS, offset_hours), latest)
        times = [first]
        while len(times) < MAX_SESSIONS:
            stays = 0.42 if len(times) == 1 else 0.70
            if rng.random() >= stays:
                break
            gap_days = int(rng.expovariate(1 / 5.5))
            day_start = (times[-1] // DAY_MS + gap_days) * DAY_MS
            moment = self._time_on_day(day_start, offset_hours)
            if moment < times[-1] + 2 * HOUR_MS:
                moment = times[-1] + 2 * HOUR_MS + rng.randrange(6 * HOUR_MS)
            if moment > latest:
                break
            times.append(moment)
        return times


_HOUR_CUM = _cumulative(HOUR_WEIGHTS)


def _day_cum(start_ms: int, days: int) -> list[float]:
    first_weekday = (start_ms // DAY_MS + 3) % 7  # 1970-01-01 was a Thursday
    return _cumulative(WEEKDAY_WEIGHTS[(first_weekday + d) % 7] for d in range(days))


class _Session:
    """Writes one session's events (and its order, if it buys)."""

    def __init__(self, shop: _Shop, visitor: _Visitor, number: int, start_ms: int, *, seed: int) -> None:
        self.shop = shop
        self.visitor = visitor
        self.rng = visitor.rng
        self.extra = visitor.extra
        self.number = number
        self.ms = start_ms
        self.seed = seed
        self.session_id = f"{visitor.visitor_id}-s{number:02d}"
        self.events: list[dict[str, Any]] = []
        self.url: str | None = None
        self.referrer: str | None = None
        self.order: dict[str, Any] | None = None
        self.viewed: list[Product] = []
        self.campaign: str | None = None
        self.consents: list[dict[str, Any]] = []
        self.funnel_events = 0  # events drawn from `rng`; identification waits for a number of them
        self.pages = 0
        # What the current page shows that a click can come from: (kind, id) pairs.
        self.shown: tuple[tuple[str, str], ...] = ()
        self.identify_at = (
            self.rng.randint(1, 5) if number == visitor.identify_session and visitor.user_id is None else None
        )

    # --- emitting --------------------------------------------------------------------------------

    def tick(self, low_s: int = 4, high_s: int = 75, *, extra: bool = False) -> None:
        self.ms += (self.extra if extra else self.rng).randint(low_s * 1000, high_s * 1000)

    def emit(
        self,
        name: str,
        *,
        entity_type=None,
        entity_id=None,
        metadata=None,
        value=None,
        currency=None,
        extra: bool = False,
    ):
        """One event; ``extra`` for the commerce events, which draw from the visitor's second stream."""
        visitor = self.visitor
        first = not self.events
        event: dict[str, Any] = {
            "name": name,
            "timestamp": _iso(self.ms),
            "eventId": f"{self.session_id}-e{len(self.events):03d}",
            "visitorId": visitor.visitor_id,
            "sessionId": self.session_id,
            "journeyId": visitor.journey_id,
        }
        if visitor.user_id is not None:
            event["userId"] = visitor.user_id
        if entity_type is not None:
            event["entityType"] = entity_type
            event["entityId"] = entity_id
        if self.url is not None:
            event["url"] = self.url
        if self.referrer is not None:
            event["referrer"] = self.referrer
        event["metadata"] = metadata or {}
        if value is not None:
            event["value"] = _money(value)
            event["currency"] = currency
        if visitor.consent is not None and (first or name in CONSENT_CARRIERS):
            event["consent"] = dict(visitor.consent)
        self.events.append(event)
        if extra:
            self.ms += self.extra.randint(50, 900)
        else:
            self.funnel_events += 1
            self.ms += self.rng.randint(50, 900)

    def page(self, url: str, **view) -> None:
        """Open a page: a page_view, then the page's own event (category_view, product_view...)."""
        if self.events:  # the session starts with its first page
            self.tick()
        self.referrer, self.url = self.url, url
        self.shown = ()
        self.pages += 1
        self.emit("page_view", entity_type="page", entity_id=url.removeprefix(self.shop.base_url) or "/")
        if view:
            self.emit(**view)
        if self.pages == 1:
            self.arrive()
        elif self.pages == 2 and self.number == 0:
            self.welcome_popup()
        self.maybe_identify()

    def maybe_identify(self, *, force: bool = False) -> None:
        visitor = self.visitor
        if self.identify_at is None or visitor.user_id is not None:
            return
        if force or self.funnel_events >= self.identify_at:
            visitor.user_id = f"cust-{visitor.rng.getrandbits(40):010x}"
            method = "signup" if self.rng.random() < 0.4 else "login"
            self.emit("identify", entity_type="user", entity_id=visitor.user_id, metadata={"method": method})
            self.identify_at = None

    def view_category(self, path: str) -> None:
        self.click_to_category(path)
        self.page(
            self.shop.category_url(path),
            name="category_view",
            entity_type="category",
            entity_id=path,
            metadata={"categoryPath": path},
        )
        self.show_category(path)
        if self.rng.random() < 0.12:
            self.tick(3, 20)
            sort = self.rng.choice(("price", "newest", "popular"))
            name, value = self.category_filter(sort)
            self.emit(
                "category_filter",
                entity_type="category",
                entity_id=path,
                metadata={"categoryPath": path, "filterName": name, "filterValue": value},
            )

    def category_filter(self, sort: str) -> tuple[str, str]:
        """A filter of the listing: a sort order (the funnel's draw), a price band or a colour."""
        roll = self.extra.random()
        if roll < 0.5:
            return "sort", SORTS[sort]
        if roll < 0.8:
            return "price", self.extra.choice(PRICE_BANDS[self.shop.currency])
        return "colour", self.extra.choice(COLOURS)

    def view_product(self, product: Product) -> None:
        self.click_to_product(product)
        self.view_product_url(product, "")

    # --- commerce events: placements, clicks, dwell time, consent (all from `extra`) ---------------

    def arrive(self) -> None:
        """On the session's first page: the campaign click of a utm landing, and the consent banner."""
        extra, visitor = self.extra, self.visitor
        if self.campaign is not None:
            medium = "email" if self.campaign == "newsletter" else "social"
            self.emit(
                "click",
                entity_type="campaign",
                entity_id=self.campaign,
                metadata={"utmSource": self.campaign, "utmMedium": medium},
                extra=True,
            )
        if visitor.consent is None:
            if (
                self.number == 0 or extra.random() < CONSENT_ASKED_AGAIN
            ) and extra.random() < CONSENT_DECIDES:
                self.tick(2, 15, extra=True)
                self.record_consent(self.banner_choice(), "banner")
        elif extra.random() < CONSENT_CHANGED:
            self.tick(5, 40, extra=True)
            self.record_consent({"marketing": not visitor.consent.get("marketing")}, "preference_center")

    def banner_choice(self) -> dict[str, bool]:
        roll = self.extra.random()
        if roll < 0.58:
            return {"necessary": True, "analytics": True, "marketing": True, "preferences": True}
        if roll < 0.80:
            return {"necessary": True, "analytics": False, "marketing": False, "preferences": False}
        extra = self.extra
        return {
            "necessary": True,
            "analytics": extra.random() < 0.7,
            "marketing": extra.random() < 0.35,
            "preferences": extra.random() < 0.5,
        }

    def record_consent(self, categories: dict[str, bool], source: str) -> None:
        """A consent record as the public consent route takes it; later events carry the new state."""
        visitor = self.visitor
        visitor.consents += 1
        visitor.consent = {**(visitor.consent or {}), **categories}
        record: dict[str, Any] = {
            "consentId": f"{visitor.visitor_id}-c{visitor.consents:02d}",
            "visitorId": visitor.visitor_id,
            "sessionId": self.session_id,
        }
        if visitor.user_id is not None:
            record["userId"] = visitor.user_id
        record.update(categories=categories, source=source, timestamp=_iso(self.ms))
        self.consents.append(record)
        self.ms += self.extra.randint(50, 900)

    def welcome_popup(self) -> None:
        """The newsletter popup on a first visit's second page: signed up, else closed."""
        extra = self.extra
        if extra.random() >= POPUP_SHOWN:
            return
        self.tick(3, 12, extra=True)
        self.emit(
            "impression",
            entity_type="campaign",
            entity_id=POPUP_CAMPAIGN,
            metadata={"placement": "popup", "offer": "10% off the first order"},
            extra=True,
        )
        self.tick(2, 20, extra=True)
        action = "click" if extra.random() < POPUP_SIGNUP else "close"
        self.emit(
            action,
            entity_type="campaign",
            entity_id=POPUP_CAMPAIGN,
            metadata={"placement": "popup"},
            extra=True,
        )

    def show_home(self) -> None:
        extra, shown = self.extra, []
        if extra.random() < HERO_SHOWN:
            self.emit(
                "impression",
                entity_type="campaign",
                entity_id=HOME_CAMPAIGN,
                metadata={"placement": "hero"},
                extra=True,
            )
            shown.append(("campaign", HOME_CAMPAIGN))
        if extra.random() < HOME_WIDGET_SHOWN:
            self.emit(
                "widget_impression",
                entity_type="widget",
                entity_id=HOME_WIDGET,
                metadata={"placement": "home", "itemCount": 8},
                extra=True,
            )
            shown.append(("widget", HOME_WIDGET))
        self.shown = tuple(shown)

    def show_category(self, path: str) -> None:
        shown = [("listing", path)]
        if self.extra.random() < CATEGORY_WIDGET_SHOWN:
            self.emit(
                "widget_impression",
                entity_type="widget",
                entity_id=CATEGORY_WIDGET,
                metadata={"placement": "category", "categoryPath": path, "itemCount": 6},
                extra=True,
            )
            shown.insert(0, ("widget", CATEGORY_WIDGET))
        self.shown = tuple(shown)

    def show_product(self, product: Product) -> None:
        """A product page: sometimes a recommendation widget, sometimes a dwell time report on leaving."""
        extra = self.extra
        if extra.random() < RECOMMENDATIONS_SHOWN:
            widget = extra.choices(RECOMMENDATION_IDS, weights=RECOMMENDATION_WEIGHTS)[0]
            self.emit(
                "impression",
                entity_type="recommendation",
                entity_id=widget,
                metadata={
                    "placement": "product_page",
                    "sourceProductItemCode": product.product_item_code,
                    "itemCount": 4,
                },
                extra=True,
            )
            self.shown = (("recommendation", widget),)
        if extra.random() < DWELL_REPORTED:
            median = DWELL_LONG_MEDIAN_SECONDS if extra.random() < DWELL_LONG_READ else DWELL_MEDIAN_SECONDS
            seconds = round(
                min(max(extra.lognormvariate(math.log(median), DWELL_SIGMA), 1.0), DWELL_MAX_SECONDS), 1
            )
            self.ms += int(seconds * 1000)
            self.emit(
                "product_dwell_time",
                entity_type="product",
                entity_id=product.product_item_code,
                metadata={**_product_meta(product), "dwellTimeSeconds": seconds},
                extra=True,
            )

    def click_to_product(self, product: Product) -> None:
        """Sometimes the way to the next product page is a click on what the current page shows."""
        extra, meta = self.extra, _product_meta(product)
        for kind, entity in self.shown:
            if kind == "search" and extra.random() < SEARCH_RESULT_CLICKED:
                self.emit(
                    "product_click",
                    entity_type="product",
                    entity_id=product.product_item_code,
                    metadata={**meta, "list": "search", "query": entity, "position": extra.randint(1, 8)},
                    extra=True,
                )
            elif kind in ("recommendation", "widget") and extra.random() < (
                RECOMMENDATION_CLICKED if kind == "recommendation" else WIDGET_CLICKED
            ):
                self.emit(
                    "product_click",
                    entity_type=kind,
                    entity_id=entity,
                    metadata={**meta, "position": extra.randint(1, 4)},
                    extra=True,
                )
            elif kind == "listing" and product.category_path == entity and extra.random() < LISTING_CLICKED:
                self.emit(
                    "product_click",
                    entity_type="product",
                    entity_id=product.product_item_code,
                    metadata={**meta, "list": "category", "position": extra.randint(1, 24)},
                    extra=True,
                )
            else:
                continue
            self.tick(1, 4, extra=True)
            return

    def click_to_category(self, path: str) -> None:
        if ("campaign", HOME_CAMPAIGN) in self.shown and self.extra.random() < HERO_CLICKED:
            self.emit(
                "click",
                entity_type="campaign",
                entity_id=HOME_CAMPAIGN,
                metadata={"placement": "hero", "target": self.shop.category_url(path)},
                extra=True,
            )
            self.tick(1, 4, extra=True)

    # --- the journey -----------------------------------------------------------------------------

    def run(self) -> None:
        rng, shop = self.rng, self.shop
        returning = self.number > 0
        referrer = rng.choices([r for r, _ in REFERRERS], weights=[w for _, w in REFERRERS])[0]
        if returning and rng.random() < 0.5:
            referrer = None  # returning visitors often come back directly
        campaign = self.campaign = CAMPAIGNS.get(referrer or "")
        self.url = referrer

        landing = rng.random()
        suffix = f"?utm_source={campaign}" if campaign else ""
        if landing < 0.45:
            self.page(f"{shop.base_url}/{suffix}")
            self.show_home()
        elif landing < 0.75:
            path = shop.leaf(rng)
            self.view_category_url(path, suffix)
        else:
            self.view_product_url(shop.product(rng), suffix)

        browsing = rng.random() < (0.62 if not returning else 0.55)
        categories = []
        if browsing:
            for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
                path = shop.leaf(rng)
                categories.append(path)
                self.view_category(path)

        if rng.random() < 0.16:
            self.search()

        wants_products = 0.50 + (0.15 if categories else 0) + (0.10 if returning else 0)
        if self.viewed or rng.random() < wants_products:
            for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
                leaf = rng.choice(categories) if categories and rng.random() < 0.7 else None
                self.view_product(shop.product(rng, leaf))

        self.shop_and_checkout(returning)
        self.maybe_identify(force=True)

    def view_category_url(self, path: str, suffix: str) -> None:
        self.page(
            self.shop.category_url(path) + suffix,
            name="category_view",
            entity_type="category",
            entity_id=path,
            metadata={"categoryPath": path},
        )
        self.show_category(path)

    def view_product_url(self, product: Product, suffix: str) -> None:
        """The product page (its URL plus ``suffix``: a query string of a landing, or nothing)."""
        self.page(
            self.shop.product_url(product) + suffix,
            name="product_view",
            entity_type="product",
            entity_id=product.product_item_code,
            metadata=_product_meta(product),
        )
        self.viewed.append(product)
        self.show_product(product)

    def search(self) -> None:
        rng, shop = self.rng, self.shop
        self.tick()
        if rng.random() < 0.12 or not shop.queries:
            query, leaf = rng.choice(ZERO_RESULT_QUERIES), None
        else:
            query, leaf = rng.choice(shop.queries)
        self.emit("search_query", metadata={"query": query})
        self.page(f"{shop.base_url}/search?q={query.replace(' ', '+')}")
        if leaf is None:
            self.emit("search_zero_results", metadata={"query": query})
            return
        results = len(shop.by_leaf[leaf][0])
        self.emit("search_results", metadata={"query": query, "resultCount": results})
        self.shown = (("search", query),)
        if rng.random() < 0.7:
            self.view_product(shop.product(rng, leaf))

    def shop_and_checkout(self, returning: bool) -> None:
        rng, shop, visitor = self.rng, self.shop, self.visitor
        keen = visitor.buyer_bias * (1.3 if returning else 1.0)
        added: list[str] = []
        if self.viewed and rng.random() < 0.11 * keen:
            for product in self.viewed:
                if product.product_item_code in added or (added and rng.random() < 0.55):
                    continue
                added.append(product.product_item_code)
                quantity = rng.choices((1, 2, 3), weights=(80, 15, 5))[0]
                self.tick(5, 40)
                self.emit(
                    "add_to_cart",
                    entity_type="product",
                    entity_id=product.product_item_code,
                    metadata={**_product_meta(product), "quantity": quantity},
                    value=product.price * quantity,
                    currency=shop.currency,
                )
                line = visitor.cart.setdefault(product.product_item_code, [product, 0])
                line[1] += quantity
            if len(visitor.cart) > 1 and rng.random() < 0.08:
                code = next(iter(visitor.cart))
                product, _ = visitor.cart.pop(code)
                self.tick(5, 30)
                self.emit(
                    "remove_from_cart", entity_type="product", entity_id=code, metadata=_product_meta(product)
                )
        if not visitor.cart:
            return
        restoring = not self.viewed or self.number > 0 and rng.random() < 0.3
        if restoring and rng.random() < 0.5:
            self.page(f"{shop.base_url}/cart")
            self.emit(
                "cart_restore",
                entity_type="cart",
                entity_id=visitor.visitor_id,
                metadata={"itemCount": len(visitor.cart)},
            )
        if rng.random() >= min(0.85, (0.42 if added else 0.12) * keen):
            if rng.random() < 0.3:
                self.tick(20, 120)
                self.emit(
                    "cart_abandon",
                    entity_type="cart",
                    entity_id=visitor.visitor_id,
                    metadata={"itemCount": len(visitor.cart)},
                )
            return
        subtotal = sum((p.price * q for p, q in visitor.cart.values()), Decimal(0))
        self.page(f"{shop.base_url}/checkout")
        self.emit(
            "checkout_begin",
            entity_type="checkout",
            entity_id=self.session_id,
            metadata={"itemCount": len(visitor.cart)},
            value=subtotal,
            currency=shop.currency,
        )
        for step, chance in ((1, 0.76), (2, 0.86)):
            if rng.random() >= chance:
                return
            self.tick(20, 150)
            self.emit(
                "checkout_progress",
                entity_type="checkout",
                entity_id=self.session_id,
                metadata={"step": step, "option": ("shipping", "payment")[step - 1]},
            )
        if rng.random() >= 0.8:
            return
        self.tick(10, 60)
        self.order = self.place_order()
        self.emit(
            "purchase",
            entity_type="order",
            entity_id=self.order["orderId"],
            metadata={"orderId": self.order["orderId"], "itemCount": len(self.order["items"])},
            value=Decimal(self.order["total"]),
            currency=self.order["currency"],
        )
        self.page(f"{shop.base_url}/checkout/thank-you")

    def place_order(self) -> dict[str, Any]:
        rng, shop, visitor = self.rng, self.shop, self.visitor
        currency = shop.currency
        if rng.random() < ORDER_IN_OTHER_CURRENCY:
            currency = rng.choice([c for c in SUPPORTED_CURRENCIES if c != shop.currency])
        items = []
        subtotal = Decimal(0)
        for product, quantity in visitor.cart.values():
            price = convert(product.price, product.currency, currency)
            subtotal += price * quantity
            items.append(
                {
                    "productItemCode": product.product_item_code,
                    "quantity": quantity,
                    "price": _money(price),
                    "name": product.name,
                    "categoryPath": product.category_path,
                }
            )
        discount = (
            quantize(subtotal * Decimal("0.10"), currency)
            if rng.random() < 0.12
            else quantize(Decimal(0), currency)
        )
        tax = quantize((subtotal - discount) * TAX_RATES[currency], currency)
        free = subtotal >= FREE_SHIPPING_FROM[currency]
        shipping = quantize(Decimal(0) if free else SHIPPING[currency], currency)
        total = subtotal + tax + shipping - discount
        visitor.orders += 1
        order: dict[str, Any] = {
            "orderId": f"DEMO-{self.seed}-{shop.currency}-{visitor.index:06d}-{visitor.orders:02d}",
            "timestamp": _iso(self.ms),
            "visitorId": visitor.visitor_id,
            "sessionId": self.session_id,
            "journeyId": visitor.journey_id,
        }
        if visitor.user_id is not None:
            order["userId"] = visitor.user_id
        order.update(
            currency=currency,
            total=_money(total),
            subtotal=_money(quantize(subtotal, currency)),
            tax=_money(tax),
            shipping=_money(shipping),
            discount=_money(discount),
            items=items,
        )
        visitor.cart.clear()
        return order


def _product_meta(product: Product) -> dict[str, Any]:
    return {
        "productItemCode": product.product_item_code,
        "name": product.name,
        "price": _money(product.price),
        "categoryPath": product.category_path,
    }


def generate_site_traffic(
    *,
    seed: int,
    currency: str,
    end: date,
    days: int,
    visitors: int,
    catalog: list[Product] | None = None,
    base_url: str = DEFAULT_BASE_URL,
) -> Iterator[dict[str, Any]]:
    """One site's traffic between midnight UTC ``days`` days before ``end`` and midnight of ``end``.

    Items come in order of session start. Without a catalog, ``make_catalog`` makes one from the seed.
    """
    if currency not in RATES:
        raise ValueError(f"demo traffic exists for {', '.join(SUPPORTED_CURRENCIES)} only")
    if days < 1 or visitors < 0:
        raise ValueError("days must be positive and visitors not negative")
    if catalog is None:
        catalog = make_catalog(random.Random(seed), products=DEFAULT_PRODUCTS, currency=currency)
    shop = _Shop(catalog=catalog, currency=currency, base_url=base_url, seed=seed)
    end_ms = (date(end.year, end.month, end.day) - date(1970, 1, 1)).days * DAY_MS
    start_ms = end_ms - days * DAY_MS

    people = [
        _Visitor(seed=seed, currency=currency, index=i, start_ms=start_ms, end_ms=end_ms)
        for i in range(visitors)
    ]
    queue = [(person.sessions[0], person.index, 0) for person in people]
    heapq.heapify(queue)
    while queue:
        start, index, number = heapq.heappop(queue)
        visitor = people[index]
        if number + 1 < len(visitor.sessions):
            heapq.heappush(queue, (visitor.sessions[number + 1], index, number + 1))
        if visitor.last_ms is None or visitor.bought_last or start - visitor.last_ms > 7 * DAY_MS:
            visitor.journeys += 1
            visitor.journey_id = f"{visitor.visitor_id}-j{visitor.journeys:02d}"
        session = _Session(shop, visitor, number, start, seed=seed)
        session.run()
        visitor.last_ms = session.ms
        visitor.bought_last = session.order is not None
        yield {"kind": "events", "events": session.events}
        if session.order is not None:
            yield {"kind": "order", "order": session.order}
        for record in session.consents:
            yield {"kind": "consent", "consent": record}
