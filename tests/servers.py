"""The Aisle app for tests: in process (no socket) or over loopback HTTP; redis-server and PostgreSQL."""

from __future__ import annotations

import contextlib
import glob
import math
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx
import uvicorn

# The address a loopback server sees: throttles and logs key on it, so in process it is the same.
LOOPBACK_CLIENT = ("127.0.0.1", 50000)
IN_PROCESS_URL = "http://127.0.0.1"


class InProcessApp:
    """Runs an ASGI app in this process as uvicorn would, without a socket: its lifespan once (startup
    on enter, shutdown on exit) and every request in the app's own event loop, in a thread.

    ``client()`` is an ordinary ``httpx.Client``. Request bodies are read whole before the app sees
    them and answers are read whole before the client does: tests of streaming, of the client's
    address or of anything between the socket and the app (uvicorn, h11) use ``LiveServer``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> InProcessApp:
        with contextlib.ExitStack() as stack:
            self.portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
            self._inbox_send, self._inbox = self.portal.call(_stream)  # to the app
            self._outbox, self._outbox_receive = self.portal.call(_stream)  # from the app
            self._lifespan = self.portal.start_task_soon(self._run_lifespan)
            self._exchange("lifespan.startup")
            stack.callback(self._exchange, "lifespan.shutdown")
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stack.close()

    async def _run_lifespan(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        try:
            await self.app(scope, self._inbox.receive, self._outbox.send)
        finally:
            await self._outbox.send(None)

    def _exchange(self, message: str) -> None:
        """Send a lifespan message and wait for the app's answer; a failure raises here."""
        self.portal.call(self._inbox_send.send, {"type": message})
        answer = self.portal.call(self._outbox_receive.receive)
        if answer is None:
            self._lifespan.result()
            raise RuntimeError(f"the app ended its lifespan instead of answering {message}")
        if answer["type"].endswith(".failed"):
            raise RuntimeError(f"{message} failed: {answer.get('message', '')}")

    def client(self, base_url: str = IN_PROCESS_URL) -> httpx.Client:
        return httpx.Client(transport=_PortalTransport(self.app, self.portal), base_url=base_url, timeout=30)


@contextlib.contextmanager
def in_process_client(app: Any) -> Iterator[httpx.Client]:
    """A client of the API (base URL ``/api/v1``) of ``app`` running in process."""
    with InProcessApp(app) as running, running.client(f"{IN_PROCESS_URL}/api/v1") as http:
        yield http


def _stream() -> tuple[Any, Any]:
    return anyio.create_memory_object_stream[Any](math.inf)


class _PortalTransport(httpx.BaseTransport):
    """A sync transport handing each request to httpx's ASGI transport in the app's event loop."""

    def __init__(self, app: Any, portal: anyio.from_thread.BlockingPortal) -> None:
        # An exception the app raises is a 500 to the client, as uvicorn answers it.
        self.asgi = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=LOOPBACK_CLIENT)
        self.portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()  # a streamed body becomes bytes, which the ASGI transport can send
        return self.portal.call(self._answer, request)

    async def _answer(self, request: httpx.Request) -> httpx.Response:
        response = await self.asgi.handle_async_request(request)
        body = await response.aread()
        return httpx.Response(
            response.status_code, headers=response.headers, stream=httpx.ByteStream(body), request=request
        )


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
        self.command = [
            binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            *persistence,
            "--dir",
            self.dir,
        ]
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
            [
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.dir / "log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-p {self.port} -h 127.0.0.1 -k {self.dir} -F",
                "start",
            ]
        )

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
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(self.dir, ignore_errors=True)
