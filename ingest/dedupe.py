"""Keys stored recently (event ids, order ids), so a row re-sent or replayed is stored once.

Keys are kept as 64-bit hashes in hourly buckets and forgotten after the window.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

WINDOW_SECONDS = 24 * 3600
BUCKET_SECONDS = 3600


def key_hash(site_id: str, key: str) -> int:
    # Python's own string hashing: fast, 64-bit, and stable within a process, which is all the
    # in-memory window needs (it is rebuilt from the lake on start).
    return hash((site_id, key))


class RecentKeys:
    def __init__(self, *, window_seconds: int = WINDOW_SECONDS, clock=time.time) -> None:
        self.window_seconds = window_seconds
        self._clock = clock
        self._buckets: dict[int, set[int]] = {}
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        oldest = int((now - self.window_seconds) // BUCKET_SECONDS)
        for bucket in [b for b in self._buckets if b < oldest]:
            del self._buckets[bucket]

    def __contains__(self, hashed: int) -> bool:
        return any(hashed in keys for keys in self._buckets.values())

    def add_all(self, hashes: Iterable[int], *, at: float | None = None) -> None:
        now = self._clock()
        bucket = int((at if at is not None else now) // BUCKET_SECONDS)
        with self._lock:
            self._expire(now)
            self._buckets.setdefault(bucket, set()).update(hashes)

    def filter_new(self, hashes: list[int]) -> list[bool]:
        """For each hash: True when it is neither recent nor repeated earlier in ``hashes``."""
        seen: set[int] = set()
        fresh = []
        with self._lock:
            buckets = list(self._buckets.values())
        for hashed in hashes:
            new = hashed not in seen and not any(hashed in keys for keys in buckets)
            seen.add(hashed)
            fresh.append(new)
        return fresh

    def __len__(self) -> int:
        return sum(len(keys) for keys in self._buckets.values())
