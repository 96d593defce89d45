"""Product identity: events name products by ``productItemCode``; analytics speak ``productId`` (uuid).
The id is derived from the site and the code, so the same code on the same site is always the same id,
events that arrive before the catalog still join, and no lookup table is needed to go either way
within a query's results."""

from __future__ import annotations

import uuid

# A fixed namespace for Aisle product ids (uuid5 of the project's name in the URL namespace).
PRODUCT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://aisle.dev/product")


def product_id_for(site_id: str | uuid.UUID, product_item_code: str) -> uuid.UUID:
    return uuid.uuid5(PRODUCT_NAMESPACE, f"{uuid.UUID(str(site_id))}:{product_item_code.strip()}")
