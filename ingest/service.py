"""The write path, end to end: validate and normalise, append durably, flush to the lake."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from itertools import compress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson
import redis

from ingest import flusher_process
from ingest.consent import consent_row
from ingest.dedupe import WINDOW_SECONDS, KeyWindow, RecentKeys, RedisRecentKeys
from ingest.event_lines import encode_event_batch, without_events
from ingest.events import EventColumns, EventFailures, event_log_columns, valid_event_log_columns
from ingest.flusher import Flusher, LogSource
from ingest.log import DurableLog, FileChunks, LogReader
from ingest.metrics import metric_row
from ingest.orders import order_row
from ingest.schemas import BatchResult, Rejection
from ingest.stream_log import StreamLog, bind_data_dir, check_data_dir, check_durable, is_bound
from ingest.validation import Context, Rejected, common_columns
from warehouse.lake import CONSENTS, EVENTS, METRICS, ORDERS, TABLES, Lake, LakeTable

if TYPE_CHECKING:
    from ingest.batch_worker import PreparedBatch

Failures = list[tuple[int, Rejected]]
BatchRows = Callable[[list[Any], Context], tuple[list[dict[str, Any]], Failures]]

# A Redis log's entries normally reach the lake within a flush interval or two.
STALE_BACKLOG_SECONDS = 60


def one_by_one(make_row: Callable[[Any, Context], dict[str, Any]]) -> BatchRows:
    """Batch form of a per-item normaliser: rows of the good items, rejections by index."""

    def rows_of(raws: list[Any], ctx: Context) -> tuple[list[dict[str, Any]], Failures]:
        rows, failures = [], []
        for index, raw in enumerate(raws):
            try:
                rows.append(make_row(raw, ctx))
            except Rejected as exc:
                failures.append((index, exc))
        return rows, failures

    return rows_of


order_rows = one_by_one(order_row)
metric_rows = one_by_one(metric_row)


def encode(rows: Iterable[dict[str, Any]]) -> bytes:
    return b"\n".join(map(orjson.dumps, rows)) + b"\n"


def _batch_result(event_ids: list[str], failures: EventFailures, duplicates: int) -> BatchResult:
    """``accepted`` counts every valid event, re-sent ones too."""
    return BatchResult(accepted=len(event_ids), rejected=_rejections(failures), duplicates=duplicates)


def _rejections(failures: EventFailures) -> list[Rejection]:
    return [Rejection(index=index, code=exc.code, reason=exc.reason) for index, exc in failures]


class DataDirBusy(RuntimeError):
    pass


def _lock_data_dir(data_dir: Path) -> TextIO:
    """One writer per data directory: the log and the lake assume a single process appends."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / "ingest.lock", "w")  # noqa: SIM115 - held for the life of the Ingest
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.close()
        raise DataDirBusy(
            f"another Aisle process writes to {data_dir}; stop it first (one writer per data directory)"
        ) from exc
    return handle


def flush_file_log(data_dir: Path) -> int:
    """Write to the lake whatever a file log in ``data_dir`` holds beyond its checkpoint (rows an
    install acknowledged before it moved to a Redis log); returns the rows written."""
    held = [LogReader(d) for d in sorted((data_dir / "log").glob("*")) if d.is_dir()]
    if not any(log.durable_end > log.checkpoint() for log in held):
        return 0
    ingest = Ingest(data_dir=data_dir, flush_interval_seconds=3600)
    try:
        for flusher in ingest.flushers.values():
            flusher.remember_stored()
        return ingest.flush()
    finally:
        ingest.stop()


def _open_redis_log(stream_url: str, data_dir: Path) -> redis.Redis:
    """A client of the Redis log, refused (``RedisLogRefused``) when that Redis is not durable or
    feeds another data directory."""
    client = redis.Redis.from_url(stream_url, socket_timeout=10, socket_connect_timeout=5)
    try:
        check_durable(client)
        check_data_dir(client, data_dir)
    except BaseException:
        client.close()
        raise
    return client


def check_can_start(data_dir: Path, stream_url: str | None, *, flush_in_background: bool) -> None:
    """What ``Ingest`` would refuse, checked before a server starts (so the command can say it in one
    line): a data directory another process writes, a Redis log that is not durable, belongs to
    another data directory or does not answer (``redis.RedisError``). Redis is asked first: locking
    makes the data directory, which a refused process should leave as it was."""
    if stream_url is not None:
        _open_redis_log(stream_url, data_dir).close()
    if stream_url is None or flush_in_background:
        _lock_data_dir(data_dir).close()


class Ingest:
    def __init__(
        self,
        *,
        data_dir: Path,
        flush_interval_seconds: float = 1.0,
        events_flusher_process: bool = False,
        stream_url: str | None = None,
        flush_in_background: bool = True,
        order_window_seconds: int = WINDOW_SECONDS,
        may_write: Callable[[], bool] | None = None,
    ) -> None:
        """``events_flusher_process``: flush events from a process of their own (``ingest.flusher_process``)
        instead of a thread of this one; the server does, tests that drive an Ingest directly do not.

        ``stream_url``: log to Redis Streams there instead of files in ``data_dir``, for API processes
        that share the data directory (the README's Scaling out); accepted keys are then claimed in
        Redis. ``flush_in_background`` false makes such a process an API process only: it flushes when
        asked (``flush``), and the install's one ``aisle flush`` does the rest.

        ``order_window_seconds``: how long a received order id stays a duplicate (other keys: 24 h).
        ``may_write``: asked by every flush (a Redis log's lake writer: its lease held, its
        directory the servers')."""
        self.data_dir = data_dir
        self.flush_interval_seconds = flush_interval_seconds
        self.flush_in_background = flush_in_background
        self.events_flusher_process = events_flusher_process and stream_url is None
        # Refused before the data directory is locked.
        self._redis = _open_redis_log(stream_url, data_dir) if stream_url is not None else None
        # One process flushes in the background per data directory: the server of a file log, the
        # `aisle flush` of a Redis log.
        self._lock_handle = _lock_data_dir(data_dir) if stream_url is None or flush_in_background else None
        self._events_process: flusher_process.SupervisedProcess | None = None
        self.lake = Lake(data_dir / "lake")
        windows = {name: order_window_seconds if name == ORDERS.name else WINDOW_SECONDS for name in TABLES}
        # A file log's logs and windows (claimed in this process's memory), or a Redis log's streams
        # and windows (claimed in Redis); ``logs`` and ``keys`` are whichever there are.
        self._file_logs: dict[str, DurableLog] = {}
        self._claims: dict[str, RecentKeys] = {}
        self._streams: dict[str, StreamLog] = {}
        self._shared_keys: dict[str, RedisRecentKeys] = {}
        self.logs: dict[str, DurableLog] | dict[str, StreamLog]
        self.keys: Mapping[str, KeyWindow[Any]]
        sources: dict[str, LogSource]
        if self._redis is None:
            self.logs = self._file_logs = {name: DurableLog(data_dir / "log" / name) for name in TABLES}
            # One window per table serves both the accepting side and the flusher's checks.
            self.keys = self._claims = {name: RecentKeys(window_seconds=windows[name]) for name in TABLES}
            sources = {name: FileChunks(log) for name, log in self._file_logs.items()}
        else:
            redis_log = self._redis
            self.logs = self._streams = {
                name: StreamLog(
                    redis_log, name, directory=data_dir / "log" / name, claim_seconds=windows[name]
                )
                for name in TABLES
            }
            self.keys = self._shared_keys = {
                name: RedisRecentKeys(redis_log, name, window_seconds=windows[name]) for name in TABLES
            }
            if not is_bound(redis_log):
                # A Redis new to this data directory (an install moving from the file log, a Redis
                # replaced) learns what the lake received within the window, so re-sends of those
                # rows stay duplicates.
                self._remember_lake_in_redis()
            bind_data_dir(redis_log, data_dir)
            sources = dict(self._streams)
        self.flushers = {
            name: Flusher(
                table=table,
                source=sources[name],
                lake=self.lake,
                # Event and consent ids are claimed as they are accepted (on a Redis log, as they are
                # logged: each id is stored from the one entry that claimed it); other rows are checked
                # against what any flush wrote (a Redis log's marks); replays against the lake itself.
                stored=self._claims[name] if name in self._claims else RecentKeys(),
                interval_seconds=flush_interval_seconds,
                claimed_at_accept=table in (EVENTS, CONSENTS, ORDERS),
                shared=self._shared_keys.get(name) if table is not EVENTS else None,
                reload_on_replay=stream_url is not None,
                may_write=may_write,
            )
            for name, table in TABLES.items()
        }
        self._started = False
        self._after_flush: list[Callable[[], object]] = []

    def _remember_lake_in_redis(self) -> None:
        for name, table in TABLES.items():
            keys = self._shared_keys[name]
            for site_id, row_keys, written_at in self.lake.recent_keys(
                table, time.time() - keys.window_seconds
            ):
                keys.add_all(keys.keys_of(site_id, row_keys), at=written_at)

    def start(self) -> None:
        """Replay whatever the logs hold beyond their checkpoints, then flush in the background."""
        if not self.flush_in_background:
            return
        for flusher in self.flushers.values():
            if self._redis is None:  # the window accepts check (a Redis log loads the lake on replays)
                flusher.remember_stored()
            flusher.flush()
            if not (self.events_flusher_process and flusher.table is EVENTS):
                flusher.start()
        if self.events_flusher_process:
            self._events_process = flusher_process.SupervisedProcess(
                self.data_dir, self.flush_interval_seconds
            )
            self._events_process.start()
        self._started = True

    def stop(self) -> None:
        if self._events_process is not None:
            self._events_process.stop()
            self._events_process = None
        for flusher in self.flushers.values():
            if self._started:
                flusher.stop()
            flusher.lock.close()
        for durable_log in self.logs.values():
            durable_log.close()
        if self._redis is not None:
            self._redis.close()
        self._started = False
        if self._lock_handle is not None and not self._lock_handle.closed:
            self._lock_handle.close()

    @property
    def writes_lake(self) -> bool:
        """Whether this process is its data directory's lake writer: a file log's, or a Redis log's
        `aisle flush`. Others (a Redis log's servers, imports and demo loads) leave what they accept
        in the log for that writer, which alone proved the data directory is the servers'."""
        return self._lock_handle is not None

    @property
    def has_flusher_process(self) -> bool:
        return self._events_process is not None

    def flusher_status(self) -> str:
        """The events flusher process, for the health check; raises while the process is away."""
        if self._events_process is None:
            raise RuntimeError("the events flusher process is not running (accepted events wait in the log)")
        return self._events_process.status()

    def backlog(self) -> str | None:
        """On a Redis log, what waits for `aisle flush` (health reports it; None on a file log)."""
        if self._redis is None:
            return None
        now_ms = int(time.time() * 1000)
        waiting = {
            name: (log.length(), log.oldest_age_seconds(now_ms)) for name, log in self._streams.items()
        }
        oldest = max((age for _, age in waiting.values() if age is not None), default=None)
        text = f"{sum(n for n, _ in waiting.values())} entries wait for the lake"
        if oldest is not None:
            text += f", the oldest for {oldest:.1f} s"
            if oldest > STALE_BACKLOG_SECONDS:
                text += " (is `aisle flush` running?)"
        return text

    def after_flush(self, job: Callable[[], object]) -> None:
        """Run ``job`` at the end of every ``flush``: a reader of the lake kept up to date by a job (the
        product catalog) then holds what a flush wrote when that flush returns. Background flushes do
        not run it: the scheduler runs such jobs on its own clock."""
        self._after_flush.append(job)

    def flush(self) -> int:
        """Write everything accepted so far to the lake now (tests and admin use this), then run the
        ``after_flush`` jobs."""
        written = sum(f.flush() for f in self.flushers.values())
        for job in self._after_flush:
            job()
        return written

    # --- accepting ---------------------------------------------------------------------------------

    def _prepare(
        self, table: LakeTable, raws: list[Any], ctx: Context, rows_of: BatchRows
    ) -> tuple[list[dict[str, Any]], list[Rejection], int]:
        """Normalise a batch and drop rows whose key was already stored (counted as duplicates)."""
        rows, failures = rows_of(raws, ctx)
        rejected = _rejections(failures)
        if not rows:
            return rows, rejected, 0
        keys = self.keys[table.name]
        fresh = keys.filter_new(keys.keys_of(ctx.site_id, [row[table.key] for row in rows]))
        kept = [row for row, new in zip(rows, fresh, strict=True) if new]
        return kept, rejected, len(rows) - len(kept)

    @contextmanager
    def _claimed(self, site_id: str, event_ids: list[str], table: LakeTable = EVENTS) -> Iterator[list[bool]]:
        """Claim ``event_ids`` (or other keys of ``table``); yields which ones are new. They stay
        claimed unless the body of the ``with`` fails (the client retries). File logs only: a Redis
        log claims as it logs (``_claiming``)."""
        keys = self._claims[table.name]
        hashes = keys.keys_of(site_id, event_ids)
        fresh = keys.claim(hashes)
        try:
            yield fresh
        except BaseException:
            keys.release(compress(hashes, fresh))
            raise

    def _new_events_line(
        self, columns: EventColumns, ctx: Context, fresh: list[bool]
    ) -> tuple[bytes | None, int]:
        """The log line of the events whose id is new (None when none is), and the number of duplicates."""
        duplicates = len(fresh) - sum(fresh)
        if duplicates:
            columns = {name: list(compress(values, fresh)) for name, values in columns.items()}
        return (encode_event_batch(common_columns(ctx), columns) if columns["event_id"] else None), duplicates

    def _claiming(
        self, site_id: str, event_ids: list[str], table: LakeTable = EVENTS
    ) -> tuple[StreamLog, list[bytes]] | None:
        """On a Redis log, the stream and the keys its script claims as it logs a batch (none when
        no event of the batch is valid: nothing is logged)."""
        if self._redis is None:
            return None
        return self._streams[table.name], self._shared_keys[table.name].keys_of(site_id, event_ids)

    async def _store_events(
        self, columns: EventColumns, failures: EventFailures, ctx: Context
    ) -> BatchResult:
        if claiming := self._claiming(ctx.site_id, columns["event_id"]):
            stream, keys = claiming
            line = encode_event_batch(common_columns(ctx), columns) if keys else b""
            fresh = await stream.append_claiming(line, keys)
            return _batch_result(columns["event_id"], failures, len(fresh) - sum(fresh))
        with self._claimed(ctx.site_id, columns["event_id"]) as fresh:
            new_line, duplicates = self._new_events_line(columns, ctx, fresh)
            if new_line:
                await self.logs[EVENTS.name].append(new_line)
        return _batch_result(columns["event_id"], failures, duplicates)

    async def accept_events(self, raws: list[Any], ctx: Context) -> BatchResult:
        """Validate, drop re-sent event ids, append durably; rejections by index."""
        return await self._store_events(*event_log_columns(raws, ctx), ctx)

    async def accept_valid_events(self, events: list[Any], ctx: Context) -> BatchResult:
        """``accept_events`` for a batch that ``parse_event_batch`` already validated."""
        return await self._store_events(*valid_event_log_columns(events, ctx), ctx)

    async def accept_prepared_events(self, batch: PreparedBatch, site_id: str) -> BatchResult:
        """``accept_events`` for a batch a worker process validated and encoded (``ingest.batch_worker``)."""
        if claiming := self._claiming(site_id, batch.event_ids):
            stream, keys = claiming
            fresh = await stream.append_claiming(batch.line, keys)
            return _batch_result(batch.event_ids, batch.failures, len(fresh) - sum(fresh))
        with self._claimed(site_id, batch.event_ids) as fresh:
            duplicates = len(fresh) - sum(fresh)
            line = batch.line if not duplicates else without_events(batch.line, fresh)
            if line:
                await self.logs[EVENTS.name].append(line)
        return _batch_result(batch.event_ids, batch.failures, duplicates)

    def accept_events_sync(self, raws: list[Any], ctx: Context) -> BatchResult:
        columns, failures = event_log_columns(raws, ctx)
        if claiming := self._claiming(ctx.site_id, columns["event_id"]):
            stream, keys = claiming
            line = encode_event_batch(common_columns(ctx), columns) if keys else b""
            fresh = stream.append_claiming_sync(line, keys)
            return _batch_result(columns["event_id"], failures, len(fresh) - sum(fresh))
        with self._claimed(ctx.site_id, columns["event_id"]) as fresh:
            new_line, duplicates = self._new_events_line(columns, ctx, fresh)
            if new_line:
                self.logs[EVENTS.name].append_sync(new_line)
        return _batch_result(columns["event_id"], failures, duplicates)

    async def accept_metrics(self, raws: list[Any], ctx: Context) -> BatchResult:
        rows, rejected, _ = self._prepare(METRICS, raws, ctx, metric_rows)
        if rows:
            await self.logs[METRICS.name].append(encode(rows))
        return BatchResult(accepted=len(rows), rejected=rejected, duplicates=0)

    async def accept_consent(self, raw: Any, ctx: Context) -> tuple[dict[str, Any], bool]:
        """Validate one consent record (raises Rejected) and append it durably unless its consent id
        was already received; returns the row and whether it was such a duplicate. Ids are claimed as
        events' are, so a re-send before the first copy's flush is a duplicate too."""
        row = consent_row(raw, ctx)
        ids = [row["consent_id"]]
        if claiming := self._claiming(ctx.site_id, ids, CONSENTS):
            stream, keys = claiming
            [fresh] = await stream.append_claiming(encode([row]), keys)
            return row, not fresh
        with self._claimed(ctx.site_id, ids, CONSENTS) as [fresh]:
            if fresh:
                await self.logs[CONSENTS.name].append(encode([row]))
        return row, not fresh

    def order(self, raw: Any, ctx: Context) -> dict[str, Any]:
        """Validate and normalise an order (raises Rejected)."""
        return order_row(raw, ctx)

    async def store_new_order(self, row: dict[str, Any], site_id: str) -> bool:
        """Append the order durably unless its order id was received within the duplicate window
        (claimed by an earlier request, or in the lake); whether it was appended. The claim is taken
        with the append, as event ids are: on a Redis log in the one script that logs the line, so no
        server or Redis crash leaves a claim without its order (re-sends would answer 409 for an order
        stored nowhere); on a file log in this process's window, which a crash loses with the line."""
        ids = [row["order_id"]]
        if claiming := self._claiming(site_id, ids, ORDERS):
            stream, keys = claiming
            [fresh] = await stream.append_claiming(encode([row]), keys)
            return fresh
        with self._claimed(site_id, ids, ORDERS) as [fresh]:
            if fresh:
                await self.logs[ORDERS.name].append(encode([row]))
        return fresh

    def store_new_orders_sync(self, rows: list[dict[str, Any]], site_id: str) -> list[dict[str, Any]]:
        """``store_new_order`` for many orders at once (imports); the rows appended."""
        ids = [row["order_id"] for row in rows]
        if claiming := self._claiming(site_id, ids, ORDERS):
            stream, keys = claiming
            fresh = stream.append_claiming_sync(encode(rows), keys) if rows else []
            return list(compress(rows, fresh))
        with self._claimed(site_id, ids, ORDERS) as fresh:
            new = list(compress(rows, fresh))
            if new:
                self.logs[ORDERS.name].append_sync(encode(new))
        return new

    def accept_orders_sync(
        self, raws: list[Any], ctx: Context, *, stored: list[dict[str, Any]] | None = None
    ) -> BatchResult:
        """Bulk path (imports): orders validated one by one, already stored order ids counted as
        duplicates; ``stored``, when given, receives the rows this call stored."""
        rows, rejected, duplicates = self._prepare(ORDERS, raws, ctx, order_rows)
        # Claimed as the order routes claim them: an order the routes take meanwhile is a duplicate here.
        new = self.store_new_orders_sync(rows, ctx.site_id)
        duplicates += len(rows) - len(new)
        if stored is not None:
            stored.extend(new)
        return BatchResult(accepted=len(new) + duplicates, rejected=rejected, duplicates=duplicates)
