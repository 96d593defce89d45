"""The `aisle` command line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Aisle: storefront personalization and analytics.", no_args_is_help=True)
admin = typer.Typer(help="Operator commands for users and organisations.", no_args_is_help=True)
app.add_typer(admin, name="admin")

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (config store, lake, outbox). Env: AISLE_DATA_DIR."),
]


def _settings(data_dir: Path | None):
    if data_dir is not None:
        os.environ["AISLE_DATA_DIR"] = str(data_dir)
    from aisle.settings import Settings

    settings = Settings()
    settings.prepare_data_dir()
    return settings


def _store(data_dir: Path | None):
    from warehouse.catalog.store import create_store_engine, migrate

    settings = _settings(data_dir)
    store = create_store_engine(settings.resolved_database_url)
    migrate(store)
    return settings, store


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: DataDir = None,
) -> None:
    """Run the HTTP service. Config store: AISLE_DATABASE_URL (SQLite in the data dir by default);
    hot state: AISLE_REDIS_URL (in process by default)."""
    import uvicorn

    settings = _settings(data_dir)
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


@app.command()
def demo(data_dir: DataDir = None) -> None:
    """Create (or refresh) the demo organisation, its verified site and its login; prints them as JSON."""
    from aisle.demo import load_demo

    _, store = _store(data_dir)
    typer.echo(json.dumps(load_demo(store, data_dir=_settings(data_dir).data_dir), indent=2))


@app.command("import")
def import_(
    file: Annotated[
        Path, typer.Argument(help="CSV, JSON lines or Parquet file (.gz accepted for text).", exists=True)
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
    data_dir: DataDir = None,
) -> None:
    """Load events or orders through the same validation as the API; prints a JSON summary with
    rejected rows by reason. Run it while `aisle serve` is stopped (one writer per data dir)."""
    from tqdm import tqdm

    from ingest.importer import import_file
    from ingest.service import DataDirBusy, Ingest
    from warehouse.catalog import sites

    if kind not in ("auto", "events", "orders"):
        raise typer.BadParameter("kind must be events, orders or auto")
    settings, store = _store(data_dir)
    with store.connect() as conn:
        record = sites.get(conn, site_id=site)
    if record is None:
        typer.echo(f"error: no site with id {site}", err=True)
        raise typer.Exit(1)
    try:
        ingest = Ingest(data_dir=settings.data_dir)
    except DataDirBusy as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    try:
        ingest.start()
        with tqdm(unit=" rows", desc=f"importing {file.name}", file=sys.stderr, disable=None) as bar:
            summary = import_file(
                ingest, site=record, path=file, kind=kind, fmt=format, preset=preset, progress=bar.update
            )
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    finally:
        ingest.stop()
    typer.echo(json.dumps(summary.as_dict(), indent=2))


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
    _, store = _store(data_dir)
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
    from warehouse.catalog import organizations

    if status not in organizations.SUBSCRIPTION_STATUSES:
        raise typer.BadParameter(f"status must be one of {', '.join(organizations.SUBSCRIPTION_STATUSES)}")
    _, store = _store(data_dir)
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
