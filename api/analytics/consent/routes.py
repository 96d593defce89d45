"""Consent analytics routes: stats, trends, impact, categories, export, simulate, and a comparison of
sites."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from api.analytics.consent import export as export_file
from api.analytics.consent import service
from api.analytics.consent.params import Range
from api.analytics.consent.schemas import (
    ConsentCategories,
    ConsentComparison,
    ConsentImpact,
    ConsentSimulation,
    ConsentStats,
    ConsentTrends,
    ExportRow,
    SimulateIn,
)
from api.analytics.consent.service import MAX_COMPARED_SITES
from api.analytics.scope import Analyst, AnalyticsSite
from api.deps import ConfigStoreDep, EngineDep
from api.descriptions import module_rules
from api.schemas import UUID_PATTERN, IsoDate
from queries import consent as consent_rules
from queries.consent import MAX_PERIODS, Category, ExportKind, Interval

router = APIRouter(prefix="/analytics/consent", tags=["analytics"])

# The rules are ``queries.consent``'s; what the parameters and access mean follows them.
SEMANTICS = (
    f"{module_rules(consent_rules)}\n\n"
    "The replay is `/simulate`. The range is `startDate` to `endDate`, inclusive days in the site's time "
    "zone (the last 30 days by default). Needs `analytics:view` in the organisation that owns the site, "
    "else 403."
)


@router.get("/{siteId}/stats", response_model=ConsentStats)
def stats(engine: EngineDep, query: Range) -> ConsentStats:
    """Opt-in rates. `people`: people with at least one consent observation in the range, each counted
    once. Per category: `granted` and `denied` count people by their latest stated value, `decided` is
    their sum, `unstated` the people who never stated it, `optInRate` = granted / decided.
    `consentRecords` and `eventsWithConsent` count the observations. `choices`: over people whose latest
    values state all three optional categories (analytics, marketing, preferences; `necessary` aside),
    `acceptAll` granted all three, `rejectAll` refused all three, `custom` the rest; rates over
    `decided`."""
    return service.get_stats(engine, query=query)


@router.get(
    "/{siteId}/trends",
    response_model=ConsentTrends,
    responses={400: {"description": "VALIDATION_FAILED (interval), TOO_MANY_PERIODS, DATE_RANGE_INVALID."}},
    description="The opt-in figures per calendar period of the site's time zone: every period touching the "
    "range, labelled by its first day (`periodStart`), empty ones with zeros. Within each period, people with "
    "an observation in it (`people`), consent records (`consentRecords`), and per category the people whose "
    "latest stated value within that period is granted or refused, with `optInRate`. A person counts once "
    "per period. Only observations inside the range count, also where the first or last period reaches "
    f"beyond it. At most {MAX_PERIODS} periods (400 `TOO_MANY_PERIODS`).",
)
def trends(
    engine: EngineDep,
    query: Range,
    interval: Annotated[
        Interval,
        Query(description="`day`, `week` (ISO weeks, Monday first) or `month`; anything else is a 400."),
    ] = "day",
) -> ConsentTrends:
    return service.get_trends(engine, query=query, interval=interval)


@router.get("/{siteId}/impact", response_model=ConsentImpact)
def impact(
    engine: EngineDep,
    query: Range,
    consent_category: Annotated[
        Category,
        Query(
            alias="consentCategory", description="necessary, analytics, marketing or preferences (required)."
        ),
    ],
) -> ConsentImpact:
    """Behaviour with versus without `consentCategory`. Everyone active in the range (an event, a sale or
    a consent observation; a refund is no activity of its person, the shop sends it) falls in exactly one
    group by their latest stated value of that category: `granted`, `denied`, or `unstated` (never
    stated it in the range). Per group: `people`; `events` (their events in the range) and
    `eventsPerPerson`; `conversions`, the people with a sale (an order that is not a refund, or a
    `purchase` event naming no sale of the site: one whose `metadata.orderId` is a sale of the site, of
    any date, is that sale, its buyer the order's person) and `conversionRate` = conversions / people;
    `orders` (sales, refunds apart); `revenueByCurrency` (`revenue`, `orders`, `avgOrderValue` per
    currency, formatted in the currency's minor units: JPY without decimals) and `revenue`, the group's
    total when it has one currency (with no sales: zero in the site's currency), else `amount` and
    `currency` null with `mixed` true. Money is never converted or summed across currencies."""
    return service.get_impact(engine, query=query, category=consent_category)


@router.get("/{siteId}/categories", response_model=ConsentCategories)
def categories(engine: EngineDep, query: Range) -> ConsentCategories:
    """The four categories, always in the order necessary, analytics, marketing, preferences, each with
    a `description`, `required` (true for necessary only), the opt-in figures of `/stats`, and changes
    of mind in the range: consecutive stated values of one person that differ, `grants` (refused then
    granted), `revocations` (granted then refused), and `peopleChanged` (people with at least one)."""
    return service.get_categories(engine, query=query)


@router.get(
    "/{siteId}/export",
    # A stream, CSV or a JSON array of ``ExportRow`` as `format` asks.
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The consent log.",
            "model": list[ExportRow],
            "content": {
                "text/csv": {"schema": {"type": "string", "description": "RFC 4180, header row first."}}
            },
        }
    },
)
def export(
    engine: EngineDep,
    site: AnalyticsSite,
    query: Range,
    format: Annotated[
        Literal["csv", "json"], Query(description="csv (RFC 4180: CRLF, a header row) or json (an array).")
    ] = "csv",
    kind: Annotated[
        ExportKind,
        Query(description="`record` (consent records), `event` (events carrying consent) or `all`."),
    ] = "all",
    limit: Annotated[int, Query(ge=1, le=1_000_000)] = 100_000,
) -> StreamingResponse:
    """The consent observations of the range, oldest first (at the same microsecond an event before a
    record), at most `limit`, streamed row by row. Columns: kind (`record` or `event`), id (consentId or
    eventId), timestamp (UTC, ISO 8601), personId, visitorId, sessionId, userId, source (a record's
    source such as `banner`, an event's name), channel (web, mobile, server), and the four categories
    as true, false, or empty (CSV) / null (JSON) when the observation does not state it."""
    rows = service.list_log(engine, query=query, kind=kind, limit=limit)
    name = f"consent-{site['id']}-{query.start_date}-{query.end_date}.{format}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if format == "csv":
        return StreamingResponse(
            export_file.csv_rows(rows), media_type="text/csv; charset=utf-8", headers=headers
        )
    return StreamingResponse(export_file.json_rows(rows), media_type="application/json", headers=headers)


@router.post(
    "/{siteId}/simulate",
    response_model=ConsentSimulation,
    responses={400: {"description": "UNKNOWN_CONSENT_CATEGORY, VALIDATION_FAILED, DATE_RANGE_INVALID."}},
)
def simulate(
    engine: EngineDep, site: AnalyticsSite, query: Range, body: Annotated[SimulateIn | None, Body()] = None
) -> ConsentSimulation:
    """What a consent gate would have done to the site's past events of the range. The state at an
    instant is, per category, the latest value stated at or before it: by a consent record of any
    earlier date, or by an event (an event's own consent fields count at its own instant, before a record
    of the same microsecond). The gate is open when every required category is granted. Each event of
    the range is `sent` when the gate is open at its instant; `delayed` when the gate is closed then but
    opens later, at most `timeoutMs` after it (an observation within the wait grants the missing
    categories); `dropped` otherwise: `droppedRefused` when, as the wait ended, a required category was
    stated refused, `droppedUndecided` when one was only never stated. Shares are over `totalEvents`
    (orders are not replayed: they do not pass the tracker's gate). `avgDelayMs`/`maxDelayMs`: from the
    event to the gate's opening, over delayed events. `settings` echoes what was simulated, with
    `requiredCategories` the categories actually gated (all four when not granular)."""
    return service.simulate(engine, site=site, query=query, body=body)


@router.get(
    "/compare",
    response_model=ConsentComparison,
    description="The `/stats` figures of several sites side by side, in the order asked (omitted: the "
    f"organisation's sites, oldest first, when it has at most {MAX_COMPARED_SITES}). The dates are read in "
    "each site's own time zone (each row says its range). 403 when any named site is not the caller's organisation's (unknown ids too); at most "
    f"{MAX_COMPARED_SITES} sites (400 `TOO_MANY_SITES`); an empty list is 400 `SITE_IDS_EMPTY`.",
)
def compare(
    engine: EngineDep,
    store: ConfigStoreDep,
    principal: Analyst,
    site_ids: Annotated[
        str | None,
        Query(
            alias="siteIds",
            description="Comma-separated site ids (uuids); omitted: every site of the organisation.",
            json_schema_extra={"pattern": f"^{UUID_PATTERN}(,{UUID_PATTERN}){{0,{MAX_COMPARED_SITES - 1}}}$"},
        ),
    ] = None,
    start_date: Annotated[IsoDate | None, Query(alias="startDate")] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate")] = None,
) -> ConsentComparison:
    return service.compare(
        store, engine, principal=principal, site_ids=site_ids, start_date=start_date, end_date=end_date
    )


# Every route states the shared semantics after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        _route.description = f"{_route.description}\n\n{SEMANTICS}"
