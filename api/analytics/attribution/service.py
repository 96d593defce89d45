"""The attribution of one conversion, looked up on the caller's sites only."""

from __future__ import annotations

from api.analytics.attribution.schemas import EventAttribution
from api.deps import Principal, load_owned_site
from api.errors import BadRequest, NotFound
from queries.attribution import AmbiguousEventId, event_attribution
from warehouse.config_store import sites
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine


def get_or_raise(
    store: ConfigStore,
    engine: Engine,
    *,
    principal: Principal,
    event_id: str,
    site_id: str | None,
    lookback_days: int,
) -> EventAttribution:
    """The conversion `event_id` (an event, else an order) on `site_id`, or, omitted, on any site of the
    caller's organisation: 404 ``EVENT_NOT_FOUND`` when none has it, 400 ``EVENT_ID_AMBIGUOUS`` when
    several do."""
    if site_id is not None:
        site_ids = [load_owned_site(store, principal, site_id)["id"]]
    else:
        with store.connect() as conn:
            site_ids = [
                s["id"] for s in sites.list_for_organization(conn, organization_id=principal.organization_id)
            ]
    try:
        found = event_attribution(engine, site_ids=site_ids, event_id=event_id, lookback_days=lookback_days)
    except AmbiguousEventId:
        raise BadRequest(
            f"'{event_id}' names conversions on several of your sites; pass siteId", code="EVENT_ID_AMBIGUOUS"
        ) from None
    if found is None:
        raise NotFound(f"No event or order '{event_id}' on your sites", code="EVENT_NOT_FOUND")
    return found
