"""Config-store calls made from async code (the storefront routes' guard, identify, private tracking).

Run on the event loop, a store that hangs rather than refuses (a stalled PostgreSQL: its kernel keeps
the connection, nothing answers) would hold the loop, and with it every request and `/health` of the
server. Here such a call holds one thread and is answered as a 503 to retry after
``DEADLINE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy.exc
from sqlalchemy import Engine

from api.errors import ServiceUnavailable, store_unavailable

DEADLINE_SECONDS = 5.0
# After a call ran out of time, the store is taken as away for this long: calls fail at once instead
# of each waiting out the deadline (an identify, a lookup then a link, would take two).
AWAY_SECONDS = 5.0
T = TypeVar("T")
_away_until: weakref.WeakKeyDictionary[Engine, float] = weakref.WeakKeyDictionary()


def _unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "The configuration store is not answering; retry shortly",
        code="CONFIG_STORE_UNAVAILABLE",
        headers={"Retry-After": "1"},
    )


async def off_loop(store: Engine, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, a call to ``store``, from a thread within the deadline; a store that
    is away (out of time, or refusing: ``store_unavailable``) is one ``ServiceUnavailable``."""
    if time.monotonic() < _away_until.get(store, 0.0):
        raise _unavailable()
    try:
        return await asyncio.wait_for(asyncio.to_thread(fn, *args, **kwargs), DEADLINE_SECONDS)
    except TimeoutError:
        _away_until[store] = time.monotonic() + AWAY_SECONDS
        raise _unavailable() from None
    except (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError) as exc:
        if not store_unavailable(exc):
            raise
        raise _unavailable() from exc
