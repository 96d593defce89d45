"""The storefront's events batch, served straight off the ASGI call.

It is the busiest route by far (a storefront posts a batch every page or two), and its answer needs
none of the per-request machinery around FastAPI's routes: no dependencies, no parameters but the
site key, no body limit but its own, so Starlette's middleware stack and router would only spend its
CPU time (how much: docs/decisions.md). Here it keeps what callers and operators see: the request log
line and metrics (the same observer), and errors in the one envelope (the app's own exception
handlers). Anything that does not match the
route exactly goes through the app as usual, where the documented FastAPI route answers it too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from api.observability import Metrics, RequestObserver
from api.public.cors import public_cors

Endpoint = Callable[[Request, str], Awaitable[Any]]


class _Template:
    """What ``scope["route"]`` holds for this path: enough for the observer's route label."""

    def __init__(self, path: str) -> None:
        self.path = path


class HotPath:
    def __init__(
        self, app: FastAPI, *, prefix: str, suffix: str, endpoint: Endpoint, metrics: Metrics
    ) -> None:
        self.app = app
        self.prefix = prefix
        self.suffix = suffix
        self.endpoint = endpoint
        self.route = _Template(f"{prefix}{{siteKey}}{suffix}")
        # The route is public: its answers carry the CORS headers the middleware stack would add.
        self.observed = RequestObserver(public_cors(self._answer), metrics)

    def site_key(self, scope: Scope) -> str | None:
        """The site key when ``scope`` is a POST to exactly this route (a key is one path segment)."""
        path = scope["path"]
        if scope["method"] != "POST" or not path.startswith(self.prefix) or not path.endswith(self.suffix):
            return None
        key = path[len(self.prefix) : len(path) - len(self.suffix)]
        return key if key and "/" not in key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send, site_key: str) -> None:
        scope["app"] = self.app
        scope["path_params"] = {"siteKey": site_key}
        scope["route"] = self.route
        await self.observed(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            response = await self.endpoint(request, scope["path_params"]["siteKey"])
        except Exception as exc:
            response = await self._handler(exc)(request, exc)
        await response(scope, receive, send)

    def _handler(self, exc: Exception):
        """The app's handler for ``exc`` (``install_error_handlers`` has one for every Exception)."""
        handlers = self.app.exception_handlers
        for kind in type(exc).__mro__:
            if kind in handlers:
                return handlers[kind]
        raise exc


class AisleApp(FastAPI):
    """FastAPI, with a hot path taken before the middleware stack when one is set."""

    hot_path: HotPath | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot = self.hot_path
        if hot is not None and scope["type"] == "http" and (site_key := hot.site_key(scope)) is not None:
            await hot(scope, receive, send, site_key)
            return
        await super().__call__(scope, receive, send)
