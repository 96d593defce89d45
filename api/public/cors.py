"""Cross-origin access to the storefront's routes.

A shop's pages call ``/public/...`` from the shop's own domain, another origin than Aisle's. Without
CORS headers a browser refuses to send the JSON POSTs (their preflight fails) and hides every answer
(tracking config, identify's ``{success, merged}``, recommendations) from the page. Any origin may ask:
the routes themselves check the origin against the site's domain and answer 403 in the envelope,
which the page can then read. No credentials: the routes take none but the public API key header.
"""

from __future__ import annotations

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from api.public.guard import API_KEY_HEADER, PLATFORM_HEADER, VERSION_HEADER

ALLOWED_HEADERS = ["Content-Type", "Content-Encoding", API_KEY_HEADER, PLATFORM_HEADER, VERSION_HEADER]
# What a storefront library needs to read to back off: the throttle's answer.
EXPOSED_HEADERS = ["Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]
PREFLIGHT_MAX_AGE_SECONDS = 86_400


def public_cors(app: ASGIApp) -> CORSMiddleware:
    """``app`` answering preflights and marking its answers readable from any origin."""
    return CORSMiddleware(
        app,
        allow_origins=["*"],
        allow_methods=["GET", "POST", "OPTIONS"],
        allow_headers=ALLOWED_HEADERS,
        expose_headers=EXPOSED_HEADERS,
        max_age=PREFLIGHT_MAX_AGE_SECONDS,
    )


class PublicCors:
    """CORS for the paths under ``prefix`` only: the private API is for the dashboard and servers,
    which send a Bearer token, and stays same-origin."""

    def __init__(self, app: ASGIApp, *, prefix: str) -> None:
        self.app = app
        self.prefix = prefix
        self.public = public_cors(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix):
            await self.public(scope, receive, send)
        else:
            await self.app(scope, receive, send)
