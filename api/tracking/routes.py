"""Ingestion routes: the public runtime (events, orders, metrics, identify) and private tracking."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from api.auth.permissions import ANALYTICS_VIEW
from api.deps import (
    ConfigStoreDep,
    CurrentUser,
    EventBatchesDep,
    IngestDep,
    require,
)
from api.errors import BadRequest, error_response
from api.openapi_bodies import documented_body
from api.public.guard import PUBLIC_RESPONSES, PublicCallDep, guard_public_site
from api.throttle import Limit, headers_on_errors, throttle_each_async
from api.tracking import service
from api.tracking.body import read_body, read_json
from api.tracking.schemas import IdentifyIn, IdentifyOut, TrackOneDoc
from api.tracking.service import EventBatches
from ingest.schemas import (
    MAX_BATCH_EVENTS,
    MAX_BODY_BYTES,
    MAX_EVENT_BYTES,
    BatchResult,
    EventBatch,
    MetricsBatch,
    MetricsBatchIn,
    OrderIn,
    OrderResult,
    TrackBatchIn,
    TrackEventBatch,
    TrackNestedDoc,
    TrackOrderIn,
)

# What every ingestion route may answer besides its own codes, in the one envelope.
_STORAGE_RESPONSES: dict[int | str, dict[str, Any]] = {
    413: error_response(
        f"The body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB once inflated (BODY_TOO_LARGE)."
    ),
    503: error_response(
        "The rows could not be made durable (STORAGE_UNAVAILABLE), or Redis "
        "(SHARED_STATE_UNAVAILABLE) or the config store (CONFIG_STORE_UNAVAILABLE) does not "
        "answer; nothing was acknowledged: retry after `Retry-After` seconds."
    ),
}
public = APIRouter(
    prefix="/public/sites/{siteKey}",
    tags=["public ingestion"],
    responses={
        **PUBLIC_RESPONSES,
        **_STORAGE_RESPONSES,
    },
)
private = APIRouter(
    prefix="/analytics",
    tags=["tracking"],
    responses={404: error_response("No site with that `siteId` among the caller's."), **_STORAGE_RESPONSES},
)

LIMITS_NOTE = (
    f" Limits: {MAX_BATCH_EVENTS} events per batch, {MAX_EVENT_BYTES // 1024} KiB per event, "
    f"{MAX_BODY_BYTES // (1024 * 1024)} MiB per body (once inflated: a body may be sent with "
    "`Content-Encoding: gzip`), ids up to 128 characters, URLs up to 2048, `X-Aisle-Client-Platform` and "
    "`X-Aisle-Client-Version` up to 64. Content-Type `application/json`, "
    "or `text/plain` (what `navigator.sendBeacon` sends for a string)."
)


@public.post(
    "/events/batch",
    # Written straight from the result (orjson), not through the model: the documented answer.
    response_model=BatchResult,
    responses={200: {"description": "What was stored and what was rejected, by index."}},
    openapi_extra=documented_body(
        EventBatch,
        "A batch of canonical events (each shaped like `EventIn`). Valid events are stored, invalid ones are "
        "reported by index; a re-sent `eventId` is stored once." + LIMITS_NOTE,
    ),
)
async def events_batch(request: Request, siteKey: str, batches: EventBatchesDep) -> Response:
    """Visitor-throttled (`X-RateLimit-*`, 429 with `Retry-After`). 200 means every accepted event is durable."""
    return await accept_event_batch(batches, request, siteKey)


async def accept_event_batch(batches: EventBatches, request: Request, site_key: str) -> Response:
    """The events batch, answered. The storefront's hottest route: ``api.hot_path`` calls it straight
    off the ASGI call, ``batches`` bound by the app factory; the route above only when the hot path
    passes a request on."""
    caller = await guard_public_site(request, batches.store, site_key)
    events = await batches.prepare(caller, await read_body(request))
    # A batch counts against every visitor it names (one, from a browser), else its sender's address.
    sender = request.client.host if request.client else "unknown"
    headers = await throttle_each_async(
        batches.hot,
        limit=Limit("events-visitor", batches.settings.visitor_batches_per_minute, 60),
        subjects=[f"{caller.site['id']}:{v}" for v in events.visitors or [sender]],
    )
    with headers_on_errors(headers):
        result = await service.durably(events.write())
    return Response(
        orjson.dumps(result.model_dump(by_alias=True)), media_type="application/json", headers=headers
    )


DUPLICATE_ORDER_RESPONSE: dict[int | str, dict[str, Any]] = {
    409: error_response(
        "The orderId was stored within the duplicate window (DUPLICATE_ORDER); nothing stored."
    )
}


@public.post(
    "/orders",
    status_code=201,
    response_model=OrderResult,
    responses=DUPLICATE_ORDER_RESPONSE,
    openapi_extra=documented_body(
        OrderIn,
        (
            "One order. Money as decimal strings or numbers, kept exact (a JSON number of more than 15 "
            "significant digits is refused: send it as a string)."
        ),
    ),
)
async def orders(call: PublicCallDep) -> OrderResult:
    """Stricter order throttle; a repeated `orderId` inside the duplicate window answers 409 and stores nothing.
    Currency: the order's (ISO-4217), else the site's, else EUR."""
    raw = await read_json(call.request)
    named = isinstance(raw, dict) and isinstance(raw.get("visitorId"), str)
    visitor = raw["visitorId"] if named else call.address
    headers = call.throttle("orders-visitor", call.settings.orders_per_visitor_per_minute, visitor)
    with headers_on_errors(headers):
        ctx = service.context(call.caller, sent_at=None)
        return await service.accept_order(call.ingest, raw=raw, ctx=ctx)


@public.post(
    "/metrics",
    response_model=BatchResult,
    openapi_extra=documented_body(
        MetricsBatch, "Client-side metrics (web vitals, tracker health); invalid ones are reported by index."
    ),
)
async def metrics(call: PublicCallDep) -> BatchResult:
    batch = MetricsBatchIn.model_validate(await read_json(call.request))
    visitor = service.visitor_of(batch.metrics, call.address)
    headers = call.throttle("metrics-visitor", call.settings.visitor_batches_per_minute, visitor)
    with headers_on_errors(headers):
        ctx = service.context(call.caller, sent_at=batch.sent_at)
        return await service.accept_metrics(call.ingest, metrics=batch.metrics, ctx=ctx)


@public.post(
    "/identify",
    response_model=IdentifyOut,
    openapi_extra=documented_body(IdentifyIn, "The visitor and the user id it belongs to."),
)
async def identify(call: PublicCallDep, store: ConfigStoreDep) -> IdentifyOut:
    """Link the visitor to a user id. `merged` is true when the visitor's history now counts for that
    user: the link is new and the visitor was linked to no other user before (analytics count a
    visitor as its first user). Also stored as an `identify` event."""
    # Read like the other ingestion bodies: the same size limit, content types (sendBeacon) and codes.
    body = IdentifyIn.model_validate(await read_json(call.request))
    headers = call.throttle("events-visitor", call.settings.visitor_batches_per_minute, body.visitor_id)
    with headers_on_errors(headers):
        return await service.identify(call.ingest, store, caller=call.caller, body=body)


# --- private tracking (Bearer; the site named in the body) -------------------------------------------


async def _site_id_and_body(request: Request, *, what: str) -> tuple[str, dict[str, Any]]:
    """A private tracking body names its site in `siteId`; the rest of it is the event or order."""
    raw = await read_json(request)
    if not isinstance(raw, dict) or not isinstance(raw.get("siteId"), str):
        raise BadRequest(f"Body needs `siteId` and the {what}'s fields", code="VALIDATION_FAILED")
    return raw["siteId"], {k: v for k, v in raw.items() if k != "siteId"}


@private.post(
    "/track",
    response_model=BatchResult,
    dependencies=[require(ANALYTICS_VIEW)],
    openapi_extra=documented_body(
        TrackOneDoc | TrackNestedDoc,
        "One event plus `siteId`, or `{siteId, event: {...}}`. Historical timestamps are accepted.",
        name="TrackOne",
    ),
)
async def track(
    request: Request, store: ConfigStoreDep, ingest: IngestDep, principal: CurrentUser
) -> BatchResult:
    site_id, event = await _site_id_and_body(request, what="event")
    site = await service.owned_site(store, organization_id=principal.organization_id, site_id=site_id)
    if "event" in event and len(event) == 1:  # the nested form
        event = event["event"]
    return await service.track_events(ingest, events=[event], site=site, sent_at=None)


@private.post(
    "/track/batch",
    response_model=BatchResult,
    dependencies=[require(ANALYTICS_VIEW)],
    openapi_extra=documented_body(
        TrackEventBatch, "Like the public events batch, plus `siteId`; for imports and backfills."
    ),
)
async def track_batch(
    request: Request, store: ConfigStoreDep, ingest: IngestDep, principal: CurrentUser
) -> BatchResult:
    batch = TrackBatchIn.model_validate(await read_json(request))
    site = await service.owned_site(store, organization_id=principal.organization_id, site_id=batch.site_id)
    return await service.track_events(ingest, events=batch.events, site=site, sent_at=batch.sent_at)


@private.post(
    "/track/order",
    status_code=201,
    response_model=OrderResult,
    responses=DUPLICATE_ORDER_RESPONSE,
    dependencies=[require(ANALYTICS_VIEW)],
    openapi_extra=documented_body(TrackOrderIn, "One order plus `siteId`; historical timestamps accepted."),
)
async def track_order(
    request: Request, store: ConfigStoreDep, ingest: IngestDep, principal: CurrentUser
) -> OrderResult:
    site_id, order = await _site_id_and_body(request, what="order")
    site = await service.owned_site(store, organization_id=principal.organization_id, site_id=site_id)
    return await service.accept_order(ingest, raw=order, ctx=service.private_context(site, sent_at=None))
