"""Ingestion routes: the public runtime (events, orders, metrics, identify) and private tracking."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response
from pydantic import Field

from api.auth.permissions import ANALYTICS_VIEW
from api.deps import (
    ClientAddress,
    ConfigStoreDep,
    CurrentUser,
    HotStateDep,
    SettingsDep,
    load_owned_site,
    require,
)
from api.errors import BadRequest, Conflict, ServiceUnavailable, error_response
from api.ingest_body import parse_json, read_body, read_json
from api.openapi_bodies import documented_body
from api.public.guard import PUBLIC_RESPONSES, PublicCaller, PublicSite, guard_public_site
from api.schemas import CamelModel
from api.store_io import off_loop
from api.throttle import Limit, headers_on_errors, throttle, throttle_each_async
from ingest.events import batch_visitors, parse_event_batch
from ingest.schemas import (
    MAX_BATCH_EVENTS,
    MAX_BODY_BYTES,
    MAX_EVENT_BYTES,
    MAX_ID_LENGTH,
    BatchResult,
    EventBatch,
    EventBatchIn,
    EventIn,
    IdentityId,
    MetricsBatch,
    MetricsBatchIn,
    OrderIn,
    OrderResult,
    SiteIdText,
    TrackBatchIn,
    TrackEventBatch,
    TrackNestedDoc,
    TrackOrderIn,
)
from ingest.service import Ingest
from ingest.validation import Context, Rejected
from warehouse.config_store import identity_links

# What every ingestion route may answer besides its own codes, in the one envelope.
_STORAGE_RESPONSES = {
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


def _ingest(request: Request) -> Ingest:
    return request.app.state.ingest


def _context(caller: PublicCaller, *, sent_at: datetime | None) -> Context:
    return Context(
        site_id=caller.site["id"],
        site_currency=caller.site["currency"],
        received_at=datetime.now(UTC),
        channel=caller.channel,
        sent_at=sent_at,
        client_platform=caller.client_platform,
        client_version=caller.client_version,
    )


def _visitors_of(items: list[Any]) -> list[str]:
    """The visitors ``items`` (a raw body's objects) name, each once."""
    return batch_visitors(item.get("visitorId") if isinstance(item, dict) else None for item in items)


def _visitor_of(items: list[Any], fallback: str | None) -> str | None:
    """The first visitor ``items`` name, else ``fallback``."""
    return next(iter(_visitors_of(items)), fallback)


async def _durably(awaitable) -> Any:
    try:
        return await awaitable
    except OSError as exc:
        # Nothing was acknowledged, so nothing is lost: the client retries.
        raise ServiceUnavailable(
            "Could not store the data durably; retry shortly",
            code="STORAGE_UNAVAILABLE",
            headers={"Retry-After": "1"},
        ) from exc


@public.post(
    "/events/batch",
    responses={
        200: {"model": BatchResult, "description": "What was stored and what was rejected, by index."}
    },
    openapi_extra=documented_body(
        EventBatch,
        "A batch of canonical events (each shaped like `EventIn`). Valid events are stored, invalid ones are "
        "reported by index; a re-sent `eventId` is stored once." + LIMITS_NOTE,
    ),
)
async def events_batch(request: Request, siteKey: str) -> Response:
    """Visitor-throttled (`X-RateLimit-*`, 429 with `Retry-After`). 200 means every accepted event is durable."""
    return await accept_event_batch(request, siteKey)


async def accept_event_batch(request: Request, site_key: str) -> Response:
    # The storefront's hottest route (served by ``api.hot_path``): its needs are read straight off
    # the app state instead of through dependency injection, which costs more than the ingest work
    # for a batch of 50.
    state = request.app.state
    caller = await guard_public_site(request, state.store, site_key)
    body = await read_body(request)
    workers = state.batch_workers
    prepared = await workers.prepare(body, _context(caller, sent_at=None)) if workers else None
    if prepared is not None:
        visitors = prepared.visitors
        store = partial(state.ingest.accept_prepared_events, prepared, caller.site["id"])
    elif (valid := parse_event_batch(body)) is not None:
        visitors = batch_visitors(event.visitor_id for event in valid.events)
        store = partial(
            state.ingest.accept_valid_events, valid.events, _context(caller, sent_at=valid.sent_at)
        )
    else:
        batch = EventBatchIn.model_validate(parse_json(body))
        visitors = _visitors_of(batch.events)
        store = partial(state.ingest.accept_events, batch.events, _context(caller, sent_at=batch.sent_at))
    # A batch counts against every visitor it names (one, from a browser), else its sender's address.
    sender = request.client.host if request.client else "unknown"
    headers = await throttle_each_async(
        state.hot,
        limit=Limit("events-visitor", state.settings.visitor_batches_per_minute, 60),
        subjects=[f"{caller.site['id']}:{v}" for v in visitors or [sender]],
    )
    with headers_on_errors(headers):
        result = await _durably(store())
    return Response(
        orjson.dumps(result.model_dump(by_alias=True)), media_type="application/json", headers=headers
    )


async def _accept_order(request: Request, raw: Any, ctx: Context) -> OrderResult:
    ingest = _ingest(request)
    try:
        row = ingest.order(raw, ctx)
    except Rejected as exc:
        raise BadRequest(exc.reason, code=exc.code) from exc
    # The order id is claimed as the order is logged (an import's, or one in the lake, counts too).
    if not await _durably(ingest.store_new_order(row, ctx.site_id)):
        hint = " (a refund of it needs an orderId of its own, with isRefund true and refundOf naming it)"
        raise Conflict(
            f"Order '{row['order_id']}' was already received; it is stored once"
            + (hint if row["is_refund"] else ""),
            code="DUPLICATE_ORDER",
        )
    return OrderResult(order_id=row["order_id"], currency=row["currency"])


DUPLICATE_ORDER_RESPONSE = {
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
async def orders(
    request: Request,
    caller: PublicSite,
    hot: HotStateDep,
    settings: SettingsDep,
    address: ClientAddress,
    response: Response,
) -> OrderResult:
    """Stricter order throttle; a repeated `orderId` inside the duplicate window answers 409 and stores nothing.
    Currency: the order's (ISO-4217), else the site's, else EUR."""
    raw = await read_json(request)
    visitor = (
        raw.get("visitorId") if isinstance(raw, dict) and isinstance(raw.get("visitorId"), str) else address
    )
    headers = throttle(
        hot,
        response,
        limit=Limit("orders-visitor", settings.orders_per_visitor_per_minute, 60),
        subject=f"{caller.site['id']}:{visitor}",
    )
    with headers_on_errors(headers):
        return await _accept_order(request, raw, _context(caller, sent_at=None))


@public.post(
    "/metrics",
    response_model=BatchResult,
    openapi_extra=documented_body(
        MetricsBatch, "Client-side metrics (web vitals, tracker health); invalid ones are reported by index."
    ),
)
async def metrics(
    request: Request,
    caller: PublicSite,
    hot: HotStateDep,
    settings: SettingsDep,
    address: ClientAddress,
    response: Response,
) -> BatchResult:
    batch = MetricsBatchIn.model_validate(await read_json(request))
    headers = throttle(
        hot,
        response,
        limit=Limit("metrics-visitor", settings.visitor_batches_per_minute, 60),
        subject=f"{caller.site['id']}:{_visitor_of(batch.metrics, address)}",
    )
    with headers_on_errors(headers):
        return await _durably(
            _ingest(request).accept_metrics(batch.metrics, _context(caller, sent_at=batch.sent_at))
        )


class IdentifyIn(CamelModel):
    # Not a StrictCamelModel: fields it does not know are left out, as an event's are (Segment's
    # identify also sends anonymousId, timestamp and context), and ids are kept as sent, as an
    # event's are (a link is to the very visitor id its events carry).

    visitor_id: IdentityId
    user_id: IdentityId
    event_id: str | None = Field(
        default=None,
        max_length=MAX_ID_LENGTH,
        description="Client-made id of the identify event; a retry with the same id within 24 h is stored once.",
    )
    session_id: IdentityId | None = Field(
        default=None,
        description="The visitor's current session; without it the identify event is in a session of the "
        "visitor's own (`identify:<visitorId>`), never one shared with other visitors.",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="What the SDK's `identify(userId, metadata?)` passes; kept as the identify event's "
        "metadata.",
    )
    traits: dict[str, Any] = Field(
        default_factory=dict, description="Segment's name for the user's traits; kept as `metadata.traits`."
    )


class IdentifyOut(CamelModel):
    success: bool
    merged: bool


@public.post(
    "/identify",
    response_model=IdentifyOut,
    openapi_extra=documented_body(IdentifyIn, "The visitor and the user id it belongs to."),
)
async def identify(
    request: Request,
    caller: PublicSite,
    hot: HotStateDep,
    settings: SettingsDep,
    store: ConfigStoreDep,
    response: Response,
) -> IdentifyOut:
    """Link the visitor to a user id. `merged` is true when the visitor's history now counts for that
    user: the link is new and the visitor was linked to no other user before (analytics count a
    visitor as its first user). Also stored as an `identify` event."""
    # Read like the other ingestion bodies: the same size limit, content types (sendBeacon) and codes.
    body = IdentifyIn.model_validate(await read_json(request))
    headers = throttle(
        hot,
        response,
        limit=Limit("events-visitor", settings.visitor_batches_per_minute, 60),
        subject=f"{caller.site['id']}:{body.visitor_id}",
    )
    with headers_on_errors(headers):
        return await _identified(request, caller, store, body)


async def _identified(request: Request, caller, store, body: IdentifyIn) -> IdentifyOut:
    session = body.session_id or f"identify:{body.visitor_id}"[:128]
    metadata = dict(body.metadata)
    if "traits" in body.model_fields_set or not metadata:
        metadata["traits"] = body.traits
    event = {
        "name": "identify",
        "visitorId": body.visitor_id,
        "userId": body.user_id,
        "sessionId": session,
        "metadata": metadata,
        "eventId": body.event_id,
    }
    result = await _durably(_ingest(request).accept_events([event], _context(caller, sent_at=None)))
    if result.rejected:
        raise BadRequest(result.rejected[0].reason, code=result.rejected[0].code)

    def link() -> bool:
        with store.begin() as conn:
            return identity_links.link(
                conn, site_id=caller.site["id"], visitor_id=body.visitor_id, user_id=body.user_id
            )

    return IdentifyOut(success=True, merged=await off_loop(store, link))


# --- private tracking (Bearer; the site named in the body) -------------------------------------------


def _private_context(site: dict[str, Any], *, sent_at: datetime | None) -> Context:
    return Context(
        site_id=site["id"],
        site_currency=site["currency"],
        received_at=datetime.now(UTC),
        channel="server",
        historical=True,
        sent_at=sent_at,
    )


async def _owned_site_and_body(
    request: Request, store, principal, *, what: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A private tracking body names its site in `siteId`; the rest of it is the event or order."""
    raw = await read_json(request)
    if not isinstance(raw, dict) or not isinstance(raw.get("siteId"), str):
        raise BadRequest(f"Body needs `siteId` and the {what}'s fields", code="VALIDATION_FAILED")
    site = await off_loop(store, load_owned_site, store, principal, raw["siteId"])
    return site, {k: v for k, v in raw.items() if k != "siteId"}


class TrackOneDoc(EventIn):
    site_id: SiteIdText


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
async def track(request: Request, store: ConfigStoreDep, principal: CurrentUser) -> BatchResult:
    site, event = await _owned_site_and_body(request, store, principal, what="event")
    if "event" in event and len(event) == 1:  # the nested form
        event = event["event"]
    return await _durably(_ingest(request).accept_events([event], _private_context(site, sent_at=None)))


@private.post(
    "/track/batch",
    response_model=BatchResult,
    dependencies=[require(ANALYTICS_VIEW)],
    openapi_extra=documented_body(
        TrackEventBatch, "Like the public events batch, plus `siteId`; for imports and backfills."
    ),
)
async def track_batch(request: Request, store: ConfigStoreDep, principal: CurrentUser) -> BatchResult:
    batch = TrackBatchIn.model_validate(await read_json(request))
    site = await off_loop(store, load_owned_site, store, principal, batch.site_id)
    return await _durably(
        _ingest(request).accept_events(batch.events, _private_context(site, sent_at=batch.sent_at))
    )


@private.post(
    "/track/order",
    status_code=201,
    response_model=OrderResult,
    responses=DUPLICATE_ORDER_RESPONSE,
    dependencies=[require(ANALYTICS_VIEW)],
    openapi_extra=documented_body(TrackOrderIn, "One order plus `siteId`; historical timestamps accepted."),
)
async def track_order(request: Request, store: ConfigStoreDep, principal: CurrentUser) -> OrderResult:
    site, order = await _owned_site_and_body(request, store, principal, what="order")
    return await _accept_order(request, order, _private_context(site, sent_at=None))
