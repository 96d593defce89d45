"""Journey analytics routes: the list, stats, storefront funnel, export and one journey's timeline;
event-name sequences (insights and raw)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from api.analytics import exports
from api.analytics.journeys import schemas, service
from api.analytics.scope import AnalyticsSite, Offset
from api.deps import EngineDep
from api.descriptions import module_rules
from api.schemas import IsoDate
from queries import journeys as journey_rules
from queries.journeys import JourneyRange

router = APIRouter(prefix="/analytics", tags=["analytics"])

# The rules are ``queries.journeys``'s; what the range parameters mean follows them.
SEMANTICS = (
    f"{module_rules(journey_rules)}\n\n"
    "The range is `startDate` to `endDate`, inclusive days in the site's time zone (the last 30 days by "
    "default)."
)


def journey_range(
    site: AnalyticsSite,
    start_date: Annotated[
        IsoDate | None,
        Query(alias="startDate", description="First day a journey may start (site time zone)."),
    ] = None,
    end_date: Annotated[
        IsoDate | None, Query(alias="endDate", description="Last day a journey may start, inclusive.")
    ] = None,
) -> JourneyRange:
    return service.journey_range(site, start_date=start_date, end_date=end_date)


Range = Annotated[JourneyRange, Depends(journey_range)]
Converted = Annotated[
    bool | None, Query(description="true: only journeys with a purchase; false: only those without.")
]


@router.get("/journeys/{siteId}", response_model=schemas.JourneyPage, response_model_by_alias=True)
def journeys(
    engine: EngineDep,
    query: Range,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
    converted: Converted = None,
) -> schemas.JourneyPage:
    """Journeys started in the range, newest first. `total` counts every journey matching the filter
    (for paging); `eventCount` counts the journey's events with each order one purchase (a purchase
    event naming an order is that order; one naming another person's order, a forwarded thank-you
    page, is left out); `durationSeconds` runs from the first to the last of them; `entryUrl`/`exitUrl` are the first and
    last pages seen; `revenue` lists the journey's sales per currency."""
    return service.list_journeys(engine, query, limit=limit, offset=offset, converted=converted)


@router.get("/journeys/{siteId}/stats", response_model=schemas.JourneyStats, response_model_by_alias=True)
def stats(engine: EngineDep, query: Range) -> schemas.JourneyStats:
    """Over the journeys started in the range: `totalJourneys`, `convertedJourneys`, `conversionRate`
    (converted / total), `avgEventsPerJourney`, `avgDurationSeconds` and `medianDurationSeconds` (0 when
    there are none), `uniquePeople` (the person of each journey's first entry), and
    `revenueByCurrency` with the number of orders per currency; `mixedCurrency` when more than one."""
    return service.get_stats(engine, query)


@router.get("/journeys/{siteId}/funnel", response_model=schemas.JourneyFunnel, response_model_by_alias=True)
def funnel(engine: EngineDep, query: Range) -> schemas.JourneyFunnel:
    """Journey-level stages of the storefront path page_view → product_view → add_to_cart →
    checkout_begin → purchase: a journey counts at a stage when it contains that event (anywhere, in any
    order); `rate` is the count over all journeys started in the range (`totalJourneys`)."""
    return service.get_funnel(engine, query)


@router.get(
    "/journeys/{siteId}/export",
    response_class=StreamingResponse,
    responses=exports.export_responses("The list's journeys as rows.", schemas.JOURNEY_ROW_SCHEMA),
)
def export(
    engine: EngineDep,
    query: Range,
    format: exports.ExportFormat = "csv",
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
    converted: Converted = None,
) -> StreamingResponse:
    """The list's rows from the newest on (at most `limit`), streamed row by row with the same numbers
    as the list. CSV columns: journeyId, personId, visitorId, startedAt, endedAt, durationSeconds,
    eventCount, converted, entryUrl, exitUrl, revenue (per currency as `EUR 30.5;USD 20`)."""
    rows = service.export_rows(engine, query, limit=limit, converted=converted)
    chunks: exports.Chunks = (
        exports.csv_rows(schemas.EXPORT_COLUMNS, service.csv_values(rows))
        if format == "csv"
        else exports.json_array(service.json_rows(rows))
    )
    return exports.download(chunks, format=format, filename=f"{service.export_name(query)}.{format}")


@router.get(
    "/journeys/{siteId}/{journeyId}",
    response_model=schemas.JourneyDetail,
    response_model_by_alias=True,
    responses={
        404: {
            "description": "JOURNEY_NOT_FOUND: no entry of the site has this journey key (a key whose only "
            "events are purchase events counted as their sale is no journey: it has no entry of its own)."
        }
    },
)
def journey(engine: EngineDep, site: AnalyticsSite, journeyId: str) -> schemas.JourneyDetail:
    """One journey by its key (a journeyId, or the sessionId of events without one), whatever its date:
    the list fields, `events` as recorded in time order (every purchase event included, with its
    metadata parsed; `eventCount` is the list's count, see there) and `orders`, the sales counted in
    it. Unknown keys answer 404."""
    return service.get_or_raise(engine, site=site, journey_id=journeyId)


@router.get(
    "/event-sequences/{siteId}/insights",
    response_model=schemas.SequenceInsights,
    response_model_by_alias=True,
)
def sequences_insights(
    engine: EngineDep,
    query: Range,
    limit: Annotated[int, Query(ge=1, le=100, description="Pairs and triples to return, each.")] = 20,
) -> schemas.SequenceInsights:
    """Event names in journey order (orders as `purchase`). `pairs` and `triples`: the most frequent
    runs of consecutive names, with `count` (occurrences), `journeys` (journeys holding them at least
    once) and `share` (journeys / `totalJourneys`). `nextEvents`: for each name, the name that most often
    comes right after it, with its `count`, the `transitions` out of that name, and `share` of them."""
    return service.get_sequence_insights(engine, query, limit=limit)


@router.get(
    "/event-sequences/{siteId}/raw", response_model=schemas.SequencePage, response_model_by_alias=True
)
def sequences_raw(
    engine: EngineDep, query: Range, limit: Annotated[int, Query(ge=1, le=500)] = 50, offset: Offset = 0
) -> schemas.SequencePage:
    """Journeys started in the range as their event names in time order (orders as `purchase`), newest
    first, paged; `total` counts every journey."""
    return service.list_sequences(engine, query, limit=limit, offset=offset)


# Every route states the shared semantics after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        _route.description = f"{_route.description}\n\n{SEMANTICS}"
