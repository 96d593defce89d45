"""Small builders for tests: users, logins, sites."""

from __future__ import annotations

import functools
import inspect
import itertools
import time
from typing import Any
from unittest import mock

import httpx
import pyotp

from api.auth.passwords import hash_password
from api.auth.schemas import Tokens
from api.auth.service import create_user, issue_session
from warehouse.config_store import organizations, sites

PASSWORD = "correct horse battery"
_counter = itertools.count(1)


@functools.cache
def _password_hash(password: str) -> str:
    return hash_password(password)


def make_user(
    store, *, role: str = "owner", organization_id: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    """A user made as the operator path makes one. Argon2 costs a good part of a second on purpose:
    users with the same password share one real hash (same parameters, same salt), computed once."""
    email = kwargs.pop("email", None) or f"user{next(_counter)}@example.com"
    with mock.patch.object(inspect.getmodule(create_user), "hash_password", _password_hash):
        return create_user(
            store,
            email=email,
            password=kwargs.pop("password", PASSWORD),
            role=role,
            organization_id=organization_id,
            **kwargs,
        )


def login(client: httpx.Client, email: str, password: str = PASSWORD) -> dict[str, Any]:
    response = client.post("/auth/login", json={"email": email, "password": password})
    assert response.status_code == 200, response.text
    return response.json()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def totp_code(secret: str, *, offset_steps: int = 0) -> str:
    return pyotp.TOTP(secret).at(int(time.time()) + 30 * offset_steps)


class Session:
    """A logged-in user: the client sends its access token on every request."""

    def __init__(
        self, client: httpx.Client, user: dict[str, Any], tokens: dict[str, Any] | None = None
    ) -> None:
        """Logs in over the API (``POST /auth/login``) unless given the tokens of a session."""
        self.user = user
        self.tokens = tokens or login(client, user["email"])
        self.client = client
        self.headers = bearer(self.tokens["accessToken"])

    @classmethod
    def signed_in(cls, client: httpx.Client, app, user: dict[str, Any]) -> Session:
        """A session the login route would open for ``user``, opened without the route: no argon2
        check (a good part of a second) and no attempt counted against the client's address, so a
        module's tests can share an app. Tests of logging in use ``login`` or ``Session(client, user)``."""
        pair = issue_session(app.state.store, app.state.settings, user=user)
        tokens = Tokens(
            access_token=pair.access_token, refresh_token=pair.refresh_token, expires_in=pair.expires_in
        )
        return cls(client, user, tokens.model_dump(mode="json", by_alias=True))

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.request(
            method, path, headers={**self.headers, **kwargs.pop("headers", {})}, **kwargs
        )

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", path, **kwargs)

    def make_site(self, **fields: Any) -> dict[str, Any]:
        body = {"name": "Shop", "domain": "shop.example.com", **fields}
        response = self.post("/sites", json=body)
        assert response.status_code == 201, response.text
        return response.json()


def make_verified_site(session: Session, store, **fields: Any) -> dict[str, Any]:
    site = session.make_site(**fields)
    with store.begin() as conn:
        sites.update_fields(conn, site_id=site["id"], is_verified=True)
    return {**site, "isVerified": True}


def make_store_site(conn) -> dict[str, Any]:
    """A site of a new organisation, written straight to the config store (no API, no user)."""
    org = organizations.create(conn, name="Acme")
    return sites.create(
        conn,
        organization_id=org["id"],
        name="Shop",
        domain="shop.example.com",
        currency="EUR",
        timezone="UTC",
        tracking_config={},
    )


def enable_mfa(session: Session) -> tuple[str, list[str]]:
    """Set up and enable MFA for a logged-in user (using the current TOTP step); answers the secret
    and the backup codes."""
    setup = session.post("/auth/mfa/setup")
    assert setup.status_code == 200, setup.text
    secret = setup.json()["secret"]
    enabled = session.post("/auth/mfa/enable", json={"code": totp_code(secret)})
    assert enabled.status_code == 200, enabled.text
    return secret, enabled.json()["backupCodes"]
