"""Keys stored recently (event ids, order ids), so a row re-sent or replayed is stored once.

Keys are kept as 64-bit hashes in hourly buckets and forgotten after the window. One set holds them
all, so a lookup costs one set probe however many buckets there are; a bucket is a list of the keys
it added, which costs less to grow than a second set on the busiest route and is only read when it
expires. (A key released and claimed again is listed in both buckets and so forgotten when the first
one expires: early by the seconds between the failed attempt and the retry.)

``RedisRecentKeys`` keeps the same window in Redis, for API processes that share one lake.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

import redis

WINDOW_SECONDS = 24 * 3600
BUCKET_SECONDS = 3600


KeyT = TypeVar("KeyT")


class KeyWindow(Protocol[KeyT]):
    """What accepting and flushing ask of a window, whichever keeps it: ``RecentKeys`` names keys by
    int hashes, ``RedisRecentKeys`` by the bytes of their Redis keys."""

    window_seconds: int

    def keys_of(self, site_id: str, keys: Iterable[str]) -> list[KeyT]: ...

    def filter_new(self, keys: list[KeyT]) -> list[bool]: ...

    def add_all(self, keys: Iterable[KeyT], *, at: float | None = None) -> None: ...


def key_hash(site_id: str, key: str) -> int:
    # Python's own string hashing: fast, 64-bit, and stable within a process, which is all the
    # in-memory window needs (it is rebuilt from the lake on start).
    return hash((site_id, key))


class RecentKeys:
    """The window in this process's memory: one server's claims, or a flusher's record of the lake."""

    def __init__(
        self, *, window_seconds: int = WINDOW_SECONDS, clock: Callable[[], float] = time.time
    ) -> None:
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

    @staticmethod
    def keys_of(site_id: str, keys: Iterable[str]) -> list[int]:
        return [key_hash(site_id, key) for key in keys]

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


# A key's value says how far its row got: "1" claimed (an event id, by the Redis log's script as it
# logged the batch), "2" in the lake (set by the flush that wrote the row).
CLAIMED, IN_LAKE = b"1", b"2"

# For each key: 1 when it is not yet at ``ARGV[1]`` (any value: ""), and not repeated earlier in KEYS.
_FILTER_SCRIPT = """
local fresh, seen = {}, {}
for i, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  local there = value and (ARGV[1] == '' or value == ARGV[1])
  fresh[i] = (seen[key] or there) and 0 or 1
  seen[key] = true
end
return fresh
"""
# Keys per call: one script call holds Redis for its whole run, and other clients wait.
KEYS_PER_CALL = 10_000


class RedisRecentKeys:
    """The same window shared by every process of a scaled-out install: one Redis key per key,
    expiring with the window, named by a 128-bit digest of (site, key) so every process names it
    alike (Python's own string hash differs between processes). Event ids are claimed by the Redis
    log as it logs their batch (``StreamLog.append_claiming``); every flush marks the keys it wrote,
    so each flush, whichever process runs it, knows what any other wrote."""

    def __init__(self, client: redis.Redis, table: str, *, window_seconds: int = WINDOW_SECONDS) -> None:
        self.window_seconds = window_seconds
        self._client = client
        self._prefix = f"aisle:seen:{table}:".encode()
        self._filter = client.register_script(_FILTER_SCRIPT)

    def keys_of(self, site_id: str, keys: Iterable[str]) -> list[bytes]:
        site = site_id.encode() + b"\0"
        return [self._prefix + hashlib.blake2b(site + key.encode(), digest_size=16).digest() for key in keys]

    def _fresh(self, keys: list[bytes], value: bytes) -> list[bool]:
        fresh: list[bool] = []
        for start in range(0, len(keys), KEYS_PER_CALL):
            part = keys[start : start + KEYS_PER_CALL]
            fresh.extend(bool(flag) for flag in self._filter(keys=part, args=[value]))
        if len(keys) > KEYS_PER_CALL:  # a repeat across two calls
            seen: set[bytes] = set()
            for index, key in enumerate(keys):
                fresh[index] = fresh[index] and key not in seen
                seen.add(key)
        return fresh

    def filter_new(self, keys: list[bytes]) -> list[bool]:
        """For each key: True when it is neither claimed nor in the lake, nor repeated earlier."""
        return self._fresh(keys, b"")

    def filter_not_in_lake(self, keys: list[bytes]) -> list[bool]:
        """For each key: True when no flush has written its row yet, nor is it repeated earlier."""
        return self._fresh(keys, IN_LAKE)

    def add_all(self, keys: Iterable[bytes], *, at: float | None = None) -> None:
        """Mark ``keys`` as in the lake, for the window from ``at`` (now by default)."""
        ttl = self.window_seconds - int(time.time() - at) if at is not None else self.window_seconds
        if ttl <= 0:
            return
        pipe = self._client.pipeline(transaction=False)
        for count, key in enumerate(keys, 1):
            pipe.set(key, IN_LAKE, ex=ttl)
            if count % KEYS_PER_CALL == 0:
                pipe.execute()
        pipe.execute()
