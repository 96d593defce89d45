"""Funnels: step names checked, the report run over the lake, and the rows of its exports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date, datetime
from typing import Any

from api.analytics.funnels.schemas import MAX_STEPS, PERSON_COLUMNS
from api.analytics.scope import date_range
from api.errors import BadRequest
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.funnel import FunnelQuery, FunnelReport, Order, funnel, people_at_step
from warehouse.config_store.sites import Site
from warehouse.engine import Engine


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


def funnel_query(
    site: Site,
    *,
    steps: str | Sequence[str],
    start_date: date | None,
    end_date: date | None,
    window_seconds: int,
    order: Order,
) -> FunnelQuery:
    """The funnel of a site over entry days in its time zone (the last 30 by default)."""
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


def get_report(engine: Engine, query: FunnelQuery) -> FunnelReport:
    return funnel(engine, query)


def export_name(kind: str, query: FunnelQuery) -> str:
    return f"{kind}-{query.site_id}-{query.start_date}-{query.end_date}"


def step_rows(engine: Engine, query: FunnelQuery) -> Iterator[dict[str, Any]]:
    """The report's steps, one row each in step order, keyed by ``STEP_COLUMNS``."""
    return (step.model_dump(by_alias=True) for step in funnel(engine, query).steps)


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


def people_export_name(query: FunnelQuery, *, event_name: str, step: int) -> str:
    # a later occurrence of a repeated step gets a file name of its own
    kind = f"funnel-{event_name}" if step == query.steps.index(event_name) else f"funnel-{event_name}-{step}"
    return export_name(kind, query)


def people_rows(engine: Engine, query: FunnelQuery, *, step: int) -> Iterator[dict[str, Any]]:
    """The people who reached ``step``, keyed by ``PERSON_COLUMNS``, in person-id order."""
    person, reached = PERSON_COLUMNS
    return ({person: who, reached: _iso_utc(at)} for who, at in people_at_step(engine, query, step=step))


def _iso_utc(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")
