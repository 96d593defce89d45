"""Platform administration: organisation subscriptions."""

from __future__ import annotations

from api.admin.schemas import SubscriptionOut, SubscriptionUpdate
from api.errors import NotFound
from warehouse.config_store import organizations
from warehouse.config_store.store import ConfigStore


def update_subscription(
    store: ConfigStore, *, organization_id: str, body: SubscriptionUpdate
) -> SubscriptionOut:
    missing = NotFound("No such organisation", code="ORGANIZATION_NOT_FOUND")
    with store.begin() as conn:
        if organizations.get(conn, organization_id=organization_id) is None:
            raise missing
        organizations.update_subscription(
            conn, organization_id=organization_id, status=body.status, period_end=body.current_period_end
        )
        org = organizations.get(conn, organization_id=organization_id)
        if org is None:  # deleted by another transaction in between
            raise missing
    return SubscriptionOut(
        organization_id=org["id"],
        status=org["subscription_status"],
        current_period_end=org["subscription_period_end"],
        is_valid=organizations.subscription_is_valid(org),
    )
