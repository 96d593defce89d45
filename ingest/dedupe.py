"""Keys stored recently (event ids, order ids), so a row re-sent or replayed is stored once.

Keys are kept as 64-bit hashes in hourly buckets and forgotten after the window. One set holds them
all, so a lookup costs one set probe however many buckets there are; a bucket is a list of the keys
it added, which costs less to grow than a second set on the busiest route and is only read when it
expires. (A key released and claimed again is listed in both buckets and so forgotten when the first
one expires: early by the seconds between the failed attempt and the retry.)
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
        self._buckets: dict[int, list[int]] = {}
        self._all: set[int] = set()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        oldest = int((now - self.window_seconds) // BUCKET_SECONDS)
        for bucket in [b for b in self._buckets if b < oldest]:
            self._all.difference_update(self._buckets.pop(bucket))

    def _bucket(self, at: float | None) -> list[int]:
        now = self._clock()
        self._expire(now)
        return self._buckets.setdefault(int((at if at is not None else now) // BUCKET_SECONDS), [])

    def __contains__(self, hashed: int) -> bool:
        return hashed in self._all

    def add_all(self, hashes: Iterable[int], *, at: float | None = None) -> None:
        with self._lock:
            bucket = self._bucket(at)
            known = self._all
            for hashed in hashes:
                if hashed not in known:
                    known.add(hashed)
                    bucket.append(hashed)

    def filter_new(self, hashes: list[int]) -> list[bool]:
        """For each hash: True when it is neither recent nor repeated earlier in ``hashes``."""
        seen: set[int] = set()
        fresh = []
        with self._lock:
            known = self._all
            for hashed in hashes:
                fresh.append(hashed not in seen and hashed not in known)
                seen.add(hashed)
        return fresh

    def claim(self, hashes: list[int]) -> list[bool]:
        """``filter_new`` that also remembers the new hashes at once, so a re-send that arrives
        before the first copy reaches the lake is already a duplicate."""
        with self._lock:
            bucket = self._bucket(None)
            known = self._all
            if known.isdisjoint(hashes) and len(set(hashes)) == len(hashes):
                # The usual batch: every key new and none repeated; set operations in C.
                known.update(hashes)
                bucket.extend(hashes)
                return [True] * len(hashes)
            fresh = []
            for hashed in hashes:
                new = hashed not in known
                if new:
                    known.add(hashed)
                    bucket.append(hashed)
                fresh.append(new)
        return fresh

    def release(self, hashes: Iterable[int]) -> None:
        """Forget claimed hashes whose rows could not be stored (the client will retry them)."""
        with self._lock:
            self._all.difference_update(hashes)

    def __len__(self) -> int:
        return len(self._all)
