"""The consent log as a file: CSV (RFC 4180: CRLF, a header row) or a JSON array, encoded row by row
so the answer streams."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import orjson

from queries.consent import ExportRow

COLUMNS = (
    "kind",
    "id",
    "timestamp",
    "personId",
    "visitorId",
    "sessionId",
    "userId",
    "source",
    "channel",
    "necessary",
    "analytics",
    "marketing",
    "preferences",
)


def _csv_line(values: list[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(values)
    return buffer.getvalue()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def csv_rows(rows: Iterator[ExportRow]) -> Iterator[str]:
    yield _csv_line(list(COLUMNS))
    for row in rows:
        fields = row.model_dump(by_alias=True, mode="json")
        yield _csv_line([_csv_cell(fields[c]) for c in COLUMNS])


def json_rows(rows: Iterator[ExportRow]) -> Iterator[bytes]:
    yield b"["
    for index, row in enumerate(rows):
        yield (b"," if index else b"") + orjson.dumps(row.model_dump(by_alias=True, mode="json"))
    yield b"]"
