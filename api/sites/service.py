"""Sites: lifecycle, tracking configuration, domain verification, summaries."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from aisle.settings import Settings
from api.errors import NotFound
from api.sites import verification
from api.sites.schemas import (
    AdminSiteUpdate,
    ApiKeyCounts,
    SiteCreate,
    SiteOut,
    SiteStats,
    SiteUpdate,
    TrackingSummary,
    Verification,
)
from api.sites.tracking_config import TrackerConfig, apply_update, default_tracking_config
from warehouse.config_store import activity, api_keys, sites
from warehouse.config_store.store import utcnow


def site_out(site: dict[str, Any]) -> SiteOut:
    token = site["verification_token"]
    return SiteOut(
        **{k: site[k] for k in SiteOut.model_fields if k in site},
        verification=Verification(
            token=token,
            dns_record_name=verification.dns_record_name(site["domain"]),
            dns_record_value=verification.expected_value(token),
            http_url=f"https://{site['domain']}{verification.WELL_KNOWN_PATH}",
        ),
    )


def create(store: Engine, *, organization_id: str, user_id: str, body: SiteCreate) -> dict[str, Any]:
    with store.begin() as conn:
        site = sites.create(
            conn,
            organization_id=organization_id,
            name=body.name,
            domain=body.domain,
            currency=body.currency,
            timezone=body.timezone,
            tracking_config=default_tracking_config(),
        )
        activity.record(
            conn, organization_id=organization_id, site_id=site["id"], user_id=user_id, action="site.created"
        )
    return site


def list_for_organization(store: Engine, *, organization_id: str) -> list[dict[str, Any]]:
    with store.connect() as conn:
        return sites.list_for_organization(conn, organization_id=organization_id)


def update(store: Engine, *, site: dict[str, Any], user_id: str, body: SiteUpdate) -> dict[str, Any]:
    values = body.model_dump(exclude_unset=True, exclude_none=True)
    if isinstance(body, AdminSiteUpdate) and "is_verified" in values:
        values["verified_at"] = utcnow() if values["is_verified"] else None
    if "domain" in values and values["domain"] != site["domain"] and not values.get("is_verified"):
        # Ownership was proven for the old domain only.
        values.update(is_verified=False, verified_at=None)
    with store.begin() as conn:
        updated = sites.update_fields(conn, site_id=site["id"], **values)
        activity.record(
            conn,
            organization_id=site["organization_id"],
            site_id=site["id"],
            user_id=user_id,
            action="site.updated",
            details={k: v for k, v in values.items() if k != "verified_at"},
        )
    return updated


def delete(store: Engine, *, site: dict[str, Any], user_id: str) -> None:
    with store.begin() as conn:
        sites.delete_one(conn, site_id=site["id"])
        activity.record(
            conn,
            organization_id=site["organization_id"],
            site_id=site["id"],
            user_id=user_id,
            action="site.deleted",
        )


def get_for_admin(store: Engine, *, site_id: str) -> dict[str, Any]:
    with store.connect() as conn:
        site = sites.get(conn, site_id=site_id)
    if site is None:
        raise NotFound("No such site", code="SITE_NOT_FOUND")
    return site


def tracking_config(site: dict[str, Any]) -> TrackerConfig:
    return TrackerConfig.model_validate(site["tracking_config"] or {})


def update_tracking_config(
    store: Engine, *, site: dict[str, Any], user_id: str, patch: dict[str, Any]
) -> TrackerConfig:
    config = apply_update(site["tracking_config"] or {}, patch)
    with store.begin() as conn:
        sites.update_fields(conn, site_id=site["id"], tracking_config=config.model_dump(by_alias=True))
        activity.record(
            conn,
            organization_id=site["organization_id"],
            site_id=site["id"],
            user_id=user_id,
            action="site.tracking_config_updated",
        )
    return config


def verify_domain(store: Engine, settings: Settings, *, site: dict[str, Any]) -> tuple[dict[str, Any], list]:
    if site["is_verified"]:
        return site, [{"method": None, "ok": True, "detail": "already verified"}]
    checks = verification.verify(settings, domain=site["domain"], token=site["verification_token"])
    if any(c["ok"] for c in checks):
        with store.begin() as conn:
            site = sites.update_fields(conn, site_id=site["id"], is_verified=True, verified_at=utcnow())
            activity.record(
                conn,
                organization_id=site["organization_id"],
                site_id=site["id"],
                action="site.domain_verified",
            )
    return site, checks


def stats(store: Engine, *, site: dict[str, Any]) -> SiteStats:
    with store.connect() as conn:
        keys = api_keys.list_for_site(conn, site_id=site["id"])
    config = tracking_config(site)
    return SiteStats(
        site_id=site["id"],
        is_verified=bool(site["is_verified"]),
        currency=site["currency"],
        timezone=site["timezone"],
        api_keys=ApiKeyCounts(
            active=sum(1 for k in keys if k["revoked_at"] is None),
            revoked=sum(1 for k in keys if k["revoked_at"] is not None),
        ),
        tracking=TrackingSummary(
            data_layer_enabled=config.data_layer_config.enabled,
            modules_enabled=sorted(
                name for name, module in config.data_layer_config.tracking_modules if module.enabled
            ),
        ),
        # Through the model, so the timestamp is written like every other one (`...Z`).
        created_at=site["created_at"],
    )


def feeds_summary(store: Engine, *, organization_id: str) -> dict[str, Any]:
    """Per site: whether its runtime feed (public API) is open and what still blocks it."""
    rows = []
    for site in list_for_organization(store, organization_id=organization_id):
        blockers = [] if site["is_verified"] else ["DOMAIN_NOT_VERIFIED"]
        rows.append(
            {
                "siteId": site["id"],
                "name": site["name"],
                "domain": site["domain"],
                "siteKey": site["site_key"],
                "currency": site["currency"],
                "isVerified": bool(site["is_verified"]),
                "acceptsEvents": not blockers,
                "blockers": blockers,
            }
        )
    return {
        "totalSites": len(rows),
        "verifiedSites": sum(1 for r in rows if r["isVerified"]),
        "sites": rows,
    }
