"""The attribution of one conversion: the touchpoints before it and each one's credit per model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.routing import APIRoute

from api.analytics.attribution import service
from api.analytics.attribution.schemas import EventAttribution
from api.analytics.revenue.params import LookbackDays
from api.analytics.revenue.semantics import MONEY, TOUCHPOINTS
from api.analytics.scope import Analyst
from api.deps import ConfigStoreDep, EngineDep
from api.schemas import SITE_ID_FORMAT
from queries.attribution import DEFAULT_LOOKBACK_DAYS

router = APIRouter(prefix="/analytics", tags=["analytics"])


@router.get(
    "/events/{eventId}/attribution",
    response_model=EventAttribution,
    responses={404: {"description": "EVENT_NOT_FOUND: no event or order of the caller's sites has this id."}},
)
def attribution(
    store: ConfigStoreDep,
    engine: EngineDep,
    principal: Analyst,
    eventId: str,
    site_id: Annotated[
        str | None,
        Query(
            alias="siteId",
            description="The site of the event (uuid); omitted: every site of the organisation.",
            json_schema_extra=SITE_ID_FORMAT,
        ),
    ] = None,
    lookback_days: LookbackDays = DEFAULT_LOOKBACK_DAYS,
) -> EventAttribution:
    """The attribution of one conversion: the event `eventId` (any event, usually a `purchase`), or,
    when no event has that id, the order with that `orderId`. A purchase event naming an order
    (`metadata.orderId`) carries that order's money (`order`: `{orderId, currency, total}`).
    `conversionEventAt` is the conversion's time; `windowStart` = conversionEventAt - lookbackDays.
    `touchpoints` lists the person's touchpoints in `[windowStart, conversionEventAt)` in credit order,
    each with `kind` (impression or click) and `credits` per model (each model's credits sum to 1 over
    the touchpoints; all empty when there are none). `totalTouchpoints` counts them,
    `totalInteractions` the clicks among them and `totalImpressions` the rest. `models`: per model,
    the credit of each entity (its touchpoints' credits summed) and, with an order, its `revenue`
    (credit times the order total, in the order's currency). Ids are looked up on the caller's sites
    only (404 otherwise); an id found on two of them answers 400 asking for `siteId`."""
    return service.get_or_raise(
        store, engine, principal=principal, event_id=eventId, site_id=site_id, lookback_days=lookback_days
    )


for _route in router.routes:
    assert isinstance(_route, APIRoute)  # the router holds path operations only
    _route.description = f"{_route.description}\n\n{TOUCHPOINTS}\n\n{MONEY}"
