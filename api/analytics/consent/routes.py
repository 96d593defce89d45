"""Consent analytics routes: stats, trends, impact, categories, export, simulate, and a comparison of
sites."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute
from pydantic import Field, WithJsonSchema

from api.analytics.scope import Analyst, AnalyticsSite, date_range
from api.deps import ConfigStoreDep, Principal, canonical_site_id, load_owned_site
from api.errors import BadRequest
from api.schemas import UUID_PATTERN, CamelModel, IsoDate, StrictCamelModel
from api.sites.service import tracking_config
from ingest.consent import CATEGORIES
from queries.consent import (
    MAX_PERIODS,
    Category,
    ConsentCategories,
    ConsentImpact,
    ConsentRange,
    ConsentSimulation,
    ConsentStats,
    ConsentTrends,
    ExportKind,
    ExportRow,
    Interval,
    TooManyPeriods,
    consent_categories,
    consent_impact,
    consent_stats,
    consent_trends,
    iter_consent_log,
    simulate_consent,
)
from warehouse.config_store import sites

router = APIRouter(prefix="/analytics/consent", tags=["analytics"])

MAX_COMPARED_SITES = 50
DEFAULT_REQUIRED = ["analytics"]

SEMANTICS = (
    "Consent reaches us two ways: consent records (`POST /public/sites/:siteKey/consent`) and the "
    "`consent` fields of events (orders' consent fields are not read). Both are observations: each "
    "states some of the categories necessary, analytics, marketing, preferences as granted (true) or "
    "refused (false) and leaves the others unstated. Except in `/simulate` (state at each instant, see "
    "above), a person's state for a category is the value of their latest observation in the range that "
    "states it; observations of the same microsecond are ordered event first, record last (an explicit "
    "decision wins), then by id. The range is `startDate` to `endDate`, inclusive days in the site's "
    "time zone (the last 30 days by default). People are the linked user when a visitor was ever "
    "identified (or the record's own `userId`), else the visitor. Rates are part / whole rounded to 6 "
    "places, 0 when the whole is 0. Needs `analytics:view` in the organisation that owns the site, else 403."
)


def consent_range(
    site: AnalyticsSite,
    start_date: Annotated[
        IsoDate | None, Query(alias="startDate", description="First day (site time zone).")
    ] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate", description="Last day, inclusive.")] = None,
) -> ConsentRange:
    start, end = date_range(site, start_date, end_date)
    return ConsentRange.of_site(site, start, end)


Range = Annotated[ConsentRange, Depends(consent_range)]


@router.get("/{siteId}/stats", response_model=ConsentStats, response_model_by_alias=True)
def stats(request: Request, query: Range) -> ConsentStats:
    """Opt-in rates. `people`: people with at least one consent observation in the range, each counted
    once. Per category: `granted` and `denied` count people by their latest stated value, `decided` is
    their sum, `unstated` the people who never stated it, `optInRate` = granted / decided.
    `consentRecords` and `eventsWithConsent` count the observations. `choices`: over people whose latest
    values state all three optional categories (analytics, marketing, preferences; `necessary` aside),
    `acceptAll` granted all three, `rejectAll` refused all three, `custom` the rest; rates over
    `decided`."""
    return consent_stats(request.app.state.engine, query)


@router.get(
    "/{siteId}/trends",
    response_model=ConsentTrends,
    response_model_by_alias=True,
    responses={400: {"description": "VALIDATION_FAILED (interval), TOO_MANY_PERIODS, DATE_RANGE_INVALID."}},
    description="The opt-in figures per calendar period of the site's time zone: every period touching the "
    "range, labelled by its first day (`periodStart`), empty ones with zeros. Within each period, people with "
    "an observation in it (`people`), consent records (`consentRecords`), and per category the people whose "
    "latest stated value within that period is granted or refused, with `optInRate`. A person counts once "
    "per period. Only observations inside the range count, also where the first or last period reaches "
    f"beyond it. At most {MAX_PERIODS} periods (400 `TOO_MANY_PERIODS`).",
)
def trends(
    request: Request,
    query: Range,
    interval: Annotated[
        Interval,
        Query(description="`day`, `week` (ISO weeks, Monday first) or `month`; anything else is a 400."),
    ] = "day",
) -> ConsentTrends:
    try:
        return consent_trends(request.app.state.engine, query, interval=interval)
    except TooManyPeriods as exc:
        raise BadRequest(str(exc), code="TOO_MANY_PERIODS") from exc


@router.get("/{siteId}/impact", response_model=ConsentImpact, response_model_by_alias=True)
def impact(
    request: Request,
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
    return consent_impact(request.app.state.engine, query, category=consent_category)


@router.get("/{siteId}/categories", response_model=ConsentCategories, response_model_by_alias=True)
def categories(request: Request, query: Range) -> ConsentCategories:
    """The four categories, always in the order necessary, analytics, marketing, preferences, each with
    a `description`, `required` (true for necessary only), the opt-in figures of `/stats`, and changes
    of mind in the range: consecutive stated values of one person that differ, `grants` (refused then
    granted), `revocations` (granted then refused), and `peopleChanged` (people with at least one)."""
    return consent_categories(request.app.state.engine, query)


EXPORT_COLUMNS = (
    "kind",
    "id",
    "timestamp",
    "personId",
    "visitorId",
    "sessionId",
    "userId",
    "source",
    "channel",
    "necessary",
    "analytics",
    "marketing",
    "preferences",
)


def _csv_line(values: list[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(values)
    return buffer.getvalue()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _csv_rows(rows: Iterator[ExportRow]) -> Iterator[str]:
    yield _csv_line(list(EXPORT_COLUMNS))
    for row in rows:
        fields = row.model_dump(by_alias=True, mode="json")
        yield _csv_line([_csv_cell(fields[c]) for c in EXPORT_COLUMNS])


def _json_rows(rows: Iterator[ExportRow]) -> Iterator[bytes]:
    yield b"["
    for index, row in enumerate(rows):
        yield (b"," if index else b"") + orjson.dumps(row.model_dump(by_alias=True, mode="json"))
    yield b"]"


@router.get(
    "/{siteId}/export",
    responses={200: {"content": {"text/csv": {}, "application/json": {}}, "description": "The consent log."}},
)
def export(
    request: Request,
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
    rows = iter_consent_log(request.app.state.engine, query, kind=kind, limit=limit)
    name = f"consent-{site['id']}-{query.start_date}-{query.end_date}.{format}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if format == "csv":
        return StreamingResponse(_csv_rows(rows), media_type="text/csv; charset=utf-8", headers=headers)
    return StreamingResponse(_json_rows(rows), media_type="application/json", headers=headers)


class SimulateIn(StrictCamelModel):
    granular_enabled: bool | None = Field(
        default=None,
        description="Granular gating (each required category checked on its own). False: one switch covers "
        "every category, so an event needs all four granted and `requiredCategories` is ignored. Default: "
        "the site's cookieConsent `granular`, else true.",
    )
    # Checked in the route (400 `UNKNOWN_CONSENT_CATEGORY`), listed in the schema.
    required_categories: (
        list[Annotated[str, WithJsonSchema({"type": "string", "enum": list(CATEGORIES)})]] | None
    ) = Field(
        default=None,
        max_length=4,
        description="Categories an event needs granted (granular only): a subset of necessary, analytics, "
        "marketing, preferences; empty: nothing is gated. Default: the site's cookieConsent "
        '`requiredCategories`, else ["analytics"].',
    )
    timeout_ms: int | None = Field(
        default=None,
        ge=0,
        le=600_000,
        description="How long an event waits for consent (0 to 600000 ms). Default: the site's cookieConsent "
        "`timeoutMs`, else 0 (no waiting).",
    )


@router.post(
    "/{siteId}/simulate",
    response_model=ConsentSimulation,
    response_model_by_alias=True,
    responses={400: {"description": "UNKNOWN_CONSENT_CATEGORY, VALIDATION_FAILED, DATE_RANGE_INVALID."}},
)
def simulate(
    request: Request, site: AnalyticsSite, query: Range, body: Annotated[SimulateIn | None, Body()] = None
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
    consent = tracking_config(site).data_layer_config.cookie_consent
    body = body or SimulateIn()
    granular = body.granular_enabled if body.granular_enabled is not None else consent.granular
    required = body.required_categories
    if required is None:
        required = (
            consent.required_categories if consent.required_categories is not None else DEFAULT_REQUIRED
        )
    unknown = sorted({c for c in required if c not in CATEGORIES})
    if unknown:
        raise BadRequest(
            f"Unknown consent categories {', '.join(map(repr, unknown))}; the categories are {', '.join(CATEGORIES)}",
            code="UNKNOWN_CONSENT_CATEGORY",
            details={"requiredCategories": unknown},
        )
    timeout_ms = body.timeout_ms if body.timeout_ms is not None else (consent.timeout_ms or 0)
    return simulate_consent(
        request.app.state.engine,
        query,
        granular=granular is not False,
        required=list(required),
        timeout_ms=timeout_ms,
    )


class SiteConsent(ConsentStats):
    site_name: str
    timezone: str


class ConsentComparison(CamelModel):
    sites: list[SiteConsent]


def _compared_sites(store, principal: Principal, site_ids: str | None) -> list[dict[str, Any]]:
    if site_ids is None:
        with store.connect() as conn:
            every = sites.list_for_organization(conn, organization_id=principal.organization_id)
        if len(every) > MAX_COMPARED_SITES:
            # Each site is a report of its own: a large organisation's every site timed out.
            raise BadRequest(
                f"The organisation has {len(every)} sites and at most {MAX_COMPARED_SITES} can be compared: "
                "name them in siteIds",
                code="TOO_MANY_SITES",
            )
        return every
    wanted = list(dict.fromkeys(canonical_site_id(s.strip()) for s in site_ids.split(",") if s.strip()))
    if not wanted:
        raise BadRequest("siteIds is empty; name sites (comma-separated) or omit it", code="SITE_IDS_EMPTY")
    if len(wanted) > MAX_COMPARED_SITES:
        raise BadRequest(f"At most {MAX_COMPARED_SITES} sites can be compared", code="TOO_MANY_SITES")
    return [load_owned_site(store, principal, site_id) for site_id in wanted]


@router.get(
    "/compare",
    response_model=ConsentComparison,
    response_model_by_alias=True,
    description="The `/stats` figures of several sites side by side, in the order asked (omitted: the "
    f"organisation's sites, oldest first, when it has at most {MAX_COMPARED_SITES}). The dates are read in "
    "each site's own time zone (each row says its range). 403 when any named site is not the caller's organisation's (unknown ids too); at most "
    f"{MAX_COMPARED_SITES} sites (400 `TOO_MANY_SITES`); an empty list is 400 `SITE_IDS_EMPTY`.",
)
def compare(
    request: Request,
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
    engine = request.app.state.engine
    rows = []
    for site in _compared_sites(store, principal, site_ids):
        start, end = date_range(site, start_date, end_date)
        query = ConsentRange.of_site(site, start, end)
        figures = consent_stats(engine, query)
        rows.append(SiteConsent(**figures.model_dump(), site_name=site["name"], timezone=site["timezone"]))
    return ConsentComparison(sites=rows)


# Every route states the shared semantics after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        _route.description = f"{_route.description}\n\n{SEMANTICS}"
