"""Bodies and answers of the platform administration routes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from api.schemas import CamelModel, StrictCamelModel


class SubscriptionUpdate(StrictCamelModel):
    status: Literal["active", "trialing", "past_due", "canceled", "unpaid"]
    current_period_end: datetime | None = None


class SubscriptionOut(CamelModel):
    organization_id: str
    status: str
    current_period_end: datetime | None
    is_valid: bool
