"""The `aisle` command line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from warehouse.config_store.sites import Site

app = typer.Typer(help="Aisle: storefront personalization and analytics.", no_args_is_help=True)
admin = typer.Typer(help="Operator commands for users and organisations.", no_args_is_help=True)
app.add_typer(admin, name="admin")

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (config store, lake, outbox). Env: AISLE_DATA_DIR."),
]


def _settings(data_dir: Path | None, *, prepare: bool = True):
    """The settings, with the data directory made unless ``prepare`` is false (a command that may
    refuse to start makes it only once it will start)."""
    if data_dir is not None:
        os.environ["AISLE_DATA_DIR"] = str(data_dir)
    from pydantic import ValidationError

    from aisle.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        messages = "; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors())
        typer.echo(f"error: settings: {messages}", err=True)
        raise typer.Exit(2) from exc
    if prepare:
        settings.prepare_data_dir()
    return settings


def _store(data_dir: Path | None, *, existing: bool = False):
    """The settings and the migrated config store. ``existing``: for a command that reads what an
    install holds (its sites, its lake), refuse a data directory that does not exist yet rather
    than make an empty one (a mistyped --data-dir)."""
    from warehouse.config_store.store import create_store_engine, migrate

    settings = _settings(data_dir, prepare=False)
    # With the default SQLite store inside it, a new data directory holds no site to read.
    if existing and not settings.database_url and not settings.data_dir.is_dir():
        typer.echo(
            f"error: no Aisle data directory at {settings.data_dir} (`aisle serve` or `aisle demo` make one)",
            err=True,
        )
        raise typer.Exit(2)
    settings.prepare_data_dir()
    store = create_store_engine(settings.resolved_database_url)
    migrate(store)
    return settings, store


def _refused(exc: Exception) -> None:
    """End the command with one line: why the write path cannot start here."""
    import redis

    message = f"Redis does not answer: {exc}" if isinstance(exc, redis.RedisError) else str(exc)
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2) from exc


def _write_path_refusals() -> tuple[type[Exception], ...]:
    import redis

    from ingest.service import DataDirBusy
    from ingest.stream_log import RedisLogRefused

    return DataDirBusy, RedisLogRefused, redis.RedisError


def _site(store: Engine, site_id: str) -> Site:
    """The site, or exit 1 with an error when there is none with that id."""
    from api.deps import canonical_site_id
    from api.errors import AppError
    from warehouse.config_store import sites

    try:
        canonical = canonical_site_id(site_id)
    except AppError as refused:
        typer.echo(f"error: {refused.message}", err=True)
        raise typer.Exit(1) from None
    with store.connect() as conn:
        record = sites.get(conn, site_id=canonical)
    if record is None:
        typer.echo(f"error: no site with id {site_id}", err=True)
        raise typer.Exit(1)
    return record


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: DataDir = None,
) -> None:
    """Run the HTTP service. Config store: AISLE_DATABASE_URL (SQLite in the data dir by default);
    hot state: AISLE_REDIS_URL (in process by default); durable log: AISLE_DURABLE_LOG (files in the
    data dir by default; `redis` for many servers on one data dir, with one `aisle flush`)."""
    import uvicorn

    from ingest.service import check_can_start

    settings = _settings(data_dir, prepare=False)
    try:
        # On a Redis log the servers only accept; `aisle flush` writes the lake (as in create_app).
        check_can_start(
            settings.data_dir, settings.stream_url, flush_in_background=settings.stream_url is None
        )
    except _write_path_refusals() as exc:
        _refused(exc)
    _check_can_listen(host, port)
    settings.prepare_data_dir()
    os.environ.setdefault("AISLE_PUBLIC_URL", f"http://{host}:{port}")
    typer.echo(
        f"Aisle listening on http://{host}:{port}/api/v1 (docs at /api/v1/docs), data in {settings.data_dir}"
    )
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
    )


def _check_can_listen(host: str, port: int) -> None:
    """Exit with one clear line when the address is taken, before the app starts its engine (a bind
    failing inside uvicorn ends the process with the engine's teardown noise after the error)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def flush(data_dir: DataDir = None) -> None:
    """Move the Redis log to the lake and compact it (AISLE_DURABLE_LOG=redis with AISLE_REDIS_URL):
    one per data directory, beside any number of `aisle serve`. Stops on SIGTERM or Ctrl-C, after a
    last flush."""
    import signal
    import threading

    from jobs.lake_writer import NotARedisLog, check_can_run, run
    from warehouse.config_store.store import create_store_engine, migrate

    settings = _settings(data_dir, prepare=False)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        # Set from a thread of its own: the main thread may hold the event's lock inside
        # ``stop.wait``, and setting it in the handler would wait for that lock forever.
        signal.signal(signum, lambda *_: threading.Thread(target=stop.set).start())
    refusals: tuple[type[Exception], ...] = (NotARedisLog, *_write_path_refusals())
    try:
        check_can_run(settings)  # before anything is made in a data directory it may not write
        settings.prepare_data_dir()
        migrate(create_store_engine(settings.resolved_database_url))
        run(settings, stop)
    except refusals as exc:
        _refused(exc)


@app.command()
def demo(data_dir: DataDir = None) -> None:
    """Create (or refresh) the demo organisation, its verified sites and its login; prints them as JSON:
    first the sites with traffic, each with its role, then the empty GBP shop for `aisle import`."""
    from aisle.demo import load_demo

    settings, store = _store(data_dir)
    typer.echo(
        json.dumps(load_demo(store, data_dir=settings.data_dir, stream_url=settings.stream_url), indent=2)
    )


@app.command("import")
def import_(
    file: Annotated[
        Path,
        typer.Argument(
            help="CSV, JSON lines or Parquet file (.gz accepted for text).", exists=True, dir_okay=False
        ),
    ],
    site: Annotated[str, typer.Option("--site", help="Site id (uuid) the rows belong to.")],
    kind: Annotated[
        str, typer.Option(help="events, orders, or auto (orders when rows have orderId).")
    ] = "auto",
    format: Annotated[
        str, typer.Option("--format", help="csv, jsonl, parquet or auto (from the name).")
    ] = "auto",
    preset: Annotated[
        str | None, typer.Option(help="Map a known data set: online-retail (UCI Online Retail order lines).")
    ] = None,
    products: Annotated[
        bool,
        typer.Option(
            "--products",
            help="A product feed (CSV, JSON or JSON lines) into the site's catalog instead of events or orders.",
        ),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Load events or orders through the same validation as the API; prints a JSON summary with
    rejected rows by reason. Run it while `aisle serve` is stopped (one writer per data dir), or at
    any time on a Redis log (AISLE_DURABLE_LOG=redis), where `aisle flush` moves the rows. With
    --products, load a product feed into the catalog (as POST /analytics/product/:siteId/feed does);
    that needs no lake and may run beside `aisle serve`."""
    if products:
        _import_products(file, site=site, format=format, data_dir=data_dir)
        return
    from tqdm import tqdm

    from ingest.importer import import_file
    from ingest.service import Ingest

    if kind not in ("auto", "events", "orders"):
        raise typer.BadParameter("kind must be events, orders or auto")
    settings, store = _store(data_dir, existing=True)
    record = _site(store, site)
    try:
        # On a Redis log the rows go where the servers' go, and the install's `aisle flush` moves them.
        ingest = Ingest(
            data_dir=settings.data_dir,
            stream_url=settings.stream_url,
            flush_in_background=settings.stream_url is None,
        )
    except _write_path_refusals() as exc:
        _refused(exc)
    try:
        ingest.start()
        # A preset counts what it makes of the rows (the online-retail preset: invoices).
        unit = " orders" if preset else " rows"
        with tqdm(unit=unit, desc=f"importing {file.name}", file=sys.stderr, disable=None) as bar:
            summary = import_file(
                ingest, site=record, path=file, kind=kind, fmt=format, preset=preset, progress=bar.update
            )
        if not ingest.writes_lake:
            typer.echo("The rows are in the Redis log; `aisle flush` moves them to the lake.", err=True)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except (OSError, EOFError) as exc:
        # A file that cannot be read to its end (not gzip, cut short, unreadable): the rows read
        # before are stored, and a run on the repaired file stores them once (ids are checked).
        typer.echo(f"error: cannot read {file.name} to its end: {exc}", err=True)
        raise typer.Exit(2) from exc
    finally:
        ingest.stop()
    typer.echo(json.dumps(summary.as_dict(), indent=2))


def _import_products(file: Path, *, site: str, format: str, data_dir: Path | None) -> None:
    from ingest.product_feed import FORMATS, FeedUnreadable, import_feed_file

    if format not in ("auto", *FORMATS):
        raise typer.BadParameter(f"a product feed's format is {', '.join(FORMATS)} or auto")
    _, store = _store(data_dir, existing=True)
    record = _site(store, site)
    try:
        summary = import_feed_file(store, site=record, path=file, fmt=format)
    except FeedUnreadable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(json.dumps(summary.as_dict(), indent=2))


def _parameter(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"--param takes name=value, not '{text}'")
    try:
        value = json.loads(raw)  # numbers, true/false, null, ["lists"]; anything else is text
    except ValueError:
        value = raw
    return name, value


@app.command()
def sql(
    query: Annotated[
        str, typer.Argument(help="One read-only query over the site views; '-' reads it from stdin.")
    ],
    site: Annotated[str, typer.Option("--site", help="Site id (uuid) whose views the query reads.")],
    dialect: Annotated[
        str, typer.Option(help="Input dialect (duckdb, postgres, bigquery, snowflake, spark, mysql, ...).")
    ] = "duckdb",
    format: Annotated[
        str, typer.Option("--format", help="table, json, csv or parquet (needs --output).")
    ] = "table",
    limit: Annotated[
        int, typer.Option(help="Most rows returned (at most 1,000,000).", min=1, max=1_000_000)
    ] = 10_000,
    timeout_ms: Annotated[
        int | None,
        typer.Option("--timeout-ms", help="Time limit (default AISLE_SQL_DEFAULT_TIMEOUT_MS).", min=100),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="A named parameter as name=value (JSON or text); repeat it."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", help="Write csv or parquet to this file.")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Run ad-hoc SQL over one site's views (events, orders, order_items, products, people, sessions,
    consents), with the same guard and sandbox as POST /api/v1/analytics/sql; prints a table. See docs/sql.md."""
    from itertools import chain

    from queries.adhoc.errors import SqlError
    from queries.adhoc.formats import csv_chunks, json_body, parquet_chunks, text_table
    from queries.adhoc.run import run_sql
    from queries.adhoc.sandbox import Sandbox
    from warehouse.config_store import sites
    from warehouse.lake import Lake

    if format not in ("table", "json", "csv", "parquet"):
        raise typer.BadParameter("format must be table, json, csv or parquet")
    if format == "parquet" and output is None:
        raise typer.BadParameter("parquet needs --output FILE")
    parameters = dict(_parameter(p) for p in param or [])
    text = sys.stdin.read() if query == "-" else query
    settings, store = _store(data_dir, existing=True)
    # What POST /analytics/sql answers for a malformed or unknown site, printed as the command's other
    # SQL errors are.
    from api.deps import canonical_site_id, site_access_denied
    from api.errors import AppError

    try:
        with store.connect() as conn:
            record = sites.get(conn, site_id=canonical_site_id(site))
        if record is None:
            raise site_access_denied()
    except AppError as refused:
        typer.echo(f"error: {refused.code}: {refused.message}", err=True)
        raise typer.Exit(2) from None
    sandbox = Sandbox(memory_limit=settings.sql_memory_limit, threads=settings.sql_threads)
    try:
        result = run_sql(
            Lake(settings.data_dir / "lake"),
            text,
            site_id=record["id"],
            dialect=dialect,
            parameters=parameters,
            limit=limit,
            timeout_ms=timeout_ms or settings.sql_default_timeout_ms,
            sandbox=sandbox,
        )
        if format == "table":
            typer.echo(text_table(result))
            return
        writer = {"json": lambda r: iter([json_body(r)]), "csv": csv_chunks, "parquet": parquet_chunks}[
            format
        ]
        chunks = writer(result)
        # Before the file is opened: a value no writer takes leaves no empty file behind.
        chunks = chain([next(chunks)], chunks)
    except SqlError as exc:
        position = exc.details.get("position")
        where = f" (line {position['line']}, column {position['column']})" if position else ""
        where = "" if where in exc.message else where
        typer.echo(f"error: {exc.code}: {exc.message}{where}", err=True)
        raise typer.Exit(2) from exc
    if output is not None:
        with output.open("wb") as sink:
            for chunk in chunks:
                sink.write(chunk)
        more = ", truncated" if result.truncated else ""
        typer.echo(f"{result.table.num_rows} rows written to {output}{more}", err=True)
    else:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        if format == "json":
            sys.stdout.buffer.write(b"\n")  # a shell prompt after the body starts on its own line
        sys.stdout.buffer.flush()


@admin.command("create-user")
def create_user(
    email: Annotated[str, typer.Option(help="Login e-mail.")],
    password: Annotated[str, typer.Option(help="Password (8 characters or more).")],
    name: Annotated[str | None, typer.Option(help="Display name.")] = None,
    platform_admin: Annotated[
        bool, typer.Option("--platform-admin", help="May administer every site.")
    ] = False,
    organization_id: Annotated[
        str | None, typer.Option(help="Join this organisation instead of creating one.")
    ] = None,
    role: Annotated[str, typer.Option(help="owner, admin, editor, analyst or viewer.")] = "owner",
    data_dir: DataDir = None,
) -> None:
    """Create a user (with its own organisation unless --organization-id); prints its ids as JSON."""
    from pydantic import EmailStr, TypeAdapter, ValidationError

    from api.auth.permissions import ROLES
    from api.auth.service import create_user as create
    from api.errors import AppError

    try:
        # The same rule as the login route: an address it refuses could never sign in.
        email = TypeAdapter(EmailStr).validate_python(email)
    except ValidationError as exc:
        raise typer.BadParameter(f"email: {exc.errors()[0]['msg']}") from exc
    if role not in ROLES:
        raise typer.BadParameter(f"role must be one of {', '.join(ROLES)}")
    if len(password) < 8:
        raise typer.BadParameter("password must have 8 characters or more")
    # Into an organisation an install holds: a mistyped --data-dir must not make an empty one.
    _, store = _store(data_dir, existing=organization_id is not None)
    try:
        user = create(
            store,
            email=email,
            password=password,
            name=name,
            organization_id=organization_id,
            role=role,
            is_platform_admin=platform_admin,
        )
    except AppError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(
        json.dumps(
            {
                "userId": user["id"],
                "organizationId": user["organization_id"],
                "email": user["email"],
                "role": user["role"],
                "isPlatformAdmin": user["is_platform_admin"],
            }
        )
    )


@admin.command("set-subscription")
def set_subscription(
    organization_id: Annotated[str, typer.Option(help="Organisation id.")],
    status: Annotated[str, typer.Option(help="active, trialing, past_due, canceled or unpaid.")],
    data_dir: DataDir = None,
) -> None:
    """Set an organisation's subscription status (public routes need active or trialing)."""
    from warehouse.config_store import organizations

    if status not in organizations.SUBSCRIPTION_STATUSES:
        raise typer.BadParameter(f"status must be one of {', '.join(organizations.SUBSCRIPTION_STATUSES)}")
    _, store = _store(data_dir, existing=True)
    with store.begin() as conn:
        if organizations.get(conn, organization_id=organization_id) is None:
            typer.echo("error: no such organisation", err=True)
            raise typer.Exit(1)
        organizations.update_subscription(
            conn, organization_id=organization_id, status=status, period_end=None
        )
    typer.echo(json.dumps({"organizationId": organization_id, "status": status}))


if __name__ == "__main__":
    app()
