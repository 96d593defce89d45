"""Funnel definitions: saved funnels of a site, their templates, and running one."""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Connection

from api.analytics.funnel_definitions.schemas import (
    FunnelDefinitionAnalysis,
    FunnelDefinitionCreate,
    FunnelDefinitionOut,
    FunnelDefinitionUpdate,
    FunnelTemplate,
)
from api.analytics.funnels.service import funnel_query, parse_steps
from api.analytics.scope import analytics_site
from api.deps import Principal
from api.errors import Forbidden
from queries.funnel import DEFAULT_WINDOW_SECONDS, funnel
from warehouse.config_store import activity, funnel_definitions
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine

# A row of `funnel_definitions`, as its repository returns it.
Definition = dict[str, Any]

NAME_MAX = 200
COPY_SUFFIX = " (copy)"

TEMPLATES: tuple[FunnelTemplate, ...] = (
    FunnelTemplate(
        key="browse_to_purchase",
        name="Browse to purchase",
        description="From any page to a completed purchase, through a product page, the cart and checkout.",
        steps=["page_view", "product_view", "add_to_cart", "checkout_begin", "purchase"],
        window_seconds=DEFAULT_WINDOW_SECONDS,
        order="sequential",
    ),
    FunnelTemplate(
        key="search_to_cart",
        name="Search to cart",
        description="Searches that lead to a product page and an add to cart.",
        steps=["search_query", "search_results", "product_view", "add_to_cart"],
        window_seconds=24 * 3600,
        order="sequential",
    ),
    FunnelTemplate(
        key="cart_to_checkout",
        name="Cart to checkout",
        description="Carts that reach checkout and become a purchase.",
        steps=["add_to_cart", "checkout_begin", "purchase"],
        window_seconds=7 * 24 * 3600,
        order="sequential",
    ),
    FunnelTemplate(
        key="category_to_cart",
        name="Category to cart",
        description="Category browsing that leads to a product page and an add to cart.",
        steps=["category_view", "product_view", "add_to_cart"],
        window_seconds=24 * 3600,
        order="sequential",
    ),
    FunnelTemplate(
        key="placement_to_cart",
        name="Placement to cart",
        description="Personalised placements seen, clicked, and followed by an add to cart.",
        steps=["impression", "click", "add_to_cart"],
        window_seconds=24 * 3600,
        order="sequential",
    ),
    FunnelTemplate(
        key="signup_to_first_purchase",
        name="Signup to first purchase",
        description="New accounts that buy within 30 days.",
        steps=["user_signup", "purchase"],
        window_seconds=30 * 24 * 3600,
        order="sequential",
    ),
)


def definition_out(definition: Definition) -> FunnelDefinitionOut:
    return FunnelDefinitionOut.model_validate(definition)


def _no_access() -> Forbidden:
    return Forbidden("You do not have access to this funnel definition", code="SITE_ACCESS_DENIED")


def get_owned(store: ConfigStore, *, principal: Principal, definition_id: str) -> tuple[Definition, Site]:
    """The definition and its site, for a caller with `analytics:view` in the organisation that owns
    the site. Unknown and foreign ids both answer 403 `SITE_ACCESS_DENIED`, so ids cannot be probed."""
    with store.connect() as conn:
        definition = funnel_definitions.get(conn, definition_id=definition_id)
    no_access = _no_access()
    if definition is None:
        raise no_access
    try:
        site = analytics_site(store, principal, definition["site_id"])
    except Forbidden as refused:
        if refused.code != no_access.code:  # the caller's own site, a role without the permission
            raise
        raise no_access from None  # the same answer as for an unknown id
    return definition, site


def _record(conn: Connection, *, site: Site, user_id: str, action: str, definition: Definition) -> None:
    details = {"funnelDefinitionId": definition["id"], "name": definition["name"]}
    activity.record_on_site(conn, site, action, user_id=user_id, details=details)


def create(store: ConfigStore, *, principal: Principal, body: FunnelDefinitionCreate) -> Definition:
    site = analytics_site(store, principal, body.site_id)
    steps = parse_steps(body.steps)
    with store.begin() as conn:
        definition = funnel_definitions.create(
            conn,
            site_id=site["id"],
            name=body.name,
            description=body.description,
            steps=[*steps],
            window_seconds=body.window_seconds,
            order=body.order,
            created_by=principal.user_id,
        )
        _record(
            conn,
            site=site,
            user_id=principal.user_id,
            action="funnel_definition.created",
            definition=definition,
        )
    return definition


def list_for_site(store: ConfigStore, *, site: Site) -> list[Definition]:
    with store.connect() as conn:
        return funnel_definitions.list(conn, site_id=site["id"])


def update(
    store: ConfigStore,
    *,
    definition: Definition,
    site: Site,
    user_id: str,
    body: FunnelDefinitionUpdate,
) -> Definition:
    values = body.model_dump(exclude_unset=True)
    if "steps" in values:
        values["steps"] = [*parse_steps(values["steps"])]
    with store.begin() as conn:
        updated = funnel_definitions.update(conn, definition_id=definition["id"], **values)
        if updated is None:  # deleted by another request in between
            raise _no_access()
        _record(conn, site=site, user_id=user_id, action="funnel_definition.updated", definition=updated)
    return updated


def delete(store: ConfigStore, *, definition: Definition, site: Site, user_id: str) -> None:
    with store.begin() as conn:
        funnel_definitions.delete(conn, definition_id=definition["id"])
        _record(conn, site=site, user_id=user_id, action="funnel_definition.deleted", definition=definition)


def copy_name(name: str) -> str:
    """`<name> (copy)`, shortened so it still fits the name column."""
    return name[: NAME_MAX - len(COPY_SUFFIX)] + COPY_SUFFIX


def duplicate(store: ConfigStore, *, definition: Definition, site: Site, user_id: str) -> Definition:
    with store.begin() as conn:
        copy = funnel_definitions.create(
            conn,
            site_id=definition["site_id"],
            name=copy_name(definition["name"]),
            description=definition["description"],
            steps=definition["steps"],
            window_seconds=definition["window_seconds"],
            order=definition["order"],
            created_by=user_id,
        )
        _record(conn, site=site, user_id=user_id, action="funnel_definition.created", definition=copy)
    return copy


def analyze(
    engine: Engine,
    *,
    definition: Definition,
    site: Site,
    start_date: date | None,
    end_date: date | None,
) -> FunnelDefinitionAnalysis:
    query = funnel_query(
        site,
        steps=definition["steps"],
        start_date=start_date,
        end_date=end_date,
        window_seconds=definition["window_seconds"],
        order=definition["order"],
    )
    return FunnelDefinitionAnalysis(
        definition=definition_out(definition),
        start_date=query.start_date,
        end_date=query.end_date,
        report=funnel(engine, query),
    )
