"""Real servers for tests: the Aisle app over loopback HTTP, redis-server and PostgreSQL."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class LiveServer:
    """Runs an ASGI app with uvicorn in a thread, on a free loopback port."""

    def __init__(self, app) -> None:
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *_exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class RedisServer:
    """``durable``: an append-only file synced before every answer, as the Redis log requires."""

    def __init__(self, *, durable: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed; scripts/test.sh installs it")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="aisle-redis-")
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
        )
        self.command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence,
                        "--dir", self.dir]  # fmt: skip
        self.start()

    def start(self) -> None:
        """Start the server (again, after ``kill``: on the same port and files)."""
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def kill(self) -> None:
        """``kill -9``: whatever Redis had not written to its files is gone."""
        self.process.kill()
        self.process.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def _pg_bindir() -> Path:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        found = shutil.which("initdb")
        if not found:
            raise RuntimeError("PostgreSQL is not installed; scripts/test.sh installs it")
        return Path(found).parent
    return Path(candidates[-1]).parent


class PostgresServer:
    """A throwaway cluster in a temp dir. PostgreSQL refuses to run as root, so as root it runs as
    the `postgres` system user that Debian's package creates."""

    def __init__(self) -> None:
        bindir = _pg_bindir()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="aisle-pg-"))
        self.data = self.dir / "data"
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self._run([str(bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "aisle", "-E", "UTF8"])
        self.bindir = bindir
        self.resume()

    def _run(self, args: list[str]) -> None:
        subprocess.run(self.prefix + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://aisle@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def pause(self) -> None:
        """Stop the server as a crash would, keeping its data (``resume`` starts it again)."""
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])

    def resume(self) -> None:
        self._run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-t", "60",
             "-o", f"-p {self.port} -h 127.0.0.1 -k {self.dir} -F", "start"]
        )  # fmt: skip

    def _processes(self) -> list[int]:
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout
        return [postmaster, *map(int, children.split())]

    def stall(self) -> None:
        """Stop every server process without closing a connection: the kernel keeps them open and
        nothing answers (a hung database, not a refusing one)."""
        for pid in self._processes():
            os.kill(pid, signal.SIGSTOP)

    def unstall(self) -> None:
        for pid in self._processes():
            os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        subprocess.run(
            self.prefix + [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        shutil.rmtree(self.dir, ignore_errors=True)
