"""Ad-hoc SQL runs in worker processes, so that no query can take the server down with it.

DuckDB's memory limit covers what its buffer manager holds (joins, aggregates, sorts), not a list or a
string a scalar function builds (``range(2000000000)``, ``repeat('x', 1500000000)``), and such a
function does not look for interrupts while it builds: in the server's own process one such query
grew to 23 GB and the kernel killed the server. Here each query runs in a worker process. The
caller's thread watches it, and kills it once its resident memory passes the sandbox's ceiling
(read every 50 ms) or once it outlives its time limit by a second (the worker's own DuckDB interrupt
usually stops it first, with a clean answer). The next query replaces a killed or dead worker.

Workers are shared by sandboxes with the same limits and kept between queries (starting one imports
DuckDB and pyarrow, about a second). A worker is ``python -m queries.adhoc.process FD LIMITS``
(not a multiprocessing child, which would re-run the caller's main script), talking pickles over its
end of a socket pair; it exits when the caller's end closes. Answers come back as Arrow IPC streams.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pyarrow as pa

from queries.adhoc.errors import SqlError, SqlTimeout, memory_error
from queries.adhoc.guard import GuardedQuery
from queries.adhoc.sandbox import Limits

_POLL_SECONDS = 0.05
# A worker imports for about a second; one not ready after this is broken.
READY_TIMEOUT_SECONDS = 60.0
# How long past its time limit a query may take before its worker is killed: the worker's own
# interrupt answers within ~50 ms when DuckDB looks for it.
KILL_GRACE_SECONDS = 1.0
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Job:
    lake_root: str
    query: GuardedQuery
    site_id: str
    bound: dict[str, Any]
    limit: int
    timeout_ms: int


# --- the worker's side -----------------------------------------------------------------------------


def _serve(conn: Connection, limits: Limits) -> None:
    """Run jobs until the caller's end closes. Each answer: ``("ok", columns, truncated, elapsed_ms,
    duckdb_sql)`` then the table as Arrow IPC bytes, or ``("error", code, message, details)``."""
    from queries.adhoc.run import run_in_this_process
    from warehouse.lake import Lake

    conn.send(("ready",))
    while True:
        try:
            job: Job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = run_in_this_process(
                Lake(Path(job.lake_root)),
                job.query,
                site_id=job.site_id,
                bound=job.bound,
                limit=job.limit,
                timeout_ms=job.timeout_ms,
                limits=limits,
            )
        except SqlError as error:
            conn.send(("error", error.code, error.message, error.details))
            continue
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, result.table.schema) as writer:
            writer.write_table(result.table)
        conn.send(("ok", result.columns, result.truncated, result.elapsed_ms, result.duckdb_sql))
        conn.send_bytes(sink.getvalue())


# --- the caller's side -----------------------------------------------------------------------------


class _Worker:
    def __init__(self, limits: Limits) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "queries.adhoc.process",
                str(theirs.fileno()),
                json.dumps(asdict(limits)),
            ],
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self) -> None:
        """Before its first job: the time limit counts from when the worker can run it."""
        if self.ready:
            return
        if not self.conn.poll(READY_TIMEOUT_SECONDS):
            raise RuntimeError(f"an ad-hoc SQL worker did not start in {READY_TIMEOUT_SECONDS:.0f} s")
        self.conn.recv()
        self.ready = True

    def resident_bytes(self) -> int:
        try:
            with open(f"/proc/{self.process.pid}/statm", "rb") as statm:
                return int(statm.read().split()[1]) * _PAGE_BYTES
        except (OSError, ValueError, IndexError):
            return 0

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()
        self.conn.close()


class WorkerPool:
    """Idle workers of one set of limits; a query takes one (or starts one) and gives it back."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.kill()
        return _Worker(self.limits)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def run(self, job: Job) -> tuple[list[tuple[str, str]], pa.Table, bool, float, str]:
        """(columns, table, truncated, elapsed_ms, duckdb_sql) of one job, or the SqlError it raised;
        the worker is killed when it passes its memory ceiling or its time limit."""
        worker = self._take()
        healthy = False
        try:
            worker.wait_ready()
            worker.conn.send(job)
            self._watch(worker, job)
            reply = worker.conn.recv()
            if reply[0] == "error":
                healthy = True
                _, code, message, details = reply
                if code == "SQL_TIMEOUT":
                    raise SqlTimeout(job.timeout_ms)
                raise SqlError(code, message, details)
            _, columns, truncated, elapsed_ms, duckdb_sql = reply
            table = pa.ipc.open_stream(worker.conn.recv_bytes()).read_all()
            healthy = True
            return columns, table, truncated, elapsed_ms, duckdb_sql
        except (EOFError, OSError):
            raise self._ended(worker) from None
        finally:
            if healthy:
                self._give_back(worker)
            else:
                worker.kill()

    def _watch(self, worker: _Worker, job: Job) -> None:
        deadline = time.monotonic() + job.timeout_ms / 1000 + KILL_GRACE_SECONDS
        while not worker.conn.poll(_POLL_SECONDS):
            if worker.resident_bytes() > self.limits.max_process_bytes:
                raise memory_error(self.limits.memory_limit)
            if time.monotonic() > deadline:
                raise SqlTimeout(job.timeout_ms)
            if not worker.alive:
                raise self._ended(worker)

    @staticmethod
    def _ended(worker: _Worker) -> SqlError:
        try:
            code = worker.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            code = None
        return SqlError(
            "SQL_ABORTED",
            f"The query stopped the process running it (exit code {code}); nothing of it was kept. "
            "Simplify it, or narrow what it reads",
        )


_pools: dict[Limits, WorkerPool] = {}
_pools_lock = threading.Lock()


def pool_for(limits: Limits) -> WorkerPool:
    with _pools_lock:
        pool = _pools.get(limits)
        if pool is None:
            pool = _pools[limits] = WorkerPool(limits)
        return pool


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the caller, which closes our socket
    _serve(Connection(int(sys.argv[1])), Limits(**json.loads(sys.argv[2])))
    os._exit(0)
