"""Streamed file exports of the analytics areas: CSV (RFC 4180, header row first) or a JSON array,
written row by row, and the OpenAPI that describes them."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated, Any, Literal

import orjson
from fastapi import Query
from fastapi.responses import StreamingResponse

Format = Literal["csv", "json"]
ExportFormat = Annotated[Format, Query(description="csv (RFC 4180, header row) or json (array of objects).")]
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
# A file's parts as they are sent: CSV lines, or pieces of a JSON array.
Chunks = Iterator[str] | Iterator[bytes]


def csv_line(values: Iterable[Any]) -> str:
    """One CSV record; None is an empty cell."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(["" if v is None else v for v in values])
    return buffer.getvalue()


def csv_rows(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    yield csv_line(header)
    for row in rows:
        yield csv_line(row)


def json_array(rows: Iterable[Any]) -> Iterator[bytes]:
    yield b"["
    for index, row in enumerate(rows):
        yield (b"," if index else b"") + orjson.dumps(row)
    yield b"]"


def download(chunks: Chunks, *, format: Format, filename: str) -> StreamingResponse:
    """The chunks streamed as an attachment named ``filename``."""
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return StreamingResponse(chunks, media_type=MEDIA_TYPES[format], headers=headers)


def download_records(
    records: Iterable[dict[str, Any]], *, columns: Sequence[str], format: Format, name: str
) -> StreamingResponse:
    """Records as CSV (their ``columns``, in order) or as a JSON array of the records, named
    ``<name>.<format>``."""
    chunks: Chunks
    if format == "csv":
        chunks = csv_rows(columns, ([record[c] for c in columns] for record in records))
    else:
        chunks = json_array(records)
    return download(chunks, format=format, filename=f"{name}.{format}")


def export_responses(description: str, row_schema: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI for a streamed export: CSV text with a header row, or a JSON array of rows."""
    return {
        200: {
            "description": description,
            "content": {
                "text/csv": {"schema": {"type": "string", "description": "RFC 4180, header row first."}},
                "application/json": {"schema": {"type": "array", "items": row_schema}},
            },
        }
    }
