"""Hot state: throttle counters and cached values, in Redis when configured, in process otherwise.

Both implementations answer the same calls with the same semantics (fixed windows that start at the
first hit), so the throttles and caches behave identically on one machine and on many.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from warehouse.group_commit import GroupCommit


@dataclass(frozen=True)
class WindowCount:
    count: int
    reset_in: int  # seconds until the window ends


class HotState(Protocol):
    def hit(self, key: str, *, window_seconds: int, amount: int = 1) -> WindowCount: ...

    async def hit_async(self, key: str, *, window_seconds: int, amount: int = 1) -> WindowCount:
        """``hit`` for the event loop: waits for Redis without holding the loop."""
        ...

    def peek(self, key: str) -> WindowCount: ...

    def clear(self, key: str) -> None: ...

    def get_value(self, key: str) -> bytes | None: ...

    def set_value(self, key: str, value: bytes, *, ttl_seconds: int) -> None: ...

    def set_value_if_absent(self, key: str, value: bytes, *, ttl_seconds: int) -> bool:
        """Set ``key`` only when it holds no live value; True when this call set it. Atomic, so of
        concurrent callers exactly one wins (a single-use token's claim)."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Drop every cached value whose key starts with ``prefix``; returns how many."""
        ...

    def ping(self) -> None: ...


class InProcessHotState:
    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._counters: dict[str, tuple[int, float]] = {}
        self._values: dict[str, tuple[bytes, float]] = {}

    def _live(self, key: str, now: float) -> tuple[int, float] | None:
        entry = self._counters.get(key)
        if entry and entry[1] <= now:
            del self._counters[key]
            return None
        return entry

    def hit(self, key: str, *, window_seconds: int, amount: int = 1) -> WindowCount:
        with self._lock:
            now = self._clock()
            entry = self._live(key, now)
            count, expires = entry if entry else (0, now + window_seconds)
            count += amount
            self._counters[key] = (count, expires)
            return _window(count, _millis(expires - now))

    async def hit_async(self, key: str, *, window_seconds: int, amount: int = 1) -> WindowCount:
        return self.hit(key, window_seconds=window_seconds, amount=amount)

    def peek(self, key: str) -> WindowCount:
        with self._lock:
            now = self._clock()
            entry = self._live(key, now)
            if not entry:
                return WindowCount(0, 0)
            return _window(entry[0], _millis(entry[1] - now))

    def clear(self, key: str) -> None:
        with self._lock:
            self._counters.pop(key, None)

    def get_value(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._values.get(key)
            if entry is None or entry[1] <= self._clock():
                self._values.pop(key, None)
                return None
            return entry[0]

    def set_value(self, key: str, value: bytes, *, ttl_seconds: int) -> None:
        with self._lock:
            self._values[key] = (value, self._clock() + ttl_seconds)

    def set_value_if_absent(self, key: str, value: bytes, *, ttl_seconds: int) -> bool:
        with self._lock:
            now = self._clock()
            entry = self._values.get(key)
            if entry is not None and entry[1] > now:
                return False
            self._values[key] = (value, now + ttl_seconds)
            return True

    def delete_prefix(self, prefix: str) -> int:
        with self._lock:
            doomed = [k for k in self._values if k.startswith(prefix)]
            for key in doomed:
                del self._values[key]
            return len(doomed)

    def ping(self) -> None:
        return None


# INCRBY then set the expiry only when the window is new, atomically.
_HIT_SCRIPT = """
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
if count == tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local ttl = redis.call('PTTL', KEYS[1])
return {count, ttl}
"""


class PipelinedCalls(GroupCommit):
    """Redis commands from the event loop, sent by one thread: the loop goes on while Redis answers,
    and the commands of concurrent requests share one round trip (and, on a Redis that syncs its
    append-only file before answering, one sync)."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        super().__init__(name="redis-calls")

    def _write(self, commands: list[tuple]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        try:
            return pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            return [exc] * len(commands)


class RedisHotState:
    def __init__(self, url: str, *, prefix: str = "aisle:") -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._prefix = prefix
        self._hit = self._redis.register_script(_HIT_SCRIPT)
        self._calls: PipelinedCalls | None = None  # started by the first call from an event loop
        self._calls_lock = threading.Lock()

    def hit(self, key: str, *, window_seconds: int, amount: int = 1) -> WindowCount:
        count, ttl_ms = self._hit(keys=[self._prefix + key], args=[amount, window_seconds * 1000])
        return _window(count, ttl_ms)

    async def hit_async(self, key: str, *, window_seconds: int, amount: int = 1) -> WindowCount:
        command = ("EVAL", _HIT_SCRIPT, 1, self._prefix + key, amount, window_seconds * 1000)
        count, ttl_ms = await self._pipelined().call(command)
        return _window(count, ttl_ms)

    def _pipelined(self) -> PipelinedCalls:
        with self._calls_lock:
            if self._calls is None:
                self._calls = PipelinedCalls(self._redis)
            return self._calls

    def peek(self, key: str) -> WindowCount:
        pipe = self._redis.pipeline()
        pipe.get(self._prefix + key)
        pipe.pttl(self._prefix + key)
        value, ttl_ms = pipe.execute()
        if value is None:
            return WindowCount(0, 0)
        return WindowCount(int(value), max(1, math.ceil(int(ttl_ms) / 1000)))

    def clear(self, key: str) -> None:
        self._redis.delete(self._prefix + key)

    def get_value(self, key: str) -> bytes | None:
        value = self._redis.get(self._prefix + "v:" + key)
        assert not isinstance(value, str)  # the client does not decode responses
        return value

    def set_value(self, key: str, value: bytes, *, ttl_seconds: int) -> None:
        self._redis.set(self._prefix + "v:" + key, value, ex=ttl_seconds)

    def set_value_if_absent(self, key: str, value: bytes, *, ttl_seconds: int) -> bool:
        return bool(self._redis.set(self._prefix + "v:" + key, value, ex=ttl_seconds, nx=True))

    def delete_prefix(self, prefix: str) -> int:
        doomed = list(
            self._redis.scan_iter(match=self._prefix + "v:" + _glob_escape(prefix) + "*", count=500)
        )
        return self._redis.delete(*doomed) if doomed else 0

    def ping(self) -> None:
        self._redis.ping()


def _window(count, ttl_ms) -> WindowCount:
    return WindowCount(int(count), max(1, math.ceil(int(ttl_ms) / 1000)))


def _millis(seconds: float) -> int:
    # Whole milliseconds, as Redis counts a TTL: (now + 60) - now can come out a hair above 60 in
    # floating point, and a ceiling of it would announce a 61-second window.
    return round(seconds * 1000)


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def open_hot_state(redis_url: str | None) -> HotState:
    return RedisHotState(redis_url) if redis_url else InProcessHotState()
