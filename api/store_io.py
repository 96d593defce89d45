"""Config-store calls made from async code (the storefront routes' guard, identify, private tracking).

Run on the event loop, a store that hangs rather than refuses (a stalled PostgreSQL: its kernel keeps
the connection, nothing answers) held the loop, and with it every request and `/health` of the
server (a black-box check). Here such a call holds one thread and is answered as a 503 to retry
after ``DEADLINE_SECONDS``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from api.errors import ServiceUnavailable

DEADLINE_SECONDS = 5.0
T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kwargs), DEADLINE_SECONDS)
    except TimeoutError:
        raise ServiceUnavailable(
            "The configuration store is not answering; retry shortly",
            code="CONFIG_STORE_UNAVAILABLE",
            headers={"Retry-After": "1"},
        ) from None
