"""Cross-origin access to the storefront's routes.

A shop's pages call ``/public/...`` from the shop's own domain, another origin than Aisle's. Without
CORS headers a browser refuses to send the JSON POSTs (their preflight fails) and hides every answer
(tracking config, identify's ``{success, merged}``, recommendations) from the page. Any origin may ask:
the routes themselves check the origin against the site's domain and answer 403 in the envelope,
which the page can then read. No credentials: the routes take none but the public API key header.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body
from api.public.guard import API_KEY_HEADER, PLATFORM_HEADER, VERSION_HEADER

ALLOWED_HEADERS = ["Content-Type", "Content-Encoding", API_KEY_HEADER, PLATFORM_HEADER, VERSION_HEADER]
# What a storefront library needs to read to back off: the throttle's answer.
EXPOSED_HEADERS = ["Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]
PREFLIGHT_MAX_AGE_SECONDS = 86_400


class _EnvelopedCors(CORSMiddleware):
    """Starlette's CORS, its preflight refusals in the error envelope (it answers them in plain text,
    the one refusal of ours a storefront library could not read as JSON)."""

    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code == 200:
            return answer
        reasons, details = self._refusals(request_headers)
        message = "; ".join(reasons) or bytes(answer.body).decode()  # Starlette's words if ours miss
        headers = {k: v for k, v in answer.headers.items() if k not in ("content-length", "content-type")}
        body = error_body("CORS_PREFLIGHT_REFUSED", message, details or None)
        return JSONResponse(body, status_code=answer.status_code, headers=headers)

    def _refusals(self, request_headers: Headers) -> tuple[list[str], dict[str, Any]]:
        """What the preflight asked for that is not allowed, by the rules Starlette applied."""
        reasons: list[str] = []
        details: dict[str, Any] = {}
        method = request_headers["access-control-request-method"]
        if method not in self.allow_methods:
            reasons.append(
                f"Cross-origin requests may not use {method} (they may use {', '.join(self.allow_methods)})"
            )
            details.update(method=method, allowedMethods=list(self.allow_methods))
        requested = request_headers.get("access-control-request-headers")
        names = [h.strip() for h in requested.lower().split(",")] if requested is not None else []
        refused = [name for name in names if name not in self.allow_headers]
        if refused:
            reasons.append(
                f"Cross-origin requests may not send {', '.join(refused)} "
                f"(they may send {', '.join(self.allow_headers)})"
            )
            details.update(headers=refused, allowedHeaders=self.allow_headers)
        if "access-control-request-private-network" in request_headers and not self.allow_private_network:
            reasons.append("Private network access (Access-Control-Request-Private-Network) is not allowed")
            details.update(privateNetwork=True)
        return reasons, details


def public_cors(app: ASGIApp) -> CORSMiddleware:
    """``app`` answering preflights and marking its answers readable from any origin."""
    return _EnvelopedCors(
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
