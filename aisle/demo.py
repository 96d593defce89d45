"""The demo organisation: verified sites and a login, created idempotently, with demo traffic.

Three verified sites priced in EUR, USD and JPY get weeks of generated storefront traffic (``aisle.demo_data``) in the lake: events, orders and
consent records, each through the ingest service's own call for it (consent records through
``Ingest.accept_consent``, as the public consent route stores them). The traffic is loaded in the
same config-store transaction that creates its site, so a site exists only with its data, and
re-running never loads it twice. Each traffic site's id is the same on every run, so a run killed
while loading a site leaves its rows under that id: the next run takes them out of the lake before
it loads the site again (what the killed run left in the log is replayed and is then a duplicate), so
the lake holds one copy of the demo traffic, never rows of a site that does not exist. A fourth,
"Demo Gift Shop" in GBP, stays empty: the README's worked example imports a real shop's orders into it.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from aisle.demo_data import DEFAULT_PRODUCTS, generate_site_traffic, make_catalog
from api.auth.passwords import hash_password
from api.auth.service import create_user
from api.sites.tracking_config import default_tracking_config
from ingest.service import DataDirBusy, Ingest
from ingest.validation import Context, Rejected
from warehouse.config_store import sites, users
from warehouse.config_store.sites import Site

# `.example` is reserved for examples and still passes the login route's e-mail validation,
# which refuses special-use domains such as `.local`.
DEMO_EMAIL = "demo@aisle.example"
DEMO_PASSWORD = "aisle-demo-password"
DEMO_SITE_NAME = "Demo Gift Shop"
# Pages served from the local machine may call the public routes of the demo site.
DEMO_DOMAIN = "localhost"

# About 6,000 sessions, 50,000 events and 200 orders per site over 8 weeks.
DEMO_VISITORS = 3000
DEMO_DAYS = 56
DEMO_SEED = 7
DEMO_NAMESPACE = uuid.UUID("6f1d3c52-8f0e-4c8e-9a57-0d1e2a3b4c5d")
EVENT_BATCH = 500
ORDER_BATCH = 200
CONSENT_BATCH = 500


@dataclass(frozen=True)
class DemoSite:
    name: str
    domain: str  # `*.localhost` resolves to the local machine in browsers
    currency: str
    timezone: str


TRAFFIC_SITE_ROLE = (
    "generated storefront traffic in {currency} (events, orders, consent records): explore the analytics here"
)
EMPTY_SITE_ROLE = (
    "no traffic: the GBP shop the README's worked example fills with `aisle import --site <siteId> "
    "--preset online-retail`"
)

DEMO_TRAFFIC_SITES = (
    DemoSite("Demo Shop EUR", "eur.demo.localhost", "EUR", "Europe/Berlin"),
    DemoSite("Demo Shop USD", "usd.demo.localhost", "USD", "America/New_York"),
    DemoSite("Demo Shop JPY", "jpy.demo.localhost", "JPY", "Asia/Tokyo"),
)


def _site_named(conn: Connection, organization_id: str, name: str) -> Site | None:
    return next(
        (s for s in sites.list_for_organization(conn, organization_id=organization_id) if s["name"] == name),
        None,
    )


def _traffic_site_id(organization_id: str, spec: DemoSite) -> str:
    """The same on every run: a run killed while loading a site's traffic left rows under this id,
    which the next run finds (and takes out before it loads the site again)."""
    return str(uuid.uuid5(DEMO_NAMESPACE, f"{organization_id}/{spec.name}"))


def _create_site(
    conn: Connection, organization_id: str, spec: DemoSite, *, site_id: str | None = None
) -> Site:
    return sites.create(
        conn,
        organization_id=organization_id,
        name=spec.name,
        domain=spec.domain,
        currency=spec.currency,
        timezone=spec.timezone,
        tracking_config=default_tracking_config(),
        is_verified=True,
        site_id=site_id,
    )


def load_traffic(
    ingest: Ingest,
    site: Site,
    *,
    seed: int,
    days: int,
    visitors: int,
    end: date,
    received_at: datetime,
) -> dict[str, int]:
    """Feed one site's generated traffic through the ingest write path; returns the counts."""
    ctx = Context(
        site_id=site["id"],
        site_currency=site["currency"],
        received_at=received_at,
        channel="import",
        historical=True,
    )
    catalog = make_catalog(random.Random(seed), products=DEFAULT_PRODUCTS, currency=site["currency"])
    counts = {
        "sessions": 0,
        "eventsAccepted": 0,
        "eventsRejected": 0,
        "orders": 0,
        "ordersRejected": 0,
        "consents": 0,
        "consentsRejected": 0,
    }
    events: list[dict[str, Any]] = []
    orders: list[dict[str, Any]] = []
    consents: list[dict[str, Any]] = []

    def send_events() -> None:
        result = ingest.accept_events_sync(events, ctx)
        counts["eventsAccepted"] += result.accepted
        counts["eventsRejected"] += len(result.rejected)
        events.clear()

    def send_orders() -> None:
        counts["orders"] += len(ingest.store_new_orders_sync(orders, ctx.site_id))
        orders.clear()

    def send_consents() -> None:
        # Concurrently, so that the durable log commits them in groups (one fsync per group).
        async def accept_all() -> list[Any]:
            return await asyncio.gather(
                *(ingest.accept_consent(raw, ctx) for raw in consents), return_exceptions=True
            )

        for outcome in asyncio.run(accept_all()):
            if isinstance(outcome, Rejected):
                counts["consentsRejected"] += 1
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                counts["consents"] += 1
        consents.clear()

    for item in generate_site_traffic(
        seed=seed,
        currency=site["currency"],
        end=end,
        days=days,
        visitors=visitors,
        catalog=catalog,
        base_url=f"http://{site['domain']}",
    ):
        if item["kind"] == "events":
            counts["sessions"] += 1
            events.extend(item["events"])
            if len(events) >= EVENT_BATCH:
                send_events()
        elif item["kind"] == "consent":
            consents.append(item["consent"])
            if len(consents) >= CONSENT_BATCH:
                send_consents()
        else:
            try:
                orders.append(ingest.order(item["order"], ctx))
            except Rejected:
                counts["ordersRejected"] += 1
            if len(orders) >= ORDER_BATCH:
                send_orders()
    if events:
        send_events()
    if orders:
        send_orders()
    if consents:
        send_consents()
    if ingest.writes_lake:
        ingest.flush()
    return counts


def load_demo(
    store: Engine,
    *,
    data_dir: Path,
    seed: int = DEMO_SEED,
    days: int = DEMO_DAYS,
    visitors: int = DEMO_VISITORS,
    end: date | None = None,
    stream_url: str | None = None,
) -> dict[str, Any]:
    """Create (or refresh) the demo login and sites. Traffic ends at midnight UTC of ``end``
    (today by default) and is loaded only when its site is created.

    On a file log the lake needs the data directory to itself: while another process (``aisle
    serve``) holds it, the sites that would need traffic are not created, and a warning says so. On a
    Redis log (``stream_url``) the traffic goes through the streams, beside any server, and the
    install's `aisle flush` moves it to the lake."""
    with store.connect() as conn:
        user = users.get_by_email(conn, email=DEMO_EMAIL)
    if user is None:
        user = create_user(store, email=DEMO_EMAIL, password=DEMO_PASSWORD, name="Demo Owner")
    else:
        with store.begin() as conn:
            users.update_fields(conn, user_id=user["id"], password_hash=hash_password(DEMO_PASSWORD))
    organization_id = user["organization_id"]
    with store.begin() as conn:
        site = _site_named(conn, organization_id, DEMO_SITE_NAME)
        if site is None:
            site = _create_site(
                conn, organization_id, DemoSite(DEMO_SITE_NAME, DEMO_DOMAIN, "GBP", "Europe/London")
            )
    with store.connect() as conn:
        missing = [s for s in DEMO_TRAFFIC_SITES if _site_named(conn, organization_id, s.name) is None]

    loaded: dict[str, dict[str, int]] = {}
    warnings: list[str] = []
    if missing:
        try:
            # Only explicit flushes: one set of files per partition, not one per second.
            ingest = Ingest(
                data_dir=Path(data_dir),
                flush_interval_seconds=3600,
                stream_url=stream_url,
                flush_in_background=stream_url is None,
            )
        except DataDirBusy as exc:
            ingest = None
            warnings.append(
                f"{exc}. The demo sites with traffic ({', '.join(s.name for s in missing)}) were not "
                "created; run `aisle demo` again while the server is stopped."
            )
        if ingest is not None:
            received_at = datetime.now(UTC)
            try:
                if stream_url is None:
                    # What a run killed while loading left in the lake (its site rolled back) goes;
                    # what it left in the log is replayed by `start` and is then a duplicate of the
                    # load below, so the site ends with one copy of its traffic.
                    for spec in missing:
                        ingest.lake.drop_site(_traffic_site_id(organization_id, spec))
                ingest.start()
                for spec in missing:
                    # The site commits only once its traffic is in the lake.
                    with store.begin() as conn:
                        site_id = _traffic_site_id(organization_id, spec)
                        record = _create_site(conn, organization_id, spec, site_id=site_id)
                        loaded[spec.name] = load_traffic(
                            ingest,
                            record,
                            seed=seed,
                            days=days,
                            visitors=visitors,
                            end=end or received_at.date(),
                            received_at=received_at,
                        )
            finally:
                ingest.stop()

    with store.connect() as conn:
        traffic_sites = [
            found
            for spec in DEMO_TRAFFIC_SITES
            if (found := _site_named(conn, organization_id, spec.name)) is not None
        ]
    # The traffic sites come first, each with its role: a reader taking the first site id printed
    # gets one with data to explore, not the empty shop kept for the README's worked import.
    result: dict[str, Any] = {
        "email": DEMO_EMAIL,
        "password": DEMO_PASSWORD,
        "userId": user["id"],
        "organizationId": organization_id,
        "sites": [
            {
                "name": s["name"],
                "role": TRAFFIC_SITE_ROLE.format(currency=s["currency"]),
                "siteId": s["id"],
                "siteKey": s["site_key"],
                "domain": s["domain"],
                "currency": s["currency"],
            }
            for s in traffic_sites
        ],
        "siteId": site["id"],
        "siteKey": site["site_key"],
        "siteName": site["name"],
        "siteCurrency": site["currency"],
        "siteRole": EMPTY_SITE_ROLE,
    }
    if loaded:
        # Only on the run that created the sites: what went into the lake, per site.
        result["loaded"] = loaded
    if warnings:
        result["warnings"] = warnings
    return result
