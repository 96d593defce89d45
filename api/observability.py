"""Structured request logs and Prometheus metrics."""

from __future__ import annotations

import atexit
import itertools
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import BinaryIO, TextIO, cast

import orjson
import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.typing import Processor, WrappedLogger

from api.errors import CLIENT_CLOSED_REQUEST, unexpected_error


def configure_logging(*, json: bool) -> None:
    # structlog's loggers only write to their file and flush it, which _Stderr does for bytes and text.
    renderer: Processor
    factory: Callable[..., WrappedLogger]
    if json:
        # One orjson encoding and one write per line: request logs sit on the hot path.
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory(file=cast(BinaryIO, _Stderr()))
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
        factory = structlog.PrintLoggerFactory(file=cast(TextIO, _Stderr()))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        logger_factory=factory,
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        cache_logger_on_first_use=True,
    )


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "aisle_http_requests_total",
            "HTTP requests",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "aisle_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            registry=self.registry,
        )


class BatchWorkerMetrics:
    """Batch workers (``ingest.batch_worker``) as Prometheus samples, read when scraped."""

    def __init__(self, workers) -> None:
        self.workers = workers

    def collect(self):
        ready = GaugeMetricFamily(
            "aisle_event_batch_workers_ready", "Batch worker processes ready for bodies"
        )
        ready.add_metric([], self.workers.ready)
        bodies = CounterMetricFamily(
            "aisle_event_batches", "Event batch bodies by who prepared them", labels=["prepared_by"]
        )
        bodies.add_metric(["worker"], self.workers.prepared)
        bodies.add_metric(["server"], self.workers.left)
        yield ready
        yield bodies


def route_template(scope: Scope) -> str:
    """The matched route as a template (`/api/v1/sites/{id}`), so metrics have bounded labels."""
    if scope.get("route") is None:
        return "unmatched"
    by_value = {str(v): k for k, v in (scope.get("path_params") or {}).items()}
    segments = scope.get("path", "").split("/")
    return "/".join(f"{{{by_value[s]}}}" if s in by_value else s for s in segments)


class _Stderr:
    """Log lines for stderr, gathered and written a few times a second: stderr is unbuffered, so a
    write per request would be a system call per request on the busiest route. Lines above info, text
    lines (the console renderer) and a full buffer are written at once, and whatever waits is written
    when the process exits. The stream is resolved at each write, so redirections made after start-up
    are honoured."""

    def __init__(self, *, interval_seconds: float = 0.2, limit_bytes: int = 64 * 1024) -> None:
        self._pending = bytearray()
        self._lock = threading.Lock()  # guards the pending lines
        self._writing = threading.Lock()  # one drain at a time, so lines keep their order
        self._limit = limit_bytes
        self._interval = interval_seconds
        self._drainer: threading.Thread | None = None
        atexit.register(self.drain)

    def write(self, data: str | bytes) -> None:
        if isinstance(data, str):
            self.drain()
            _write_out(data)
            return
        with self._lock:
            self._pending += data
            urgent = len(self._pending) >= self._limit or _INFO not in data
            if self._drainer is None:
                self._drainer = threading.Thread(target=self._drain_often, name="log-drain", daemon=True)
                self._drainer.start()
        if urgent:
            self.drain()

    def flush(self) -> None:
        """Loggers flush after every line; the lines are written by ``drain`` instead."""

    def drain(self) -> None:
        with self._writing:
            with self._lock:
                data, self._pending = bytes(self._pending), bytearray()
            if data:
                _write_out(data)

    def _drain_often(self) -> None:
        while True:
            time.sleep(self._interval)
            self.drain()


_INFO = b'"level":"info"'


def _write_out(data: str | bytes) -> None:
    # A log line must never fail the request it describes (a closed or swapped stream included).
    try:
        if isinstance(data, bytes):
            stream = getattr(sys.stderr, "buffer", None)
            if stream is None:  # a text-only replacement (test capture)
                sys.stderr.write(data.decode())
                return
            view = memoryview(data)
            while view:  # stderr's binary layer is raw: a write to a full pipe may take part of it
                written = stream.write(view)
                if not written:  # a non-blocking stderr that is full: drop the rest, never spin
                    return
                view = view[written:]
        else:
            sys.stderr.write(data)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def request_ids() -> Iterator[str]:
    """Unique request ids: a random prefix per process, then a counter. A uuid4 per request would
    read the system's random source on the busiest path."""
    prefix = uuid.uuid4().hex[:16]
    return (f"{prefix}{n:016x}" for n in itertools.count(1))


class RequestObserver:
    """ASGI middleware: one log line and metric sample per request, labelled by route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.log = structlog.get_logger("aisle.http")
        self._request_ids = request_ids()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = next(
            (v.decode() for k, v in scope.get("headers", []) if k == b"x-request-id"), None
        ) or next(self._request_ids)
        status = 500
        started_answer = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started_answer
            if message["type"] == "http.response.start":
                status = message["status"]
                started_answer = True
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except ClientDisconnect:
            # The client left before its body arrived: nothing to answer and nothing of ours failed.
            # Recorded as nginx does (499), not as a 500 with a traceback.
            status = CLIENT_CLOSED_REQUEST
        except Exception as exc:
            if started_answer:
                raise  # half an answer is out: only dropping the connection tells the client
            # Answered here rather than by Starlette's outermost handler, which re-raises to the
            # server: uvicorn then drops the keep-alive connection, and the 500 has no request id.
            await unexpected_error(exc)(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - started
            template = route_template(scope)
            method = scope.get("method", "")
            self.metrics.requests.labels(method, template, str(status)).inc()
            self.metrics.latency.labels(method, template).observe(elapsed)
            client = scope.get("client")
            self.log.info(
                "request",
                request_id=request_id,
                method=method,
                path=scope.get("path"),
                route=template,
                status=status,
                duration_ms=round(elapsed * 1000, 2),
                client=client[0] if client else None,
            )
