"""Funnel analytics routes."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import StreamingResponse

from api.analytics.scope import AnalyticsSite, date_range
from api.errors import BadRequest
from api.schemas import EVENT_NAME_ENUM, IsoDate
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.funnel import DEFAULT_WINDOW_SECONDS, FunnelQuery, FunnelReport, Order, funnel, people_at_step

router = APIRouter(prefix="/analytics", tags=["analytics"])

MAX_STEPS = 20
MAX_WINDOW_SECONDS = 365 * 24 * 3600
# What parse_steps accepts, as the schema says it: 2 to MAX_STEPS canonical names (a list in a body;
# comma-separated in a query string, where this is stricter only in refusing blanks around a name).
_NAME = "(" + "|".join(sorted(CANONICAL_EVENT_NAMES)) + ")"
STEPS_PATTERN = f"^{_NAME}(,{_NAME}){{1,{MAX_STEPS - 1}}}$"
STEPS_SCHEMA: dict[str, Any] = {
    "minItems": 2,
    "maxItems": MAX_STEPS,
    "items": {"type": "string", **EVENT_NAME_ENUM},
}


def parse_steps(steps: str | Sequence[str]) -> tuple[str, ...]:
    """Validated step names from `a,b,c` or a list of names: at least two, at most MAX_STEPS, all
    canonical; repeats allowed."""
    parts = steps.split(",") if isinstance(steps, str) else steps
    names = tuple(s.strip() for s in parts)
    if len(names) > 1 and "" in names:
        # `a,,b` is a typo, not a two-step funnel: which step was meant is unknown.
        raise BadRequest(
            f"Step {names.index('') + 1} is empty; name every step: steps=page_view,add_to_cart",
            code="FUNNEL_STEP_EMPTY",
        )
    names = tuple(n for n in names if n)
    if len(names) < 2:
        raise BadRequest(
            "A funnel needs at least two steps: steps=page_view,add_to_cart", code="FUNNEL_NEEDS_TWO_STEPS"
        )
    if len(names) > MAX_STEPS:
        raise BadRequest(f"A funnel has at most {MAX_STEPS} steps", code="FUNNEL_TOO_MANY_STEPS")
    unknown = [n for n in names if n not in CANONICAL_EVENT_NAMES]
    if unknown:
        raise BadRequest(
            f"Not canonical event names: {', '.join(unknown)}",
            code="UNKNOWN_EVENT_NAME",
            details={"steps": unknown},
        )
    return names


def funnel_filters(
    site: AnalyticsSite,
    steps: Annotated[
        str,
        Query(
            description=f"Comma-separated canonical event names, in order; repeats allowed; 2 to {MAX_STEPS} "
            "steps, none empty (`a,,b` answers 400 `FUNNEL_STEP_EMPTY`).",
            json_schema_extra={"pattern": STEPS_PATTERN},
        ),
    ],
    start_date: Annotated[
        IsoDate | None, Query(alias="startDate", description="First entry day (site time zone).")
    ] = None,
    end_date: Annotated[
        IsoDate | None, Query(alias="endDate", description="Last entry day, inclusive.")
    ] = None,
    window_seconds: Annotated[
        int,
        Query(
            alias="windowSeconds",
            ge=1,
            le=MAX_WINDOW_SECONDS,
            description="Conversion window from step 1, inclusive.",
        ),
    ] = DEFAULT_WINDOW_SECONDS,
    order: Annotated[
        Order,
        Query(
            description="sequential: each step after the previous, other events may come between; "
            "strict: no other event of the person between steps; any: the steps after step 1 in any "
            "order, so step n counts the people who did step 1 and any n - 1 of the others (a step's "
            "name is then a position: not all of them did that event)."
        ),
    ] = "sequential",
) -> FunnelQuery:
    """The funnel of the query string, for a site the caller may analyse."""
    names = parse_steps(steps)
    start, end = date_range(site, start_date, end_date)
    return FunnelQuery(
        site_id=site["id"],
        steps=names,
        start_date=start,
        end_date=end,
        timezone=site["timezone"],
        window_seconds=window_seconds,
        order=order,
    )


FunnelFilters = Annotated[FunnelQuery, Depends(funnel_filters)]
ExportFormat = Annotated[
    Literal["csv", "json"], Query(description="csv (RFC 4180, header row) or json (array of objects).")
]
STEP_COLUMNS = (
    "eventName",
    "count",
    "conversionRate",
    "dropOff",
    "avgTimeToConvertSeconds",
    "medianTimeToConvertSeconds",
)
PERSON_COLUMNS = ("personId", "reachedAt")
PERSON_ROW_SCHEMA = {
    "type": "object",
    "properties": {
        "personId": {
            "type": "string",
            "description": "The linked user when ever identified, else the visitor.",
        },
        "reachedAt": {
            "type": "string",
            "format": "date-time",
            "description": "When the step was reached, UTC.",
        },
    },
    "required": list(PERSON_COLUMNS),
}


def export_responses(description: str, row_schema: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI for a streamed export: CSV text with a header row, or a JSON array of rows."""
    return {
        200: {
            "description": description,
            "content": {
                "text/csv": {"schema": {"type": "string", "description": "RFC 4180, header row first."}},
                "application/json": {"schema": {"type": "array", "items": row_schema}},
            },
        }
    }


@router.get("/funnels/{siteId}", response_model=FunnelReport, response_model_by_alias=True)
def get_funnel(request: Request, query: FunnelFilters) -> FunnelReport:
    """People are counted once (the linked user when the visitor was ever identified, else the visitor;
    visitor and user ids are one namespace, so a visitor id equal to a user id is that user),
    at the furthest step reached. Every step-1 event in the date range is a possible start; times come
    from each person's first most complete conversion. Orders count as `purchase` events, once.
    `conversionRate` is relative to people entered; `dropOff` is the people lost since the previous step."""
    return funnel(request.app.state.engine, query)


def _csv_line(values: Iterable[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(["" if v is None else v for v in values])
    return buffer.getvalue()


def _csv(columns: tuple[str, ...], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    yield _csv_line(columns)
    for row in rows:
        yield _csv_line(row[c] for c in columns)


def _json_array(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    yield b"["
    for index, row in enumerate(rows):
        yield (b"," if index else b"") + orjson.dumps(row)
    yield b"]"


def _stream(
    rows: Iterable[dict[str, Any]], *, columns: tuple[str, ...], format: str, name: str
) -> StreamingResponse:
    headers = {"Content-Disposition": f'attachment; filename="{name}.{format}"'}
    if format == "csv":
        return StreamingResponse(_csv(columns, rows), media_type="text/csv; charset=utf-8", headers=headers)
    return StreamingResponse(_json_array(rows), media_type="application/json", headers=headers)


def _export_name(kind: str, query: FunnelQuery) -> str:
    return f"{kind}-{query.site_id}-{query.start_date}-{query.end_date}"


@router.get(
    "/funnels/{siteId}/export",
    response_class=StreamingResponse,
    responses=export_responses("The report's steps as rows.", {"$ref": "#/components/schemas/FunnelStep"}),
)
def export_funnel(request: Request, query: FunnelFilters, format: ExportFormat) -> StreamingResponse:
    """The steps of the funnel report, one row each in step order, with the report's numbers: columns
    `eventName, count, conversionRate, dropOff, avgTimeToConvertSeconds, medianTimeToConvertSeconds`
    (times empty in CSV and null in JSON where the report has none). Same parameters as the report."""
    report = funnel(request.app.state.engine, query)
    rows = (step.model_dump(by_alias=True) for step in report.steps)
    return _stream(rows, columns=STEP_COLUMNS, format=format, name=_export_name("funnel", query))


@router.get(
    "/funnels/{siteId}/steps/{eventName}/export",
    response_class=StreamingResponse,
    responses=export_responses("The people who reached the step.", PERSON_ROW_SCHEMA),
)
def export_funnel_step(
    request: Request,
    query: FunnelFilters,
    event_name: Annotated[
        str,
        Path(
            alias="eventName",
            description="One of the funnel's steps (another name: 400 `STEP_NOT_IN_FUNNEL`).",
            json_schema_extra=EVENT_NAME_ENUM,
        ),
    ],
    format: ExportFormat,
    step_index: Annotated[
        int | None,
        Query(
            alias="stepIndex",
            ge=0,
            description="Which step, when `eventName` appears more than once in `steps`: its 0-based "
            "position in `steps` (the row of the report's `steps`), e.g. 2 for the second `page_view` of "
            "`page_view,product_view,page_view`. It must be a position of `eventName`, else 400 "
            "`STEP_INDEX_NOT_EVENT`. Omitted: the first `eventName` step.",
        ),
    ] = None,
) -> StreamingResponse:
    """The people who reached the step (the ones the report counts there), streamed in person-id
    order: columns `personId` (the linked user when the visitor was ever identified, else the
    visitor) and `reachedAt` (ISO 8601, UTC) from their first most complete conversion. When the
    name appears more than once in `steps`, `stepIndex` chooses the step, the first occurrence by
    default. In `any` order, step n's people are those who did step 1 and any n - 1 of the others,
    as the report counts them, and `reachedAt` is when the last of those happened. A name that is
    not one of the steps answers 400 `STEP_NOT_IN_FUNNEL`."""
    step = step_position(query.steps, event_name, step_index)
    people = people_at_step(request.app.state.engine, query, step=step)
    rows = ({"personId": person, "reachedAt": _iso_utc(at)} for person, at in people)
    # a later occurrence of a repeated step gets a file name of its own
    named = f"funnel-{event_name}" if step == query.steps.index(event_name) else f"funnel-{event_name}-{step}"
    return _stream(rows, columns=PERSON_COLUMNS, format=format, name=_export_name(named, query))


def step_position(steps: tuple[str, ...], event_name: str, step_index: int | None) -> int:
    """The 0-based step an export names: ``step_index`` when given (it must be an ``event_name``
    step), else the first ``event_name`` step."""
    positions = [k for k, name in enumerate(steps) if name == event_name]
    if not positions:
        raise BadRequest(
            f"'{event_name}' is not a step of this funnel; use one of: {', '.join(steps)}",
            code="STEP_NOT_IN_FUNNEL",
            details={"steps": list(steps)},
        )
    if step_index is None:
        return positions[0]
    if step_index not in positions:
        raise BadRequest(
            f"stepIndex {step_index} is not a '{event_name}' step of this funnel; "
            f"'{event_name}' is at stepIndex {', '.join(map(str, positions))}",
            code="STEP_INDEX_NOT_EVENT",
            details={"stepIndexes": positions},
        )
    return step_index


def _iso_utc(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")
