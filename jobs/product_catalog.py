"""Job: merge the products each site's events and order lines name into its catalog
(``queries.product_catalog.sync_seen_products``), so that the product routes only read the catalog.

The scheduler runs it on its clock (``INTERVAL_SECONDS``, and once as it starts) and after every
explicit ``Ingest.flush()``: a row flushed by hand is in the catalog when the flush returns, one the
background flushers wrote within ``INTERVAL_SECONDS``. Each run reads only what arrived since the
site's last one, and runs of one site never overlap."""

from __future__ import annotations

from queries.product_catalog import sync_seen_products
from warehouse.config_store import sites
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine

JOB_ID = "product-catalog"
INTERVAL_SECONDS = 10.0


def sync_product_catalogs(store: ConfigStore, engine: Engine) -> dict[str, int]:
    """Merge what every site's product events and order lines brought since the last run into its
    catalog; answers the number of products added, by site id."""
    with store.connect() as conn:
        every = sites.list_all(conn)
    return {site["id"]: sync_seen_products(store, engine, site=site) for site in every}
