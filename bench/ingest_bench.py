"""Ingest benchmark: the real server over loopback, durability on, against a bare parse-and-validate
endpoint measured in the same run.

    .venv/bin/python bench/ingest_bench.py [--seconds 20] [--connections 16] [--repeat 1] [--log file]
        [--paced-rate 80000 (the default; 0 skips the paced run)]

Each run sends as fast as the server answers (a closed loop: latency there is queueing at the
ceiling). `--paced-rate` (80,000 unless 0) adds a run of Aisle at about that many events/s (each
connection pausing between requests; the pause is found by short runs first), where the p99 target
applies.

Needs `wrk` (Debian package `wrk`; installed with apt-get when missing). Prints one JSON document;
copy the figures into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.kill9_support import prepare_site  # noqa: E402
from tests.servers import RedisServer, free_port  # noqa: E402

LUA = ROOT / "bench" / "events.lua"
EVENTS_PER_BATCH = 50


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "wrk"], check=True, env={**os.environ,
                   "DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
    return shutil.which("wrk")


def wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the server and its events flusher process)."""
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except FileNotFoundError:
            continue
        pending.extend(int(child) for child in children)
    return tree


def tree_files(pid: int, name: str) -> list[str]:
    """``/proc/<member>/<name>`` of each process of ``pid``'s tree still running."""
    texts = []
    for member in process_tree(pid):
        try:
            texts.append(Path(f"/proc/{member}/{name}").read_text())
        except FileNotFoundError:
            continue  # exited since the tree was listed
    return texts


class PeakMemory:
    """Samples the resident set of a process tree (the server) while the load runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        found = (re.search(r"VmRSS:\s+(\d+)", text) for text in tree_files(self.pid, "status"))
        return sum(int(match.group(1)) for match in found if match)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, self._rss())
            time.sleep(0.05)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time so far of a process tree (all threads of the server and its children)."""
    total = 0
    for text in tree_files(pid, "stat"):
        fields = text.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_wrk(
    wrk: str,
    base: str,
    path: str,
    *,
    seconds: int,
    connections: int,
    server_pid: int,
    pause_ms: int | None = None,
) -> dict:
    # The server's CPU time per request is the figure that least depends on what else the machine
    # runs: throughput and latency also measure the competition for the two cores.
    cpu_before = cpu_seconds(server_pid)
    env = {**os.environ, **({"AISLE_BENCH_PAUSE_MS": str(pause_ms)} if pause_ms is not None else {})}
    output = subprocess.run(
        [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(LUA), base, "--", path],
        capture_output=True, text=True, check=True, env=env,
    ).stdout  # fmt: skip
    cpu = cpu_seconds(server_pid) - cpu_before
    fields = dict(re.findall(r"(\w+)=(\d+)", output.split("RESULT", 1)[1]))
    requests = int(fields["requests"])
    duration = int(fields["duration_us"]) / 1e6
    return {
        "requests": requests,
        "events": requests * EVENTS_PER_BATCH,
        "eventsPerSecond": round(requests * EVENTS_PER_BATCH / duration),
        "p50Ms": int(fields["p50_us"]) / 1000,
        "p99Ms": int(fields["p99_us"]) / 1000,
        "non2xx": int(fields["errors_status"]),
        "connectErrors": int(fields["errors_connect"]),
        "serverCpuUsPerRequest": round(cpu / requests * 1e6) if requests else None,
        "loadAverage": os.getloadavg()[0],
    }


def bench_bare(wrk: str, *, seconds: int, connections: int) -> dict:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bench.bare_app:app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--no-access-log"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}/docs")
        with PeakMemory(server.pid) as memory:
            result = run_wrk(wrk, f"http://127.0.0.1:{port}", "/api/v1/public/sites/x/events/batch",
                             seconds=seconds, connections=connections, server_pid=server.pid)  # fmt: skip
        result["peakRssMiB"] = round(memory.peak_kib / 1024, 1)
        return result
    finally:
        server.terminate()
        server.wait()


def count_stored(data_dir: Path) -> int:
    import duckdb

    glob = data_dir / "lake" / "events" / "*" / "*" / "*.parquet"
    return duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall()[0][0]


def bench_aisle(
    wrk: str, *, seconds: int, connections: int, log: str = "file", pause_ms: int | None = None
) -> dict:
    """``log``: ``redis`` runs the server on a Redis log (a durable redis-server of its own, which
    holds the hot state too) with an `aisle flush` beside it, as a scaled-out install runs each API
    process; ``redis-split`` keeps the hot state on a second Redis that does not sync."""
    data_dir = Path(tempfile.mkdtemp(prefix="aisle-bench-"))
    site_key = prepare_site(data_dir)
    port = free_port()
    env = {**os.environ, "AISLE_DATA_DIR": str(data_dir), "AISLE_VISITOR_BATCHES_PER_MINUTE": "1000000",
           "AISLE_LOG_JSON": "true"}  # fmt: skip
    aisle = str(Path(sys.executable).parent / "aisle")
    redis_servers: list[RedisServer] = []
    flusher = None
    if log.startswith("redis"):
        redis_servers.append(RedisServer(durable=True))
        env.update(AISLE_REDIS_URL=redis_servers[0].url, AISLE_DURABLE_LOG="redis")
        if log == "redis-split":  # the hot state on a Redis that answers before it syncs
            redis_servers.append(RedisServer())
            env.update(AISLE_LOG_REDIS_URL=redis_servers[0].url, AISLE_REDIS_URL=redis_servers[1].url)
        flusher = subprocess.Popen(
            [aisle, "flush"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    server = subprocess.Popen(
        [aisle, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}/api/v1/health")
        with PeakMemory(server.pid) as memory:
            result = run_wrk(wrk, f"http://127.0.0.1:{port}", f"/api/v1/public/sites/{site_key}/events/batch",
                             seconds=seconds, connections=connections, server_pid=server.pid,
                             pause_ms=pause_ms)  # fmt: skip
        result["peakRssMiB"] = round(memory.peak_kib / 1024, 1)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        if flusher is not None:
            flusher.send_signal(signal.SIGTERM)  # its last flush takes what the stream still holds
            flusher.wait(timeout=300)
        for redis_server in redis_servers:
            redis_server.stop()
    result["storedEvents"] = count_stored(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    return result


def measured_pairs(wrk: str, *, seconds: int, connections: int, repeat: int, log: str) -> list[dict]:
    """``repeat`` pairs of runs, the bare endpoint first in odd pairs and Aisle first in even ones: this
    VM's speed drifts by a third over minutes, and a ratio from one pair can be a drift between its two
    runs rather than a difference between the servers."""
    run = {
        "bare": lambda: bench_bare(wrk, seconds=seconds, connections=connections),
        "aisle": lambda: bench_aisle(wrk, seconds=seconds, connections=connections, log=log),
    }
    pairs = []
    for n in range(repeat):
        order = ("bare", "aisle") if n % 2 == 0 else ("aisle", "bare")
        pair = {name: run[name]() for name in order}
        pair["ratio"] = round(pair["aisle"]["eventsPerSecond"] / pair["bare"]["eventsPerSecond"], 3)
        pairs.append(pair)
    return pairs


def paced(wrk: str, *, rate: int, seconds: int, connections: int, log: str) -> dict:
    """Aisle at about ``rate`` events/s: the longest whole-millisecond pause whose short run still
    reaches the rate (wrk pauses in whole milliseconds), then a measured run with it."""
    cycle_ms = connections * EVENTS_PER_BATCH * 1000 / rate  # pause + latency per connection
    pause = max(0, int(cycle_ms - 2))
    tries = []
    while True:
        trial = bench_aisle(wrk, seconds=5, connections=connections, log=log, pause_ms=pause)
        tries.append({"pauseMs": pause, "eventsPerSecond": trial["eventsPerSecond"]})
        if trial["eventsPerSecond"] >= rate or pause == 0 or len(tries) == 5:
            break
        pause -= 1
    result = bench_aisle(wrk, seconds=seconds, connections=connections, log=log, pause_ms=pause)
    return {"targetEventsPerSecond": rate, "pauseMs": pause, "calibration": tries, **result}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--repeat", type=int, default=1, help="Pairs of runs; with more than one, medians too."
    )
    parser.add_argument(
        "--log", choices=("file", "redis", "redis-split"), default="file",
        help="Aisle's durable log: files in the data directory, or a Redis Stream (a durable "
        "redis-server started for the run, and `aisle flush` beside the server; redis-split: the hot "
        "state on a second redis-server that does not sync).",
    )  # fmt: skip
    parser.add_argument(
        "--paced-rate",
        type=int,
        default=80_000,
        help="Also run Aisle paced at about this many events/s, where the p99 target applies (latency at "
        "a rate; default 80000, the target rate; 0: skip).",
    )
    args = parser.parse_args()
    wrk = ensure_wrk()
    pairs = measured_pairs(
        wrk, seconds=args.seconds, connections=args.connections, repeat=max(1, args.repeat), log=args.log
    )
    report = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": " ".join(["bench/ingest_bench.py", *sys.argv[1:]]),
        "batchSize": EVENTS_PER_BATCH,
        **pairs[0],
    }  # fmt: skip
    if len(pairs) > 1:
        report["pairs"] = pairs
        report["median"] = {
            "bareEventsPerSecond": statistics.median(p["bare"]["eventsPerSecond"] for p in pairs),
            "aisleEventsPerSecond": statistics.median(p["aisle"]["eventsPerSecond"] for p in pairs),
            "aisleP99Ms": statistics.median(p["aisle"]["p99Ms"] for p in pairs),
            "ratio": statistics.median(p["ratio"] for p in pairs),
        }
    if args.paced_rate:
        report["paced"] = paced(
            wrk, rate=args.paced_rate, seconds=args.seconds, connections=args.connections, log=args.log
        )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
