"""Bulk import of events or orders from CSV, JSON lines or Parquet, through the same validation.

Presets map public data sets onto our order shape; ``online-retail`` reads the UCI "Online Retail"
order lines: one order per invoice, cancellations (`C…`) as refunds, bad-debt adjustments (`A…`) and
zero-value stock write-offs rejected with their own codes, never merged into revenue.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import itertools
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq

from ingest import json_text
from ingest.schemas import AMOUNT_TEXT, BatchResult
from ingest.service import Ingest
from ingest.validation import Context, Rejected, money
from warehouse.config_store.sites import Site

BATCH_ROWS = 2000
EXAMPLES_PER_REASON = 5
FORMATS = ("csv", "jsonl", "parquet")
JSON_COLUMNS = ("metadata", "consent", "items")


@dataclass
class ImportSummary:
    kind: str
    rows_read: int = 0  # a preset's: what it makes of the file's lines (the online-retail preset: invoices)
    lines_read: int | None = None  # a preset's: the file's lines
    stored: int = 0  # rows stored by this run (not the duplicates, which an earlier one stored)
    duplicates: int = 0
    # Of the orders stored: how many are sales and how many refunds or cancellations.
    refunds: int = 0
    rejected: Counter = field(default_factory=Counter)
    # The first rows rejected for each reason, with their line numbers (all would flood a terminal:
    # a real file may reject thousands of rows for one reason).
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, result: BatchResult, line_numbers: list[int]) -> None:
        self.stored += result.accepted - result.duplicates
        self.duplicates += result.duplicates
        for rejection in result.rejected:
            self.reject(rejection.code, f"line {line_numbers[rejection.index]}: {rejection.reason}")

    def reject(self, code: str, example: str) -> None:
        self.rejected[code] += 1
        shown = self.examples.setdefault(code, [])
        if len(shown) < EXAMPLES_PER_REASON:
            shown.append(example)

    def as_dict(self) -> dict[str, Any]:
        stored = (
            {"sales": self.stored - self.refunds, "refunds": self.refunds} if self.kind == "orders" else {}
        )
        return {
            "kind": self.kind,
            "rowsRead": self.rows_read,
            **({} if self.lines_read is None else {"linesRead": self.lines_read}),
            "stored": self.stored,
            **stored,
            "duplicates": self.duplicates,
            "rejected": dict(self.rejected),
            "rejectedTotal": sum(self.rejected.values()),
            "examples": self.examples,
        }


def detect_format(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    for suffix, fmt in (
        (".csv", "csv"),
        (".jsonl", "jsonl"),
        (".ndjson", "jsonl"),
        (".json", "jsonl"),
        (".parquet", "parquet"),
    ):
        if name.endswith(suffix):
            return fmt
    raise ValueError(f"cannot tell the format of {path.name}; pass --format csv, jsonl or parquet")


def _open_text(path: Path) -> io.TextIOBase:
    # utf-8-sig: a byte order mark at the start (Excel's "CSV UTF-8" writes one) is not part of the
    # first column's name or the first line's JSON.
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


# Files exported from databases often hold ids as integers; the API takes them as text.
ID_COLUMNS = ("eventId", "visitorId", "sessionId", "journeyId", "userId", "entityId", "orderId", "refundOf")


def _plain(value: Any) -> Any:
    """A Parquet cell as the API's JSON would carry it: decimals as text (exact), times as ISO 8601."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# The API's money fields (events' value; orders' totals; items' price).
MONEY_FIELDS = frozenset({"value", "total", "subtotal", "tax", "shipping", "discount", "price"})


def _money_as_text(field: pa.Field) -> pa.DataType:
    """``field``'s type with money held as a 32- or 16-bit float read as text instead: widened to a
    double, 0.1 becomes 0.10000000149..., past what a money number may carry; Arrow writes each such
    float as the shortest text that reads back as it (0.1)."""
    kind = field.type
    if pa.types.is_struct(kind):
        return pa.struct([child.with_type(_money_as_text(child)) for child in kind])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        make = pa.list_ if pa.types.is_list(kind) else pa.large_list
        return make(kind.value_field.with_type(_money_as_text(kind.value_field)))
    if field.name in MONEY_FIELDS and (pa.types.is_float32(kind) or pa.types.is_float16(kind)):
        return pa.string()
    return kind


def _api_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A file's row with its fields as the API takes them: integer ids as text, JSON columns decoded,
    empty cells absent."""
    for column in ID_COLUMNS:
        value = row.get(column)
        if isinstance(value, int) and not isinstance(value, bool):
            row[column] = str(value)
    for column in JSON_COLUMNS:
        value = row.get(column)
        if isinstance(value, str) and value.strip()[:1] in ("{", "["):
            with contextlib.suppress(json_text.NotJson):  # left as text; validation reports it
                row[column] = json_text.loads(value)
    return {k: v for k, v in row.items() if v not in ("", None)}


def read_rows(path: Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """(line or row number, row) pairs; a row that cannot be one (not JSON, more fields than the
    header) comes as (line number, (code, reason)), to be counted as rejected."""
    if fmt == "csv":
        with _open_text(path) as handle:
            reader = csv.DictReader(handle)
            for number, row in enumerate(reader, start=2):
                if None in row:  # DictReader files a row's extra fields under None
                    fields = len(reader.fieldnames or ()) + len(row[None])
                    yield (
                        number,
                        ("INVALID_ROW", f"has {fields} fields, the header {len(reader.fieldnames or ())}"),
                    )
                else:
                    yield number, row
    elif fmt == "jsonl":
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield number, json_text.loads(line)
                    except json_text.NotJson as exc:
                        yield number, ("INVALID_JSON", f"is not JSON: {exc}")
    elif fmt == "parquet":
        number = 0
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        exact = pa.schema([field.with_type(_money_as_text(field)) for field in schema])
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
            if exact != schema:
                batch = batch.cast(exact)
            for row in batch.to_pylist():
                number += 1
                yield number, _plain(row)
    else:
        raise ValueError(f"unknown format {fmt}; use one of {', '.join(FORMATS)}")


# --- the online-retail preset ---------------------------------------------------------------------

SHOP_ZONE = ZoneInfo("Europe/London")


# The file here has ISO-like times; the UCI repository's original spreadsheet export has US ones.
RETAIL_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%m/%d/%Y %H:%M")
RETAIL_COLUMNS = ("InvoiceNo", "StockCode", "Quantity", "UnitPrice", "InvoiceDate")


def _retail_time(text: str) -> str | None:
    """The invoice's time in UTC (the shop's clock is London's), or None when it is not a time."""
    for layout in RETAIL_TIME_FORMATS:
        try:
            local = datetime.strptime(text.strip(), layout).replace(tzinfo=SHOP_ZONE)
        except ValueError:
            continue
        return local.astimezone(UTC).isoformat()
    return None


def _retail_price(text: str) -> Decimal:
    """A unit price; ValueError for anything but a decimal number the lake can hold."""
    if not AMOUNT_TEXT.fullmatch(text.strip()):
        raise ValueError(text)
    price = Decimal(text.strip())
    try:
        money(price, "UnitPrice")  # before any arithmetic: "1E+1000000" overflows a product
    except Rejected as exc:
        raise ValueError(text) from exc
    return price


def _customer(raw: str) -> str | None:
    raw = (raw or "").strip()
    return raw.removesuffix(".0") if raw else None


def online_retail_orders(rows: Iterator[tuple[int, dict]]) -> Iterator[tuple[int, dict | tuple[str, str]]]:
    """Group order lines into one order per invoice. Yields (first line number, order) or
    (line number, (code, reason)) for invoices that are not orders."""
    invoices: OrderedDict[str, list[tuple[int, dict]]] = OrderedDict()
    for number, row in rows:
        if isinstance(row, tuple):  # a line that is no row
            yield number, row
            continue
        if missing := [c for c in RETAIL_COLUMNS if not isinstance(row, dict) or c not in row]:
            raise ValueError(
                f"the online-retail preset needs the columns {', '.join(RETAIL_COLUMNS)}; "
                f"line {number} has no {', '.join(missing)}"
            )
        invoices.setdefault(str(row["InvoiceNo"]).strip(), []).append((number, row))
    for invoice, lines in invoices.items():
        first = lines[0][0]
        if invoice.startswith("A"):
            yield first, ("NOT_AN_ORDER", f"invoice {invoice} is a bad-debt adjustment, not a sale")
            continue
        refund = invoice.startswith("C")
        timestamp = _retail_time(str(lines[0][1]["InvoiceDate"]))
        if timestamp is None:
            yield (
                first,
                (
                    "TIMESTAMP_INVALID",
                    f"invoice {invoice} has InvoiceDate '{lines[0][1]['InvoiceDate']}', not a time such as "
                    "2010-12-01 08:26:00 or 12/1/2010 8:26",
                ),
            )
            continue
        try:
            quantities = [int(row["Quantity"]) for _, row in lines]
            prices = [_retail_price(str(row["UnitPrice"])) for _, row in lines]
        except (ValueError, TypeError):
            yield (
                first,
                ("INVALID_ORDER", f"invoice {invoice} has a line without a numeric quantity or price"),
            )
            continue
        if not refund and any(q < 0 for q in quantities):
            yield (
                first,
                ("STOCK_ADJUSTMENT", f"invoice {invoice} has negative quantities but is not a cancellation"),
            )
            continue
        customer = _customer(lines[0][1].get("CustomerID", ""))
        if not refund and customer is None and not any(prices):
            # Lines of nothing for nobody ("found", "check", no description): stock counted back in.
            yield (
                first,
                (
                    "STOCK_ADJUSTMENT",
                    f"invoice {invoice} is of zero value for no customer: stock, not a sale",
                ),
            )
            continue
        total = sum((q * p for q, p in zip(quantities, prices, strict=True)), Decimal(0))
        yield (
            first,
            {
                "orderId": invoice,
                "timestamp": timestamp,
                "visitorId": f"customer-{customer}" if customer else f"guest-{invoice.removeprefix('C')}",
                "userId": customer,
                "sessionId": f"invoice-{invoice}",
                "currency": "GBP",
                "total": str(total),
                "subtotal": str(total),
                "isRefund": refund,
                "items": [
                    {
                        "productItemCode": row["StockCode"].strip(),
                        "quantity": q,
                        "price": str(p),
                        "name": row.get("Description", "").strip() or None,
                    }
                    for (_, row), q, p in zip(lines, quantities, prices, strict=True)
                ],
            },
        )


PRESETS = {"online-retail": online_retail_orders}


def _check_header(path: Path, columns: list[str], needed: str) -> None:
    """Refuse a CSV file whose header lacks the column every row needs, before a row is stored: each
    row would be rejected for it (a file separated by semicolons, a misspelt header)."""
    if needed not in columns:
        shown = ", ".join(repr(c) for c in columns[:8]) + (", ..." if len(columns) > 8 else "")
        raise ValueError(
            f"{path.name}: the header has no {needed!r} column (it has {shown}); a CSV file to import is "
            "comma-separated, with the API's field names in its first line"
        )


class _Tally:
    """An iterator's items, counted as they pass (a preset's lines, which it makes fewer rows of)."""

    def __init__(self, items: Iterator[Any]) -> None:
        self.items = items
        self.count = 0

    def __iter__(self) -> _Tally:
        return self

    def __next__(self) -> Any:
        item = next(self.items)
        self.count += 1
        return item


def _is_order(row: dict[str, Any]) -> bool:
    """A row with an order id (an empty cell is none) is an order, unless --kind says otherwise."""
    return row.get("orderId") not in ("", None)


def import_file(
    ingest: Ingest,
    *,
    site: Site,
    path: Path,
    kind: str = "auto",
    fmt: str = "auto",
    preset: str | None = None,
    progress: Callable[[int], None] = lambda n: None,
) -> ImportSummary:
    fmt = detect_format(path) if fmt == "auto" else fmt
    rows = read_rows(path, fmt)
    lines = None
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset}; known: {', '.join(PRESETS)}")
        lines = _Tally(rows)
        items = PRESETS[preset](lines)
        kind = "orders"
    detected = kind == "auto" and not preset
    if not preset:
        first = next(rows, None)
        if kind == "auto":
            kind = "orders" if first and isinstance(first[1], dict) and _is_order(first[1]) else "events"
        if fmt == "csv" and first and isinstance(first[1], dict):
            _check_header(path, list(first[1]), "orderId" if kind == "orders" else "name")
        items = itertools.chain([first] if first else [], rows)
    summary = ImportSummary(kind=kind)
    ctx = Context(
        site_id=site["id"],
        site_currency=site["currency"],
        received_at=datetime.now(UTC),
        channel="import",
        historical=True,
    )
    batch: list[Any] = []
    numbers: list[int] = []

    def accept(items: list[Any], ctx: Context) -> BatchResult:
        if kind != "orders":
            return ingest.accept_events_sync(items, ctx)
        stored: list[dict[str, Any]] = []
        result = ingest.accept_orders_sync(items, ctx, stored=stored)
        summary.refunds += sum(1 for row in stored if row["is_refund"])
        return result

    def send() -> None:
        if batch:
            summary.add(accept(batch, ctx), numbers)
            progress(len(batch))
            batch.clear()
            numbers.clear()

    for number, item in items:
        summary.rows_read += 1
        if isinstance(item, tuple):
            summary.reject(item[0], f"line {number}: {item[1]}")
            progress(1)
            continue
        if isinstance(item, dict) and not preset:
            item = _api_fields(item)
            if detected and _is_order(item) != (kind == "orders"):
                # Validated as the file's kind, the row failed for a field it never meant to have.
                row_kind = "an order (it has orderId)" if kind == "events" else "an event (it has no orderId)"
                summary.reject(
                    "WRONG_KIND",
                    f"line {number}: {row_kind} in a file of {kind}; the first row decides a file's kind, so "
                    "import events and orders as separate files",
                )
                progress(1)
                continue
        batch.append(item)
        numbers.append(number)
        if len(batch) >= BATCH_ROWS:
            send()
    send()
    if ingest.writes_lake:
        ingest.flush()
    summary.lines_read = lines.count if lines is not None else None
    if not summary.rows_read:
        raise ValueError(f"{path.name} holds no rows (an empty file, or a header alone)")
    return summary
