"""A short-lived cache of (site, organisation) by site key, for the public guard's hot path.

Writes to sites and organisations in this process clear it at once (the repositories call
``invalidate``); other processes of a scaled-out deployment see a change within ``TTL_SECONDS``, or
once the store answers again when it is away (``stale``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

if TYPE_CHECKING:
    from warehouse.config_store.sites import Site

# (site, organisation): None where the store has none by that key
Entry = tuple["Site | None", dict[str, Any] | None]

TTL_SECONDS = 2.0
# While the store does not answer, an entry this much past its time to live still serves the
# storefront's calls: its events are stored instead of refused for the length of an outage.
STALE_SECONDS = 300.0
MAX_ENTRIES = 10_000

_lock = threading.Lock()
_entries: dict[str, tuple[float, Site | None, dict[str, Any] | None]] = {}


def invalidate() -> None:
    with _lock:
        _entries.clear()


def cached(site_key: str) -> Entry | None:
    """The fresh entry for ``site_key``, without touching the store; None when there is none."""
    entry = _entries.get(site_key)
    if entry and entry[0] > time.monotonic():
        return entry[1], entry[2]
    return None


def stale(site_key: str) -> Entry | None:
    """The entry for ``site_key`` up to ``STALE_SECONDS`` past its time to live (for outages)."""
    entry = _entries.get(site_key)
    if entry and entry[0] + STALE_SECONDS > time.monotonic():
        return entry[1], entry[2]
    return None


def site_and_organization(store: Engine, site_key: str) -> Entry:
    if (hit := cached(site_key)) is not None:
        return hit
    now = time.monotonic()
    from warehouse.config_store import organizations, sites

    with store.connect() as conn:
        site = sites.get_by_key(conn, site_key=site_key)
        org = organizations.get(conn, organization_id=site["organization_id"]) if site else None
    with _lock:
        if len(_entries) >= MAX_ENTRIES:
            _entries.clear()
        _entries[site_key] = (now + TTL_SECONDS, site, org)
    return site, org
