"""Consent analytics over the lake, for one site or several sites side by side."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date

from api.analytics.consent import schemas
from api.analytics.scope import date_range
from api.deps import Principal, canonical_site_id, load_owned_site
from api.errors import BadRequest
from api.sites.service import tracking_config
from ingest.consent import CATEGORIES
from queries import consent
from queries.consent import Category, ConsentRange, ExportKind, Interval, TooManyPeriods
from warehouse.config_store import sites
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine

MAX_COMPARED_SITES = 50
# This service's own category: what a gate holds events for when the site configures nothing.
DEFAULT_REQUIRED = ["analytics"]


def get_stats(engine: Engine, *, query: ConsentRange) -> schemas.ConsentStats:
    return consent.consent_stats(engine, query)


def get_trends(engine: Engine, *, query: ConsentRange, interval: Interval) -> schemas.ConsentTrends:
    """400 ``TOO_MANY_PERIODS`` past ``queries.consent.MAX_PERIODS``."""
    try:
        return consent.consent_trends(engine, query, interval=interval)
    except TooManyPeriods as exc:
        raise BadRequest(str(exc), code="TOO_MANY_PERIODS") from exc


def get_impact(engine: Engine, *, query: ConsentRange, category: Category) -> schemas.ConsentImpact:
    return consent.consent_impact(engine, query, category=category)


def get_categories(engine: Engine, *, query: ConsentRange) -> schemas.ConsentCategories:
    return consent.consent_categories(engine, query)


def list_log(
    engine: Engine, *, query: ConsentRange, kind: ExportKind, limit: int
) -> Iterator[schemas.ExportRow]:
    """The consent observations of the range, oldest first, read as they are consumed."""
    return consent.iter_consent_log(engine, query, kind=kind, limit=limit)


def simulate(
    engine: Engine, *, site: Site, query: ConsentRange, body: schemas.SimulateIn | None
) -> schemas.ConsentSimulation:
    """Replay the range's events through a consent gate: what the body leaves out comes from the site's
    cookieConsent settings, else ``DEFAULT_REQUIRED`` and no wait; a category outside ``CATEGORIES``
    is 400 ``UNKNOWN_CONSENT_CATEGORY``."""
    settings = tracking_config(site).data_layer_config.cookie_consent
    body = body or schemas.SimulateIn()
    granular = body.granular_enabled if body.granular_enabled is not None else settings.granular
    required: Sequence[str] | None = body.required_categories
    if required is None:
        required = (
            settings.required_categories if settings.required_categories is not None else DEFAULT_REQUIRED
        )
    unknown = sorted({c for c in required if c not in CATEGORIES})
    if unknown:
        raise BadRequest(
            f"Unknown consent categories {', '.join(map(repr, unknown))}; the categories are {', '.join(CATEGORIES)}",
            code="UNKNOWN_CONSENT_CATEGORY",
            details={"requiredCategories": unknown},
        )
    timeout_ms = body.timeout_ms if body.timeout_ms is not None else (settings.timeout_ms or 0)
    return consent.simulate_consent(
        engine, query, granular=granular is not False, required=list(required), timeout_ms=timeout_ms
    )


def _compared_sites(store: ConfigStore, principal: Principal, site_ids: str | None) -> list[Site]:
    if site_ids is None:
        with store.connect() as conn:
            every = sites.list_for_organization(conn, organization_id=principal.organization_id)
        if len(every) > MAX_COMPARED_SITES:
            # Each site is a report of its own: a large organisation's every site timed out.
            raise BadRequest(
                f"The organisation has {len(every)} sites and at most {MAX_COMPARED_SITES} can be compared: "
                "name them in siteIds",
                code="TOO_MANY_SITES",
            )
        return every
    wanted = list(dict.fromkeys(canonical_site_id(s.strip()) for s in site_ids.split(",") if s.strip()))
    if not wanted:
        raise BadRequest("siteIds is empty; name sites (comma-separated) or omit it", code="SITE_IDS_EMPTY")
    if len(wanted) > MAX_COMPARED_SITES:
        raise BadRequest(f"At most {MAX_COMPARED_SITES} sites can be compared", code="TOO_MANY_SITES")
    return [load_owned_site(store, principal, site_id) for site_id in wanted]


def compare(
    store: ConfigStore,
    engine: Engine,
    *,
    principal: Principal,
    site_ids: str | None,
    start_date: date | None,
    end_date: date | None,
) -> schemas.ConsentComparison:
    """The stats of ``site_ids`` (comma-separated; omitted: the organisation's sites, at most
    ``MAX_COMPARED_SITES``), each over the dates read in its own time zone."""
    rows = []
    for site in _compared_sites(store, principal, site_ids):
        start, end = date_range(site, start_date, end_date)
        figures = consent.consent_stats(engine, ConsentRange.of_site(site, start, end))
        rows.append(
            schemas.SiteConsent(**figures.model_dump(), site_name=site["name"], timezone=site["timezone"])
        )
    return schemas.ConsentComparison(sites=rows)
