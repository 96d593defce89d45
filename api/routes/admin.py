"""Platform administration beyond sites: organisation subscriptions."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter

from api.deps import ConfigStoreDep, PlatformAdmin
from api.errors import NotFound
from api.schemas import CamelModel, StrictCamelModel
from warehouse.config_store import organizations

router = APIRouter(prefix="/admin", tags=["admin"])


class SubscriptionUpdate(StrictCamelModel):
    status: Literal["active", "trialing", "past_due", "canceled", "unpaid"]
    current_period_end: datetime | None = None


class SubscriptionOut(CamelModel):
    organization_id: str
    status: str
    current_period_end: datetime | None
    is_valid: bool


@router.put("/organizations/{organizationId}/subscription", response_model=SubscriptionOut)
def update_subscription(
    organizationId: str, body: SubscriptionUpdate, store: ConfigStoreDep, _: PlatformAdmin
) -> SubscriptionOut:
    """Public routes only serve organisations whose subscription is active or trialing and whose
    period has not ended."""
    with store.begin() as conn:
        if organizations.get(conn, organization_id=organizationId) is None:
            raise NotFound("No such organisation", code="ORGANIZATION_NOT_FOUND")
        organizations.update_subscription(
            conn, organization_id=organizationId, status=body.status, period_end=body.current_period_end
        )
        org = organizations.get(conn, organization_id=organizationId)
    return SubscriptionOut(
        organization_id=org["id"],
        status=org["subscription_status"],
        current_period_end=org["subscription_period_end"],
        is_valid=organizations.subscription_is_valid(org),
    )
