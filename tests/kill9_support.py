"""A data directory with a verified site, made without the server (kill -9 test, benchmarks)."""

from __future__ import annotations

from pathlib import Path


def prepare_site(data_dir: Path, database_url: str | None = None) -> str:
    """A verified site for `shop.example.com`; its site key. ``database_url``: the config store, when
    it is not the data directory's SQLite file."""
    from aisle.settings import Settings
    from api.auth.service import create_user
    from api.sites.tracking_config import default_tracking_config
    from warehouse.config_store import sites
    from warehouse.config_store.store import create_store_engine, migrate

    settings = Settings(data_dir=data_dir, database_url=database_url)
    settings.prepare_data_dir()
    store = create_store_engine(settings.resolved_database_url)
    migrate(store)
    user = create_user(store, email="ops@example.com", password="correct horse battery")
    with store.begin() as conn:
        site = sites.create(
            conn, organization_id=user["organization_id"], name="Shop", domain="shop.example.com",
            currency="EUR", timezone="UTC", tracking_config=default_tracking_config(), is_verified=True,
        )  # fmt: skip
    store.dispose()
    return site["site_key"]
