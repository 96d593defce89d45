"""Ingestion's work behind the routes: contexts, durable appends, orders, identify's link, private
tracking's site; and the events batch's needs, held once for the hot path."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from aisle.settings import Settings
from api.errors import BadRequest, Conflict, ServiceUnavailable
from api.sites import service as sites_service
from api.store_io import off_loop
from api.tracking.body import parse_json
from api.tracking.schemas import IdentifyIn, IdentifyOut
from ingest.batch_worker import BatchWorkers
from ingest.events import batch_visitors, parse_event_batch
from ingest.schemas import BatchResult, EventBatchIn, OrderResult
from ingest.service import Ingest
from ingest.validation import Context, Rejected
from warehouse.config_store import identity_links
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.hotstate import HotState

if TYPE_CHECKING:  # the guard's module reads the typed dependencies, which read this one
    from api.public.guard import PublicCaller

T = TypeVar("T")


def context(caller: PublicCaller, *, sent_at: datetime | None) -> Context:
    """What a storefront's rows are stamped with: its site, channel and client, received now."""
    return Context(
        site_id=caller.site["id"],
        site_currency=caller.site["currency"],
        received_at=datetime.now(UTC),
        channel=caller.channel,
        sent_at=sent_at,
        client_platform=caller.client_platform,
        client_version=caller.client_version,
    )


def private_context(site: Site, *, sent_at: datetime | None) -> Context:
    """What a server's rows (private tracking: imports, backfills) are stamped with."""
    return Context(
        site_id=site["id"],
        site_currency=site["currency"],
        received_at=datetime.now(UTC),
        channel="server",
        historical=True,
        sent_at=sent_at,
    )


def visitors_of(items: list[Any]) -> list[str]:
    """The visitors ``items`` (a raw body's objects) name, each once."""
    return batch_visitors(item.get("visitorId") if isinstance(item, dict) else None for item in items)


def visitor_of(items: list[Any], fallback: str) -> str:
    """The first visitor ``items`` name, else ``fallback``."""
    return next(iter(visitors_of(items)), fallback)


async def durably(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except OSError as exc:
        # Nothing was acknowledged, so nothing is lost: the client retries.
        raise ServiceUnavailable(
            "Could not store the data durably; retry shortly",
            code="STORAGE_UNAVAILABLE",
            headers={"Retry-After": "1"},
        ) from exc


# --- the events batch ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedEvents:
    """A batch, parsed and validated: the visitors it names (what it is throttled by), and the write."""

    visitors: list[str]
    write: Callable[[], Awaitable[BatchResult]]


@dataclass(frozen=True)
class EventBatches:
    """What the storefront's events batch needs, gathered once by the app factory: the route is served
    off the ASGI call (``api.hot_path``), where dependency injection would cost more than the ingest
    work for a batch of 50."""

    store: ConfigStore
    ingest: Ingest
    workers: BatchWorkers | None
    hot: HotState
    settings: Settings

    async def prepare(self, caller: PublicCaller, body: bytes) -> PreparedEvents:
        """``body`` parsed and validated: by a batch worker when there are workers, else in process
        (the fast parser first, the item-by-item validation for a batch it does not take)."""
        site_id = caller.site["id"]
        prepared = await self.workers.prepare(body, context(caller, sent_at=None)) if self.workers else None
        if prepared is not None:
            return PreparedEvents(
                prepared.visitors, partial(self.ingest.accept_prepared_events, prepared, site_id)
            )
        if (valid := parse_event_batch(body)) is not None:
            return PreparedEvents(
                batch_visitors(event.visitor_id for event in valid.events),
                partial(
                    self.ingest.accept_valid_events, valid.events, context(caller, sent_at=valid.sent_at)
                ),
            )
        batch = EventBatchIn.model_validate(parse_json(body))
        return PreparedEvents(
            visitors_of(batch.events),
            partial(self.ingest.accept_events, batch.events, context(caller, sent_at=batch.sent_at)),
        )


# --- orders ----------------------------------------------------------------------------------------


async def accept_order(ingest: Ingest, *, raw: Any, ctx: Context) -> OrderResult:
    try:
        row = ingest.order(raw, ctx)
    except Rejected as exc:
        raise BadRequest(exc.reason, code=exc.code) from exc
    # The order id is claimed as the order is logged (an import's, or one in the lake, counts too).
    if not await durably(ingest.store_new_order(row, ctx.site_id)):
        hint = " (a refund of it needs an orderId of its own, with isRefund true and refundOf naming it)"
        raise Conflict(
            f"Order '{row['order_id']}' was already received; it is stored once"
            + (hint if row["is_refund"] else ""),
            code="DUPLICATE_ORDER",
        )
    return OrderResult(order_id=row["order_id"], currency=row["currency"])


# --- metrics -------------------------------------------------------------------------------------


async def accept_metrics(ingest: Ingest, *, metrics: list[Any], ctx: Context) -> BatchResult:
    return await durably(ingest.accept_metrics(metrics, ctx))


# --- identify --------------------------------------------------------------------------------------


async def identify(
    ingest: Ingest, store: ConfigStore, *, caller: PublicCaller, body: IdentifyIn
) -> IdentifyOut:
    """Store the identify event, then link the visitor to the user; `merged` when the link is new and
    the visitor had none to another user."""
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
    result = await durably(ingest.accept_events([event], context(caller, sent_at=None)))
    if result.rejected:
        raise BadRequest(result.rejected[0].reason, code=result.rejected[0].code)

    def link() -> bool:
        with store.begin() as conn:
            return identity_links.link(
                conn, site_id=caller.site["id"], visitor_id=body.visitor_id, user_id=body.user_id
            )

    return IdentifyOut(success=True, merged=await off_loop(store, link))


# --- private tracking ------------------------------------------------------------------------------


async def owned_site(store: ConfigStore, *, organization_id: str, site_id: str) -> Site:
    """The site a private tracking body names, if the caller's organisation owns it (else 403)."""
    return await off_loop(
        store, sites_service.get_owned, store, organization_id=organization_id, site_id=site_id
    )


async def track_events(
    ingest: Ingest, *, events: list[Any], site: Site, sent_at: datetime | None
) -> BatchResult:
    return await durably(ingest.accept_events(events, private_context(site, sent_at=sent_at)))
