"""The lake writer's lease on a Redis log: one `aisle flush` per log, whatever machine or directory.

The data directory's lock (a local ``flock``) keeps a second flusher off the same directory on the same
machine, but not one on another machine mounting it, nor one given a copy of the directory's ``log-id``:
such a flusher would take stream entries into a lake nobody reads. The writer holds a Redis key
naming it, with a time to live it renews; a second writer waits for the key to expire (a writer killed with
``kill -9`` lets its successor in within ``TTL_SECONDS``) and is refused when it never does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid

import redis
import structlog

from ingest.stream_log import RedisLogRefused

log = structlog.get_logger("aisle.flush")

LEASE_KEY = "aisle:log:lake-writer"
TTL_SECONDS = 15
RENEW_SECONDS = 5

# Renew our own lease, or take it back when it ran out while Redis was away and nobody took it (else
# a stall longer than the time to live would stop the only writer for good); another writer's is left
# alone.
_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] or not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class LakeWriterBusy(RedisLogRefused):
    """Another `aisle flush` writes this Redis log's lake."""


class WriterLease:
    def __init__(self, client: redis.Redis, *, ttl_seconds: int | None = None) -> None:
        """``client``: the Redis log's, with a short socket timeout (a renewal must answer well within
        the time to live)."""
        self.client = client
        self.ttl_seconds = ttl_seconds or TTL_SECONDS
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, *, wait_seconds: float | None = None, stop: threading.Event | None = None) -> bool:
        """Take the lease, waiting up to ``wait_seconds`` (a little over its time to live) for a
        previous holder's to expire; ``LakeWriterBusy`` when it is still held then. False, without
        the lease, when ``stop`` is set while it waits (a SIGTERM waited up to 20 s)."""
        stop = stop or threading.Event()
        deadline = time.monotonic() + (self.ttl_seconds + 5 if wait_seconds is None else wait_seconds)
        while not self.client.set(LEASE_KEY, self.holder, nx=True, ex=self.ttl_seconds):
            holder = self.client.get(LEASE_KEY)
            if time.monotonic() >= deadline:
                name = holder.decode() if isinstance(holder, bytes) else holder
                raise LakeWriterBusy(
                    f"another `aisle flush` ({name}) writes this Redis log's lake; one per log: stop it "
                    "first (a writer that died lets the next one in within "
                    f"{self.ttl_seconds} s)"
                )
            log.info("waiting_for_lake_writer_lease", holder=holder)
            if stop.wait(1):
                return False
        self._thread = threading.Thread(target=self._renew, name="lake-writer-lease", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(min(RENEW_SECONDS, self.ttl_seconds / 3)):
            try:
                held = self.client.eval(_RENEW, 1, LEASE_KEY, self.holder, self.ttl_seconds)
            except redis.RedisError as exc:  # Redis away: the lease may run out; checked next time
                log.warning("lake_writer_lease_not_renewed", error=repr(exc))
                continue
            if not held:
                log.error("lake_writer_lease_lost", holder=self.holder)
                self.lost.set()
                return

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(redis.RedisError):  # it expires on its own
            self.client.eval(_RELEASE, 1, LEASE_KEY, self.holder)
        self.client.close()
