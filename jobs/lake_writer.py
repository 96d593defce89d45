"""`aisle flush`: the one process of a scaled-out install that writes the lake.

With the durable log in Redis (``AISLE_DURABLE_LOG=redis``) every `aisle serve` only accepts rows;
this process moves them from the log to Parquet every ``flush_interval_seconds`` and runs compaction,
as a file log's server does. It holds the data directory's lock and the Redis log's writer lease
(``ingest.writer_lease``), so a second one fails at start, on this machine or another.
Whatever a file log of the same data directory still holds (an install that moved to Redis) goes to
the lake first.
"""

from __future__ import annotations

import threading

import redis
import structlog

from aisle.settings import Settings
from ingest.lake_readers import WriterDirectory
from ingest.service import Ingest, check_can_start, flush_file_log
from ingest.writer_lease import LakeWriterBusy, WriterLease
from jobs.scheduler import start_scheduler
from warehouse.config_store.store import create_store_engine
from warehouse.engine import Engine

log = structlog.get_logger("aisle.flush")


class NotARedisLog(RuntimeError):
    pass


def check_can_run(settings: Settings) -> None:
    """Refuse (``NotARedisLog``, or what ``check_can_start`` refuses) without touching the data
    directory."""
    if settings.stream_url is None:
        raise NotARedisLog(
            "aisle flush moves a Redis log to the lake (AISLE_DURABLE_LOG=redis); a file log is "
            "flushed by its own `aisle serve`"
        )
    check_can_start(settings.data_dir, settings.stream_url, flush_in_background=True)


def run(settings: Settings, stop: threading.Event, *, ready: threading.Event | None = None) -> None:
    """Flush and compact until ``stop`` is set, then flush what the log holds and return."""
    check_can_run(settings)
    assert settings.stream_url is not None  # check_can_run refuses a file log
    if replayed := flush_file_log(settings.data_dir):
        log.info("file_log_flushed", rows=replayed)  # acknowledged before the move to Redis
    client = redis.Redis.from_url(settings.stream_url, socket_timeout=3, socket_connect_timeout=3)
    directory = WriterDirectory(client, settings.data_dir)
    try:
        # The servers read this directory, not a copy of it: proved before the lease is taken, so a
        # writer on a copy never holds it.
        if directory.prove(stop):
            _write(settings, stop, client, ready)
    finally:
        directory.remove_mark()
        client.close()


def _write(
    settings: Settings, stop: threading.Event, client: redis.Redis, ready: threading.Event | None
) -> None:
    lease = WriterLease(client)
    if not lease.acquire(stop=stop):  # one writer per Redis log, wherever it runs
        return
    store = create_store_engine(settings.resolved_database_url)
    try:
        ingest = Ingest(
            data_dir=settings.data_dir,
            flush_interval_seconds=settings.flush_interval_seconds,
            stream_url=settings.stream_url,
            flush_in_background=True,
            order_window_seconds=settings.order_duplicate_window_seconds,
            may_write=lambda: not lease.lost.is_set(),
        )
    except BaseException:
        store.dispose()
        lease.release()
        raise
    engine = Engine(ingest.lake)
    scheduler = None
    try:
        ingest.start()  # what earlier flushes left unacknowledged comes first
        scheduler = start_scheduler(
            ingest=ingest,
            compaction_interval_seconds=settings.compaction_interval_seconds,
            engine=engine,
            store=store,
        )
        log.info("flushing", data_dir=str(settings.data_dir), interval=settings.flush_interval_seconds)
        if ready is not None:
            ready.set()
        while not stop.wait(1):
            if lease.lost.is_set():
                raise LakeWriterBusy(
                    "another `aisle flush` took this Redis log's lease (this one could not renew it); "
                    "stopped without flushing further"
                )
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=True)
        ingest.stop()  # the last flush (none when the lease went to another writer)
        engine.close()
        store.dispose()
        lease.release()
