"""Search analytics over one site or every site of the caller's organisation, the last N UTC days."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from api.analytics.search.schemas import TopProducts, TopQueries, ZeroResults
from api.deps import Principal, load_owned_site
from queries import search_analytics
from queries.overview import Scope
from warehouse.config_store import sites
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine


@dataclass(frozen=True)
class SearchReport:
    """What every search report is asked for: by whom, of which site (None: every site of the caller's
    organisation), over the last `days` UTC days, and how many rows."""

    principal: Principal
    site_id: str | None
    days: int
    limit: int


def _scope(store: ConfigStore, report: SearchReport) -> Scope:
    """`siteId` (one of the caller's sites) or, when it is omitted or empty, every site of their
    organisation."""
    principal = report.principal
    if report.site_id:
        site_ids = [load_owned_site(store, principal, report.site_id)["id"]]
    else:
        with store.connect() as conn:
            owned = sites.list_for_organization(conn, organization_id=principal.organization_id)
        site_ids = [s["id"] for s in owned]
    return Scope.last_days(site_ids, report.days, today=datetime.now(UTC).date())


def list_top_queries(store: ConfigStore, engine: Engine, report: SearchReport) -> TopQueries:
    return search_analytics.top_queries(engine, _scope(store, report), limit=report.limit)


def list_zero_results(store: ConfigStore, engine: Engine, report: SearchReport) -> ZeroResults:
    return search_analytics.zero_result_queries(engine, _scope(store, report), limit=report.limit)


def list_top_products(store: ConfigStore, engine: Engine, report: SearchReport) -> TopProducts:
    return search_analytics.top_products(engine, _scope(store, report), limit=report.limit)
