"""Product-feed import: CSV, JSON or JSON lines into a site's catalog, row by row, each bad row refused
with a stable code and a reason (the good ones are kept), and the import recorded for `feeds-summary`.

Columns (any case; `_`, `-` and spaces ignored) and their aliases, first one present wins:

- ``productItemCode`` (required): ``sku``, ``code``, ``itemCode``, ``stockCode``, ``id`` — the code events
  carry in ``metadata.productItemCode``; ``productId`` is derived from it, never read from a feed.
- ``name``: ``title``, ``productName``, ``description``.
- ``price``: ``unitPrice``; a decimal, or a Google-feed style ``"15.00 USD"``. ``currency``:
  ``currencyCode``; ISO-4217. A row without a currency is in the site currency.
- ``categories``: a list, or text with paths separated by ``|``; also ``categoryPath``, ``category``,
  ``productType``. A path reads ``Home > Kitchen``.
- ``stock``: ``quantity``, ``inventory``, ``stockQuantity``; a whole number, 0 or more.
- ``url``: ``link``, ``productUrl``; ``image``: ``imageUrl``, ``imageLink``; absolute http(s) or
  starting with ``/``.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ingest import json_text
from ingest.currency import normalise_currency
from warehouse.config_store import products
from warehouse.config_store.products import FeedProduct
from warehouse.config_store.sites import Site

FORMATS = ("csv", "json", "jsonl")
MAX_EXAMPLES = 100
MAX_CODE = 255
MAX_NAME = 500
MAX_URL = 2048
MAX_CATEGORIES = 20
MAX_CATEGORY = 500
MAX_PRICE = Decimal("1e18")

ALIASES: dict[str, tuple[str, ...]] = {
    "product_item_code": ("productitemcode", "sku", "code", "itemcode", "stockcode", "id"),
    "name": ("name", "title", "productname", "description"),
    "price": ("price", "unitprice"),
    "currency": ("currency", "currencycode"),
    "categories": ("categories", "categorypath", "category", "producttype"),
    "stock": ("stock", "quantity", "inventory", "stockquantity"),
    "url": ("url", "link", "producturl"),
    "image": ("image", "imageurl", "imagelink"),
}
_PRICE_WITH_CURRENCY = re.compile(r"^\s*(?:([A-Za-z]{3})\s+)?([-+0-9.eE]+)\s*(?:([A-Za-z]{3}))?\s*$")


class RowRefused(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass
class FeedSummary:
    format: str
    rows_read: int = 0
    accepted: int = 0
    created: int = 0
    updated: int = 0
    by_code: Counter = field(default_factory=Counter)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    import_id: str | None = None

    def refuse(self, row: int, code: str, reason: str) -> None:
        self.by_code[code] += 1
        if len(self.rejections) < MAX_EXAMPLES:
            self.rejections.append({"row": row, "code": code, "reason": reason})

    def stored_rejections(self) -> dict[str, Any]:
        return {"byCode": dict(self.by_code), "rows": self.rejections}

    def as_dict(self) -> dict[str, Any]:
        return {
            "importId": self.import_id,
            "format": self.format,
            "rowsRead": self.rows_read,
            "accepted": self.accepted,
            "created": self.created,
            "updated": self.updated,
            "rejected": sum(self.by_code.values()),
            "rejectedByCode": dict(self.by_code),
            "rejections": self.rejections,
        }


class FeedUnreadable(ValueError):
    """The feed as a whole cannot be read (not CSV with a header, not JSON, unknown format)."""


def detect_format(name: str | None, content_type: str | None = None) -> str:
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in ("text/csv", "application/csv"):
        return "csv"
    if kind in ("application/x-ndjson", "application/jsonl", "application/x-jsonlines"):
        return "jsonl"
    if kind == "application/json":
        return "json"
    lowered = (name or "").lower().removesuffix(".gz")
    for suffix, fmt in ((".csv", "csv"), (".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json")):
        if lowered.endswith(suffix):
            return fmt
    raise FeedUnreadable("cannot tell the feed's format; use csv, json or jsonl")


def read_feed(text: str, fmt: str) -> Iterator[tuple[int, Any]]:
    """(row number, raw row): the CSV line (the header is line 1), the JSON-lines line, or the position
    from 1 in a JSON array (also ``{"products": [...]}``)."""
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        try:
            if not reader.fieldnames:
                raise FeedUnreadable("the CSV feed has no header row")
            for row in reader:
                yield reader.line_num, row
        except csv.Error as exc:
            raise FeedUnreadable(f"the CSV feed cannot be read after line {reader.line_num}: {exc}") from exc
    elif fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    yield number, json_text.loads(line)
                except json_text.NotJson:
                    yield number, line
    elif fmt == "json":
        try:
            body = json_text.loads(text)
        except json_text.NotJson as exc:
            raise FeedUnreadable(f"the feed is not valid JSON: {exc}") from exc
        if isinstance(body, dict) and isinstance(body.get("products"), list):
            body = body["products"]
        if not isinstance(body, list):
            raise FeedUnreadable('a JSON feed is an array of products, or {"products": [...]}')
        yield from enumerate(body, start=1)
    else:
        raise FeedUnreadable(f"unknown feed format {fmt}; use one of {', '.join(FORMATS)}")


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", str(name)).lower()


def _pick(row: dict[str, Any], field_name: str) -> Any:
    for alias in ALIASES[field_name]:
        value = row.get(alias)
        if value is not None and value != "":
            return value
    return None


def _text(value: Any, *, what: str, limit: int, code: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowRefused(code, f"{what} must be text")
    text = str(value).strip()
    if len(text) > limit:
        raise RowRefused(code, f"{what} is longer than {limit} characters")
    return text or None


def _price(value: Any) -> tuple[Decimal | None, str | None]:
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowRefused("INVALID_PRICE", "price must be a decimal number such as 19.99")
    match = _PRICE_WITH_CURRENCY.match(str(value))
    if not match or (match.group(1) and match.group(3)):
        raise RowRefused(
            "INVALID_PRICE", f"price '{value}' is not a decimal number such as 19.99 or '19.99 EUR'"
        )
    try:
        amount = Decimal(match.group(2))
    except InvalidOperation:
        raise RowRefused("INVALID_PRICE", f"price '{value}' is not a decimal number such as 19.99") from None
    if not amount.is_finite() or amount < 0 or amount >= MAX_PRICE:
        raise RowRefused("INVALID_PRICE", f"price '{value}' must be 0 or more (and below 10^18)")
    if amount.as_tuple().exponent < -6:  # type: ignore[operator]
        raise RowRefused("INVALID_PRICE", f"price '{value}' has more than 6 decimals")
    return amount, match.group(1) or match.group(3)


def _currency(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return normalise_currency(value)
    except ValueError as exc:
        raise RowRefused("CURRENCY_NOT_ISO4217", str(exc)) from None


def _categories(value: Any) -> list[str] | None:
    if value is None:
        return None
    items = value.split("|") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise RowRefused("INVALID_CATEGORIES", "categories must be a list of paths or text such as 'A > B|C'")
    paths = [" > ".join(p.strip() for p in i.split(">")) for i in items if i.strip()]
    if len(paths) > MAX_CATEGORIES or any(len(p) > MAX_CATEGORY for p in paths):
        raise RowRefused(
            "INVALID_CATEGORIES", f"at most {MAX_CATEGORIES} categories of {MAX_CATEGORY} characters each"
        )
    return list(dict.fromkeys(paths))


def _stock(value: Any) -> int | None:
    if value is None:
        return None
    try:
        number = Decimal(str(value).strip()) if not isinstance(value, bool) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite() or number != number.to_integral() or number < 0:
        raise RowRefused("INVALID_STOCK", f"stock '{value}' must be a whole number, 0 or more")
    if number > 2**31 - 1:
        raise RowRefused("INVALID_STOCK", f"stock '{value}' is too large")
    return int(number)


def _link(value: Any, *, what: str) -> str | None:
    text = _text(value, what=what, limit=MAX_URL, code="INVALID_URL")
    if text is not None and not text.lower().startswith(("http://", "https://", "/")):
        raise RowRefused("INVALID_URL", f"{what} '{text[:80]}' must start with http://, https:// or /")
    return text


def parse_row(raw: Any) -> FeedProduct:
    """One feed row as a product, or RowRefused with the reason."""
    if not isinstance(raw, dict):
        raise RowRefused("ROW_NOT_OBJECT", "each product must be an object with productItemCode")
    row = {_key(k): v for k, v in raw.items() if k is not None}
    code = _text(
        _pick(row, "product_item_code"), what="productItemCode", limit=MAX_CODE, code="INVALID_PRODUCT_CODE"
    )
    if not code:
        hint = " (productId is derived from it, not read)" if "productid" in row else ""
        raise RowRefused("MISSING_PRODUCT_CODE", f"each product needs productItemCode{hint}")
    price, price_currency = _price(_pick(row, "price"))
    currency = _currency(_pick(row, "currency"))
    price_currency = _currency(price_currency)
    if currency and price_currency and currency != price_currency:
        raise RowRefused("CURRENCY_CONFLICT", f"price is in {price_currency} but currency says {currency}")
    return FeedProduct(
        product_item_code=code,
        name=_text(_pick(row, "name"), what="name", limit=MAX_NAME, code="INVALID_NAME"),
        price=price,
        currency=currency or price_currency,
        categories=_categories(_pick(row, "categories")),
        stock=_stock(_pick(row, "stock")),
        url=_link(_pick(row, "url"), what="url"),
        image=_link(_pick(row, "image"), what="image"),
    )


def import_feed(
    store: Engine,
    *,
    site: Site,
    text: str,
    fmt: str,
    source: str,
    file_name: str | None = None,
    created_by: str | None = None,
) -> FeedSummary:
    """Validate every row, store the good ones (in one transaction) and record the import. A product
    code given twice in one feed keeps its first row; later ones are refused (`DUPLICATE_PRODUCT_CODE`).
    Raises FeedUnreadable when the feed as a whole cannot be read (nothing is stored then)."""
    summary = FeedSummary(format=fmt)
    kept: dict[str, tuple[int, FeedProduct]] = {}
    for number, raw in read_feed(text, fmt):
        summary.rows_read += 1
        try:
            item = parse_row(raw)
        except RowRefused as refused:
            summary.refuse(number, refused.code, refused.reason)
            continue
        first = kept.get(item.product_item_code)
        if first is not None:
            summary.refuse(
                number,
                "DUPLICATE_PRODUCT_CODE",
                f"productItemCode '{item.product_item_code}' was already given in row {first[0]}",
            )
            continue
        kept[item.product_item_code] = (number, item)
    rows = [item for _, item in kept.values()]
    with store.begin() as conn:
        summary.created, summary.updated = products.upsert_feed(
            conn, site_id=site["id"], site_currency=site["currency"], rows=rows
        )
        summary.accepted = len(rows)
        record = products.record_import(
            conn,
            site_id=site["id"],
            source=source,
            format=fmt,
            file_name=file_name,
            rows_read=summary.rows_read,
            accepted=summary.accepted,
            created_products=summary.created,
            rejections=summary.stored_rejections(),
            created_by=created_by,
        )
    summary.import_id = record["id"]
    return summary


def import_feed_file(store: Engine, *, site: Site, path: Path, fmt: str = "auto") -> FeedSummary:
    """``import_feed`` over a file (``.gz`` accepted), its format from the name unless given."""
    fmt = detect_format(path.name) if fmt == "auto" else fmt
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FeedUnreadable(f"{path.name} is not UTF-8 text") from exc
    return import_feed(store, site=site, text=text, fmt=fmt, source="cli", file_name=path.name)
