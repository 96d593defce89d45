"""Funnel definition routes: saved funnels of a site (create, list, get, update, delete, duplicate),
templates, and running a saved funnel."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from api.analytics.funnel_definitions import service
from api.analytics.funnel_definitions.schemas import (
    FunnelDefinitionAnalysis,
    FunnelDefinitionCreate,
    FunnelDefinitionOut,
    FunnelDefinitionUpdate,
    FunnelTemplate,
)
from api.analytics.funnel_definitions.service import Definition
from api.analytics.scope import AnalyticsSite
from api.deps import ConfigStoreDep, CurrentUser, EngineDep
from api.schemas import IsoDate, Ok
from warehouse.config_store.sites import Site

router = APIRouter(prefix="/analytics/funnels/definitions", tags=["analytics"])

ACCESS = (
    "Needs `analytics:view` in the organisation that owns the site; a site or definition id that is unknown "
    "or belongs to another organisation answers 403 `SITE_ACCESS_DENIED` (never 404), so ids cannot be probed."
)


def described(text: str) -> str:
    """A route's OpenAPI description: what it does, then who may call it."""
    return f"{text}\n\n{ACCESS}"


def owned_definition(
    store: ConfigStoreDep,
    principal: CurrentUser,
    definition_id: Annotated[str, Path(alias="id", description="The funnel definition id.")],
) -> tuple[Definition, Site]:
    return service.get_owned(store, principal=principal, definition_id=definition_id)


OwnedDefinition = Annotated[tuple[Definition, Site], Depends(owned_definition)]


@router.post(
    "",
    status_code=201,
    response_model=FunnelDefinitionOut,
    description=described(
        "Save a funnel for a site (`siteId` of the body). Steps are validated like the funnel report's: "
        "`FUNNEL_NEEDS_TWO_STEPS`, `FUNNEL_STEP_EMPTY`, `FUNNEL_TOO_MANY_STEPS`, `UNKNOWN_EVENT_NAME`."
    ),
)
def create_funnel_definition(
    body: FunnelDefinitionCreate, store: ConfigStoreDep, principal: CurrentUser
) -> FunnelDefinitionOut:
    return service.definition_out(service.create(store, principal=principal, body=body))


@router.get(
    "/site/{siteId}",
    response_model=list[FunnelDefinitionOut],
    description=described("The site's saved funnels, oldest first."),
)
def list_funnel_definitions(site: AnalyticsSite, store: ConfigStoreDep) -> list[FunnelDefinitionOut]:
    return [service.definition_out(d) for d in service.list_for_site(store, site=site)]


@router.get(
    "/site/{siteId}/templates",
    response_model=list[FunnelTemplate],
    description=described(
        "Ready-made funnels over canonical event names, the same for every site; save one with "
        "POST /analytics/funnels/definitions."
    ),
)
def funnel_templates(site: AnalyticsSite) -> list[FunnelTemplate]:
    return list(service.TEMPLATES)


@router.get("/{id}", response_model=FunnelDefinitionOut, description=described("One saved funnel."))
def get_funnel_definition(owned: OwnedDefinition) -> FunnelDefinitionOut:
    definition, _ = owned
    return service.definition_out(definition)


@router.put(
    "/{id}",
    response_model=FunnelDefinitionOut,
    description=described(
        "Partial update: fields left out keep their value, `description: null` clears the description; "
        "the site cannot change. Steps are validated as on create."
    ),
)
def update_funnel_definition(
    body: FunnelDefinitionUpdate, owned: OwnedDefinition, store: ConfigStoreDep, principal: CurrentUser
) -> FunnelDefinitionOut:
    definition, site = owned
    updated = service.update(store, definition=definition, site=site, user_id=principal.user_id, body=body)
    return service.definition_out(updated)


@router.delete("/{id}", response_model=Ok, description=described("Delete a saved funnel."))
def delete_funnel_definition(owned: OwnedDefinition, store: ConfigStoreDep, principal: CurrentUser) -> Ok:
    definition, site = owned
    service.delete(store, definition=definition, site=site, user_id=principal.user_id)
    return Ok()


@router.post(
    "/{id}/duplicate",
    status_code=201,
    response_model=FunnelDefinitionOut,
    description=described("A copy in the same site named `<name> (copy)`, created by the caller."),
)
def duplicate_funnel_definition(
    owned: OwnedDefinition, store: ConfigStoreDep, principal: CurrentUser
) -> FunnelDefinitionOut:
    definition, site = owned
    return service.definition_out(
        service.duplicate(store, definition=definition, site=site, user_id=principal.user_id)
    )


@router.get(
    "/{id}/analyze",
    response_model=FunnelDefinitionAnalysis,
    description=described(
        "Run the saved funnel (its steps, window and order) over an entry date range, with the semantics "
        "of GET /analytics/funnels/{siteId}; `report` has that route's answer."
    ),
)
def analyze_funnel_definition(
    engine: EngineDep,
    owned: OwnedDefinition,
    start_date: Annotated[
        IsoDate | None,
        Query(
            alias="startDate", description="First entry day (site time zone); default 29 days before endDate."
        ),
    ] = None,
    end_date: Annotated[
        IsoDate | None, Query(alias="endDate", description="Last entry day, inclusive; default today.")
    ] = None,
) -> FunnelDefinitionAnalysis:
    definition, site = owned
    return service.analyze(engine, definition=definition, site=site, start_date=start_date, end_date=end_date)
