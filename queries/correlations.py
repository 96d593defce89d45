"""Correlations: which events go with purchase conversion, as PostHog's funnel correlation does.

The people of a range are those active in it: anyone with an event or a sale there. A person converted
when they have a sale (refunds apart) or a ``purchase`` event in the range; a converted person's events
count up to their first purchase only, and ``purchase`` itself is no property. People are the linked
user when a visitor was ever identified, else the visitor.

Each event name, and each event name with its category path (``event`` reads
``add_to_cart::Home > Kitchen``), splits the people four ways: did it and converted (a,
``successCount``), did it and did not (b, ``failureCount``), did not and converted (c), did not and did
not (d). The odds ratio (``oddsRatio``) with +1 smoothing, so empty cells never divide by zero, is
(a+1)(d+1) / ((b+1)(c+1)): above 1 the event goes with converting, below 1 with not converting;
``correlationType`` is success above 1, else failure. The answer is ``skewed`` when fewer than 10 % or
more than 90 % of the people converted: odds ratios then rest on a small class and swing with a few
people.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from aisle.wire import CamelModel
from queries import library
from queries.ranges import range_params
from warehouse.engine import Engine

SKEW_LOW, SKEW_HIGH = 0.1, 0.9
PROPERTY_SEPARATOR = "::"


class CorrelationTotals(CamelModel):
    people: int
    converted: int
    not_converted: int
    conversion_rate: float


class EventCorrelation(CamelModel):
    event: str
    event_name: str
    category_path: str | None
    success_count: int
    failure_count: int
    odds_ratio: float
    correlation_type: Literal["success", "failure"]


class Correlations(CamelModel):
    site_id: str
    start_date: datetime
    end_date: datetime
    totals: CorrelationTotals
    skewed: bool
    positive: list[EventCorrelation]
    negative: list[EventCorrelation]


@dataclass(frozen=True)
class CorrelationRange:
    """One site's people active in [start, end) (UTC instants)."""

    site_id: str
    start: datetime
    end: datetime

    def params(self) -> dict[str, Any]:
        return range_params(self.site_id, self.start, self.end)


def odds_ratio(*, success: int, failure: int, total_success: int, total_failure: int) -> float:
    """(a+1)(d+1) / ((b+1)(c+1)) with a = success, b = failure, c = the converted who did not do it,
    d = the others who did not."""
    a, b = success, failure
    c, d = total_success - success, total_failure - failure
    return (a + 1) * (d + 1) / ((b + 1) * (c + 1))


def is_skewed(converted: int, people: int) -> bool:
    return people > 0 and not SKEW_LOW <= converted / people <= SKEW_HIGH


def correlations(engine: Engine, query: CorrelationRange, *, limit: int) -> Correlations:
    """The events that go most with converting (`positive`, odds ratio above 1, highest first) and with
    not converting (`negative`, below 1, lowest first), at most ``limit`` of each; ties by people who
    did the event, then by name."""
    rows = library.run(engine, "correlation_counts", query.params()).to_pylist()
    (totals,) = [r for r in rows if r["name"] is None]
    converted, not_converted = totals["success_count"], totals["failure_count"]
    found: list[tuple[float, EventCorrelation]] = []
    for r in rows:
        if r["name"] is None:
            continue
        ratio = odds_ratio(
            success=r["success_count"],
            failure=r["failure_count"],
            total_success=converted,
            total_failure=not_converted,
        )
        path = r["category_path"]
        row = EventCorrelation(
            event=r["name"] if path is None else f"{r['name']}{PROPERTY_SEPARATOR}{path}",
            event_name=r["name"],
            category_path=path,
            success_count=r["success_count"],
            failure_count=r["failure_count"],
            odds_ratio=round(ratio, 6),
            correlation_type="success" if ratio > 1 else "failure",
        )
        found.append((ratio, row))

    def rank(entry: tuple[float, EventCorrelation], sign: int) -> tuple[float, int, str]:
        ratio, row = entry
        return sign * ratio, -(row.success_count + row.failure_count), row.event

    positive = [c for _, c in sorted((e for e in found if e[0] > 1), key=lambda e: rank(e, -1))]
    negative = [c for _, c in sorted((e for e in found if e[0] < 1), key=lambda e: rank(e, 1))]
    everyone = converted + not_converted
    return Correlations(
        site_id=query.site_id,
        start_date=query.start,
        end_date=query.end,
        totals=CorrelationTotals(
            people=everyone,
            converted=converted,
            not_converted=not_converted,
            conversion_rate=round(converted / everyone, 6) if everyone else 0.0,
        ),
        skewed=is_skewed(converted, everyone),
        positive=positive[:limit],
        negative=negative[:limit],
    )
