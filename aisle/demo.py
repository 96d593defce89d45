"""The demo organisation: one verified site and a login, created idempotently."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from api.auth.passwords import hash_password
from api.auth.service import create_user
from api.sites.tracking_config import default_tracking_config
from warehouse.catalog import sites, users

# `.example` is reserved for examples and still passes the login route's e-mail validation,
# which refuses special-use domains such as `.local`.
DEMO_EMAIL = "demo@aisle.example"
DEMO_PASSWORD = "aisle-demo-password"
DEMO_SITE_NAME = "Demo Gift Shop"
# Pages served from the local machine may call the public routes of the demo site.
DEMO_DOMAIN = "localhost"


def load_demo(store: Engine) -> dict[str, Any]:
    with store.connect() as conn:
        user = users.get_by_email(conn, email=DEMO_EMAIL)
    if user is None:
        user = create_user(store, email=DEMO_EMAIL, password=DEMO_PASSWORD, name="Demo Owner")
    else:
        with store.begin() as conn:
            users.update_fields(conn, user_id=user["id"], password_hash=hash_password(DEMO_PASSWORD))
    with store.begin() as conn:
        site = next(
            (
                s
                for s in sites.list_for_organization(conn, organization_id=user["organization_id"])
                if s["name"] == DEMO_SITE_NAME
            ),
            None,
        )
        if site is None:
            site = sites.create(
                conn,
                organization_id=user["organization_id"],
                name=DEMO_SITE_NAME,
                domain=DEMO_DOMAIN,
                currency="GBP",
                timezone="Europe/London",
                tracking_config=default_tracking_config(),
                is_verified=True,
            )
    return {
        "email": DEMO_EMAIL,
        "password": DEMO_PASSWORD,
        "userId": user["id"],
        "organizationId": user["organization_id"],
        "siteId": site["id"],
        "siteKey": site["site_key"],
    }
