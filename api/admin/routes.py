"""Platform administration beyond sites: organisation subscriptions."""

from __future__ import annotations

from fastapi import APIRouter

from api.admin import service
from api.admin.schemas import SubscriptionOut, SubscriptionUpdate
from api.deps import ConfigStoreDep, PlatformAdmin
from api.errors import error_response

router = APIRouter(prefix="/admin", tags=["admin"])


@router.put(
    "/organizations/{organizationId}/subscription",
    response_model=SubscriptionOut,
    responses={404: error_response("No organisation with that id (ORGANIZATION_NOT_FOUND).")},
)
def update_subscription(
    organizationId: str, body: SubscriptionUpdate, store: ConfigStoreDep, _: PlatformAdmin
) -> SubscriptionOut:
    """Public routes only serve organisations whose subscription is active or trialing and whose
    period has not ended."""
    return service.update_subscription(store, organization_id=organizationId, body=body)
