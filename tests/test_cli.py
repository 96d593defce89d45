"""The `aisle` console script, run for real as subprocesses."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from aisle.cli import app
from aisle.settings import Settings
from api.auth.passwords import verify_password
from ingest.service import Ingest
from tests.servers import free_port, wait_for_port
from warehouse.config_store import organizations, sites, users
from warehouse.config_store.store import create_store_engine, migrate

# Runs the `aisle` console script as subprocesses (seconds each).
pytestmark = pytest.mark.slow

PASSWORD = "cli password 123"


def aisle_binary() -> str:
    beside_python = Path(sys.executable).parent / "aisle"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("aisle")
    if found is None:
        pytest.fail("the aisle console script is not installed (pip install -e .)")
    return found


def cli_env(**extra: str) -> dict[str, str]:
    """The parent's environment without AISLE_* settings, so only what a test passes reaches the CLI."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AISLE_")}
    env.update(COLUMNS="200", NO_COLOR="1", AISLE_LOG_JSON="true", **extra)
    return env


def run_aisle(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [aisle_binary(), *args], capture_output=True, text=True, timeout=timeout, env=env or cli_env()
    )


def listed_commands(help_text: str) -> set[str]:
    """Command names from the Commands section of click's or rich's help (`│ name  text`)."""
    section = help_text.split("Commands", 1)[1]
    return {m.group(1) for m in re.finditer(r"^[│ ]{1,3}([a-z][a-z-]*)\s{2,}\S", section, re.MULTILINE)}


def sqlite_store(data_dir: Path):
    return create_store_engine(f"sqlite:///{data_dir / 'aisle.db'}")


def create_user(data_dir: Path | None, email: str, *extra: str, env=None) -> subprocess.CompletedProcess:
    args = ["admin", "create-user", "--email", email, "--password", PASSWORD, *extra]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    return run_aisle(*args, env=env)


@contextmanager
def serving(data_dir: Path, logs: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    port = free_port()
    out, err = open(logs / "serve.out", "w"), open(logs / "serve.err", "w")  # noqa: SIM115
    process = subprocess.Popen(
        [aisle_binary(), "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=out, stderr=err, env=env or cli_env(),
    )  # fmt: skip
    try:
        try:
            wait_for_port(port, timeout=30)
        except RuntimeError:
            process.poll()
            pytest.fail(
                f"aisle serve did not listen (exit {process.returncode}): {(logs / 'serve.err').read_text()}"
            )
        yield f"http://127.0.0.1:{port}/api/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        out.close()
        err.close()


# --- help ----------------------------------------------------------------------------------------------


def test_help_lists_every_command():
    result = run_aisle("--help")
    assert result.returncode == 0, result.stderr
    assert {"serve", "demo", "admin"} <= listed_commands(result.stdout)
    assert "Usage: aisle" in result.stdout

    admin = run_aisle("admin", "--help")
    assert admin.returncode == 0, admin.stderr
    assert {"create-user", "set-subscription"} <= listed_commands(admin.stdout)


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (["serve"], ["--host", "--port", "--data-dir"]),
        (["demo"], ["--data-dir"]),
        (["admin", "create-user"], ["--email", "--password", "--platform-admin", "--data-dir"]),
    ],
)
def test_each_command_documents_its_options(command, options):
    result = run_aisle(*command, "--help")
    assert result.returncode == 0, result.stderr
    for option in options:
        assert option in result.stdout


def test_no_arguments_shows_help_and_an_unknown_command_fails():
    bare = run_aisle()
    assert "Usage: aisle" in bare.stdout + bare.stderr
    unknown = run_aisle("no-such-command")
    assert unknown.returncode == 2
    assert "no-such-command" in unknown.stderr


# --- admin create-user ---------------------------------------------------------------------------------


def test_create_user_prints_ids_and_refuses_duplicates_and_short_passwords(tmp_path):
    data_dir = tmp_path / "data"
    result = create_user(data_dir, "Admin@Example.com", "--platform-admin", "--name", "Root")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert set(printed) == {"userId", "organizationId", "email", "role", "isPlatformAdmin"}
    assert printed["email"] == "admin@example.com"
    assert printed["role"] == "owner"
    assert printed["isPlatformAdmin"] is True

    duplicate = create_user(data_dir, "ADMIN@example.com")
    assert duplicate.returncode == 1
    assert duplicate.stdout == ""
    assert "error: An account with this e-mail already exists" in duplicate.stderr

    short = run_aisle(
        "admin",
        "create-user",
        "--email",
        "short@example.com",
        "--password",
        "1234567",
        "--data-dir",
        str(data_dir),
    )
    assert short.returncode == 2
    assert "password must have 8 characters or more" in short.stderr

    store = sqlite_store(data_dir)
    try:
        with store.connect() as conn:
            user = users.get(conn, user_id=printed["userId"])
            org = organizations.get(conn, organization_id=printed["organizationId"])
            assert users.get_by_email(conn, email="short@example.com") is None
    finally:
        store.dispose()
    assert user["email"] == "admin@example.com"
    assert user["name"] == "Root"
    assert user["is_platform_admin"] is True
    assert user["organization_id"] == printed["organizationId"]
    assert user["email_verified_at"] is not None
    assert verify_password(user["password_hash"], PASSWORD) is True
    assert org["name"] == "Root's organisation"


@pytest.mark.parametrize(
    ("email", "reason"),
    [
        ("not-an-email", "An email address must have an @-sign"),
        ("ops@aisle.local", "special-use or reserved name"),
    ],
)
def test_create_user_refuses_addresses_the_login_route_would_refuse(tmp_path, email, reason):
    data_dir = tmp_path / "data"
    result = create_user(data_dir, email)
    assert result.returncode == 2
    assert result.stdout == ""
    assert reason in result.stderr
    assert not (data_dir / "aisle.db").exists()  # refused before touching the store


def test_create_user_without_platform_admin_and_into_an_existing_organisation(tmp_path):
    data_dir = tmp_path / "data"
    owner = json.loads(create_user(data_dir, "owner@example.com").stdout)
    assert owner["isPlatformAdmin"] is False
    member = create_user(
        data_dir, "member@example.com", "--organization-id", owner["organizationId"], "--role", "analyst"
    )
    assert member.returncode == 0, member.stderr
    member = json.loads(member.stdout)
    assert member["organizationId"] == owner["organizationId"]
    assert member["role"] == "analyst"

    bad_role = create_user(data_dir, "x@example.com", "--role", "emperor")
    assert bad_role.returncode == 2
    assert "role must be one of" in bad_role.stderr
    no_org = create_user(data_dir, "y@example.com", "--organization-id", "no-such-org")
    assert no_org.returncode == 1
    assert "error: No such organisation" in no_org.stderr


def test_data_dir_can_come_from_the_environment(tmp_path):
    data_dir = tmp_path / "from-env"
    result = create_user(None, "env@example.com", env=cli_env(AISLE_DATA_DIR=str(data_dir)))
    assert result.returncode == 0, result.stderr
    assert (data_dir / "aisle.db").is_file()


# --- demo ----------------------------------------------------------------------------------------------


def test_demo_is_idempotent_and_its_site_is_verified(tmp_path):
    data_dir = tmp_path / "data"
    first = run_aisle("demo", "--data-dir", str(data_dir))
    assert first.returncode == 0, first.stderr
    second = run_aisle("demo", "--data-dir", str(data_dir))
    assert second.returncode == 0, second.stderr
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    # The first run also loads the demo traffic, and says how much; the second loads nothing again.
    assert set(one.pop("loaded")) == {"Demo Shop EUR", "Demo Shop USD", "Demo Shop JPY"}
    assert one == two
    assert one["email"] == "demo@aisle.example"
    assert one["password"] == "aisle-demo-password"
    assert one["siteKey"].startswith("sk_")
    # The first site id printed is one with traffic, named by its role; the empty GBP shop comes after.
    first_site = re.search(r'"siteId": "([^"]+)"', first.stdout).group(1)
    assert first_site == one["sites"][0]["siteId"] and one["sites"][0]["name"] == "Demo Shop EUR"
    assert all("traffic" in s["role"] for s in one["sites"]) and "no traffic" in one["siteRole"]

    store = sqlite_store(data_dir)
    try:
        with store.connect() as conn:
            site = sites.get(conn, site_id=one["siteId"])
            org_sites = sites.list_for_organization(conn, organization_id=one["organizationId"])
            user = users.get_by_email(conn, email="demo@aisle.example")
    finally:
        store.dispose()
    assert [s["id"] for s in org_sites] == [one["siteId"], *(s["siteId"] for s in one["sites"])]
    assert all(s["is_verified"] for s in org_sites)
    assert site["site_key"] == one["siteKey"]
    assert (one["siteName"], one["siteCurrency"]) == (site["name"], "GBP")
    assert site["is_verified"] is True
    assert site["verified_at"] is not None
    assert site["domain"] == "localhost"
    assert user["id"] == one["userId"]
    assert verify_password(user["password_hash"], "aisle-demo-password") is True


# --- serve ---------------------------------------------------------------------------------------------


def login(base_url: str, email: str, password: str) -> dict:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        tokens = http.post("/auth/login", json={"email": email, "password": password})
        assert tokens.status_code == 200, tokens.text
        me = http.get("/auth/me", headers={"Authorization": f"Bearer {tokens.json()['accessToken']}"})
        assert me.status_code == 200, me.text
        wrong = http.post("/auth/login", json={"email": email, "password": password + "!"})
        assert wrong.status_code == 401
        return me.json()


def test_serve_answers_health_and_logs_in_a_user_created_by_the_cli(tmp_path):
    data_dir = tmp_path / "data"
    with serving(data_dir, tmp_path) as base_url:
        health = httpx.get(f"{base_url}/health", timeout=10)
        assert health.status_code == 200
        assert health.json()["checks"]["configStore"]["ok"] is True
        assert health.json()["checks"]["dataDir"]["detail"] == str(data_dir.resolve())
        assert health.json()["checks"]["eventsFlusher"]["detail"].endswith(", respawns: 0")

        # Created while the server runs, in the same data dir (the SQLite file is shared).
        created = create_user(data_dir, "operator@example.com", "--platform-admin")
        assert created.returncode == 0, created.stderr
        printed = json.loads(created.stdout)
        me = login(base_url, "operator@example.com", PASSWORD)

        # The demo credentials, as `aisle demo` prints them, open a session too.
        demo = run_aisle("demo", "--data-dir", str(data_dir))
        assert demo.returncode == 0, demo.stderr
        demo = json.loads(demo.stdout)
        demo_me = login(base_url, demo["email"], demo["password"])
    assert demo_me["id"] == demo["userId"]
    assert me["id"] == printed["userId"]
    assert me["organizationId"] == printed["organizationId"]
    assert me["isPlatformAdmin"] is True
    assert (data_dir / "aisle.db").is_file()
    assert "Aisle listening on http://127.0.0.1:" in (tmp_path / "serve.out").read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["import", "--site", "x", "FILE"],
        ["import", "--products", "--site", "x", "FILE"],
        ["sql", "SELECT 1", "--site", "x"],
        ["admin", "set-subscription", "--organization-id", "x", "--status", "active"],
        [
            "admin",
            "create-user",
            "--email",
            "a@shop.example.com",
            "--password",
            "secret-pass",
            "--organization-id",
            "x",
        ],
    ],
)
def test_commands_that_read_an_install_refuse_a_data_dir_that_does_not_exist(tmp_path, args):
    file = tmp_path / "events.csv"
    file.write_text("name,eventId,visitorId,sessionId\npage_view,e1,v1,s1\n")
    missing = tmp_path / "mistyped"
    args = [str(file) if a == "FILE" else a for a in args]
    result = run_aisle(*args, "--data-dir", str(missing), timeout=60)
    assert (result.returncode, result.stderr) == (
        2,
        f"error: no Aisle data directory at {missing} (`aisle serve` or `aisle demo` make one)\n",
    )
    assert not missing.exists()


def test_serve_refuses_a_busy_data_dir_in_one_line(tmp_path):
    data_dir = tmp_path / "data"
    holder = Ingest(data_dir=data_dir)  # a server already writes there
    try:
        result = run_aisle("serve", "--port", str(free_port()), "--data-dir", str(data_dir), timeout=60)
    finally:
        holder.stop()
    assert result.returncode == 2
    assert (
        result.stderr.startswith("error: another Aisle process writes to") and result.stderr.count("\n") == 1
    )
    assert "listening" not in result.stdout


def test_serve_refuses_a_taken_port_in_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_aisle("serve", "--port", str(port), "--data-dir", str(tmp_path / "data"), timeout=60)
    assert result.returncode == 1
    assert result.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert "listening" not in result.stdout


@pytest.mark.redis
@pytest.mark.parametrize("command", ["serve", "flush"])
def test_the_redis_log_refusals_are_one_line(tmp_path, redis_server, command):
    args = [command, "--data-dir", str(tmp_path / "data")] + (
        ["--port", str(free_port())] if command == "serve" else []
    )
    on = {"AISLE_DURABLE_LOG": "redis"}
    not_durable = run_aisle(*args, env=cli_env(**on, AISLE_REDIS_URL=redis_server.url), timeout=60)
    assert not_durable.returncode == 2
    assert not_durable.stderr.startswith(
        "error: the Redis log needs `appendonly yes` and `appendfsync always`"
    )
    assert not_durable.stderr.count("\n") == 1
    nobody = run_aisle(
        *args, env=cli_env(**on, AISLE_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"), timeout=60
    )
    assert nobody.returncode == 2
    assert nobody.stderr.startswith("error: Redis does not answer:") and nobody.stderr.count("\n") == 1
    assert not (tmp_path / "data").exists()  # a refused command makes nothing


@pytest.mark.redis
@pytest.mark.parametrize("command", ["serve", "flush"])
def test_a_data_dir_the_redis_log_does_not_feed_is_refused_and_left_as_it_was(
    tmp_path, redis_log_url, command
):
    Ingest(
        data_dir=tmp_path / "first", stream_url=redis_log_url, flush_in_background=False
    ).stop()  # binds the log
    other = tmp_path / "other"
    args = [command, "--data-dir", str(other)] + (["--port", str(free_port())] if command == "serve" else [])
    result = run_aisle(
        *args, env=cli_env(AISLE_DURABLE_LOG="redis", AISLE_REDIS_URL=redis_log_url), timeout=60
    )
    assert result.returncode == 2
    assert "every process of an install needs the same AISLE_DATA_DIR" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not other.exists()  # no config store, outbox or lock file in a directory it may not write


def test_serve_with_the_config_store_on_postgresql(tmp_path, postgres_url):
    env = cli_env(AISLE_DATABASE_URL=postgres_url)
    created = create_user(tmp_path / "cli-data", "pg-operator@example.com", env=env)
    assert created.returncode == 0, created.stderr
    printed = json.loads(created.stdout)

    data_dir = tmp_path / "serve-data"
    with serving(data_dir, tmp_path, env=env) as base_url:
        health = httpx.get(f"{base_url}/health", timeout=10)
        assert health.status_code == 200
        assert health.json()["checks"]["configStore"]["ok"] is True
        me = login(base_url, "pg-operator@example.com", PASSWORD)
    assert me["id"] == printed["userId"]
    assert me["isPlatformAdmin"] is False
    # Neither process fell back to SQLite.
    assert not (data_dir / "aisle.db").exists()
    assert not (tmp_path / "cli-data" / "aisle.db").exists()


def test_import_refuses_unreadable_files_with_a_message_not_a_traceback(tmp_path):
    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir)
    settings.prepare_data_dir()
    store = create_store_engine(settings.resolved_database_url)
    migrate(store)
    with store.begin() as conn:
        org = organizations.create(conn, name="Acme")
        site = sites.create(conn, organization_id=org["id"], name="Shop", domain="shop.example", currency="EUR",
                            timezone="UTC", tracking_config={})  # fmt: skip
    store.dispose()
    good = b'{"name": "scroll", "eventId": "e1", "visitorId": "v", "sessionId": "s"}\n' * 3
    (tmp_path / "not-gzip.jsonl.gz").write_bytes(good)
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(good)[:-10])
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "folder.jsonl").mkdir()

    def run(name: str):
        return CliRunner().invoke(
            app, ["import", "--site", site["id"], str(tmp_path / name), "--data-dir", str(data_dir)]
        )

    for name, says in [("not-gzip.jsonl.gz", "cannot read not-gzip.jsonl.gz to its end"),
                       ("cut.jsonl.gz", "cannot read cut.jsonl.gz to its end"),
                       ("empty.jsonl", "empty.jsonl holds no rows")]:  # fmt: skip
        result = run(name)
        assert result.exit_code == 2, (name, result.output)
        assert says in result.output and "Traceback" not in result.output, result.output
    folder = run("folder.jsonl")
    assert folder.exit_code == 2 and "is a directory" in folder.output
