"""Group commit: callers hand items to one writer thread, which writes every item waiting when a
write begins in one go (one sync, one round trip) and answers each caller, on its thread or event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from concurrent.futures import Future
from typing import Any


class Closed(RuntimeError):
    pass


class GroupCommit:
    """Appends gathered by one writer thread: every request waiting when a write begins shares it
    and its sync. ``_write`` makes a group's items durable or raises; it may return one result per
    item, which that item's caller receives."""

    def __init__(self, *, name: str, max_group: int = 4096) -> None:
        self.max_group = max_group
        self._queue: queue.SimpleQueue[tuple[Any, Future | asyncio.Future] | None] = queue.SimpleQueue()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name=name, daemon=True)
        self._writer.start()

    def _write(self, items: list[Any]) -> list[Any] | None:
        raise NotImplementedError

    def submit(self, item: Any) -> Future:
        """Queue ``item`` (complete JSON lines, for a plain append); the future resolves once it is durable."""
        if self._closed:
            raise Closed("the log is closed")
        future: Future = Future()
        self._queue.put((item, future))
        return future

    async def call(self, item: Any) -> Any:
        """``submit`` for the event loop: awaits the item's result without holding the loop."""
        if self._closed:
            raise Closed("the log is closed")
        future = asyncio.get_running_loop().create_future()
        self._queue.put((item, future))
        return await future

    async def append(self, payload: bytes) -> None:
        await self.call(payload)

    def append_sync(self, payload: bytes) -> None:
        self.submit(payload).result()

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            group = [item]
            while len(group) < self.max_group:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                group.append(more)
            error: OSError | None = None
            results = None
            try:
                results = self._write([item for item, _ in group])
            except OSError as exc:
                error = exc
            _settle([waiter for _, waiter in group], error, results)
            if error is None:
                self._after_write()

    def _after_write(self) -> None:
        """Housekeeping once a group's waiters are answered (its failure must not fail them)."""

    def _stop_writer(self) -> bool:
        """Stop taking appends and let the queued ones finish; False when already closed."""
        if self._closed:
            return False
        self._closed = True
        self._queue.put(None)
        self._writer.join(timeout=30)
        return True


def _settle(waiters: list, error: OSError | None, results: list[Any] | None = None) -> None:
    """Wake every waiter of a group: thread futures directly, event-loop futures with one callback
    per loop (one wake-up of the loop for the whole group, not one per request). A waiter gets its
    own result, or ``error``; a result that is an exception is raised to its waiter alone."""
    outcomes = results if results is not None else [None] * len(waiters)
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any]]] = {}
    for waiter, outcome in zip(waiters, outcomes, strict=True):
        if isinstance(waiter, asyncio.Future):
            by_loop.setdefault(waiter.get_loop(), []).append((waiter, outcome))
        else:
            _resolve(waiter, error, outcome)
    for loop, futures in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop closed; nobody waits any more
            loop.call_soon_threadsafe(_settle_on_loop, futures, error)


def _settle_on_loop(futures: list[tuple[asyncio.Future, Any]], error: OSError | None) -> None:
    for future, outcome in futures:
        if not future.done():
            _resolve(future, error, outcome)


def _resolve(waiter: Future | asyncio.Future, error: BaseException | None, outcome: Any) -> None:
    if error is None and isinstance(outcome, BaseException):
        error = outcome
    if error is None:
        waiter.set_result(outcome)
    else:
        waiter.set_exception(error)
