"""Public runtime routes (siteKey + public guard)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from api.deps import ClientAddress, HotStateDep, SettingsDep
from api.public.guard import PUBLIC_RESPONSES, PublicSite
from api.sites.service import tracking_config
from api.sites.tracking_config import TrackerConfig
from api.throttle import Limit, throttle

router = APIRouter(
    prefix="/public/sites/{siteKey}",
    tags=["public"],
    responses=PUBLIC_RESPONSES,
)


@router.get("/tracking-config", response_model=TrackerConfig)
def public_tracking_config(
    caller: PublicSite, hot: HotStateDep, settings: SettingsDep, address: ClientAddress, response: Response
) -> TrackerConfig:
    """The tracker configuration (fallback source of the runtime config). Throttled per client address."""
    limit = Limit("public-read", settings.public_read_limit_per_minute, 60)
    throttle(hot, response, limit=limit, subject=f"{caller.site['id']}:{address}")
    return tracking_config(caller.site)
