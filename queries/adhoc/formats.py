"""Ad-hoc SQL answers as JSON, CSV, Parquet or a text table.

JSON keeps money exact: decimals are strings, as everywhere on the wire; so are the integers of a
column that holds one JavaScript cannot read exactly; times are ISO 8601 in UTC (``Z``), intervals ISO
8601 durations, bytes base64. CSV and Parquet come in chunks so a large answer is written while it is
sent.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from queries.adhoc.errors import SqlError
from queries.adhoc.run import SqlResult

CHUNK_ROWS = 65_536
CHUNK_BYTES = 1 << 20
# The largest integer a JavaScript number holds exactly (Number.MAX_SAFE_INTEGER): JSON.parse rounds one
# past it without a word (9007199254740993 reads as ...992).
_SAFE_INTEGER = 2**53 - 1
# DuckDB's infinite dates and times, as Arrow carries them.
_INFINITIES = {
    (2**63 - 1): "infinity",
    -(2**63 - 1): "-infinity",
    (2**31 - 1): "infinity",
    -(2**31 - 1): "-infinity",
}
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_DAY = {unit: 86_400 * n for unit, n in _PER_SECOND.items()}
# The seconds from 1970 to the first and past the last instant Python's datetime holds (years 1-9999).
_PYTHON_SECONDS = (-62_135_596_800, 253_402_300_800)


def python_values(column: pa.ChunkedArray) -> list[Any]:
    """The column's values as Python objects. A date or time Python cannot hold (DuckDB's infinities,
    years before 1 or after 9999, the TIME 24:00:00) becomes text instead of an error or a wrong value."""
    if _fits_python(column):
        try:
            return column.to_pylist()
        except (OverflowError, ValueError):  # a date inside a list or struct
            pass
    return [_scalar_value(v) for v in column]


def _fits_python(column: pa.ChunkedArray) -> bool:
    """Whether Python holds every date or time of the column, from its smallest and largest value
    (no value is converted). Other columns answer True."""
    kind = column.type
    if pa.types.is_time(kind):
        return (pc.max(column.cast(pa.int64())).as_py() or 0) < _DAY[kind.unit]
    if pa.types.is_timestamp(kind) or pa.types.is_date64(kind):
        per_second = _PER_SECOND[kind.unit if pa.types.is_timestamp(kind) else "ms"]
        raw, low, high = (
            column.cast(pa.int64()),
            _PYTHON_SECONDS[0] * per_second,
            _PYTHON_SECONDS[1] * per_second,
        )
    elif pa.types.is_date32(kind):
        raw, low, high = column.cast(pa.int32()), _PYTHON_SECONDS[0] // 86_400, _PYTHON_SECONDS[1] // 86_400
    else:
        return True
    extremes = pc.min_max(raw)
    smallest = extremes["min"].as_py()
    return smallest is None or (low <= smallest and extremes["max"].as_py() < high)


def _scalar_value(value: pa.Scalar) -> Any:
    kind = value.type
    if pa.types.is_time(kind) and value.is_valid and value.cast(pa.int64()).as_py() >= _DAY[kind.unit]:
        return "24:00:00"  # the only time past the day's end
    try:
        return value.as_py()
    except (OverflowError, ValueError):
        pass
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        raw = value.cast(pa.int64() if pa.types.is_timestamp(kind) else pa.int32()).as_py()
        if raw in _INFINITIES:
            return _INFINITIES[raw]
        unit: Literal["s", "ms", "us", "ns", "D"] = kind.unit if pa.types.is_timestamp(kind) else "D"
        # numpy writes any year (Arrow and Python stop at 9999).
        zone = "Z" if getattr(kind, "tz", None) else ""
        return f"{np.datetime64(raw, unit)}{zone}"
    raise SqlError(
        "SQL_VALUE_NOT_REPRESENTABLE",
        f"A value of type {value.type} holds a date or time outside years 1 to 9999; cast it to VARCHAR in "
        "the query",
    )


def _duration(value: Any) -> str:
    if isinstance(value, timedelta):
        months, days, nanos = 0, value.days, (value.seconds * 1_000_000 + value.microseconds) * 1000
    else:  # pyarrow MonthDayNano
        months, days, nanos = value.months, value.days, value.nanoseconds
    seconds = Decimal(nanos) / Decimal(1_000_000_000)
    return f"P{months}M{days}DT{seconds.normalize():f}S"


def json_default(value: Any) -> Any:
    """What orjson cannot write itself: decimals as strings, intervals as durations, bytes as base64."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, timedelta) or type(value).__name__ == "MonthDayNano":
        return _duration(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _integers_as_text(kind: pa.DataType) -> pa.DataType:
    """``kind`` with its 64-bit integers (BIGINT, UBIGINT), also inside lists, structs and maps, as text."""
    if pa.types.is_int64(kind) or pa.types.is_uint64(kind):
        return pa.string()
    if pa.types.is_map(kind):
        return pa.map_(_integers_as_text(kind.key_type), _integers_as_text(kind.item_type))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        item = kind.value_field.with_type(_integers_as_text(kind.value_type))
        if pa.types.is_large_list(kind):
            return pa.large_list(item)
        return pa.list_(item, kind.list_size) if pa.types.is_fixed_size_list(kind) else pa.list_(item)
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_integers_as_text(f.type)) for f in kind])
    return kind


def _integer_leaves(array: pa.Array) -> Iterator[pa.Array]:
    """The 64-bit integer values of ``array``, at any depth of lists, structs and maps."""
    kind = array.type
    if pa.types.is_int64(kind) or pa.types.is_uint64(kind):
        yield array
    elif pa.types.is_map(kind):
        yield from _integer_leaves(array.keys)
        yield from _integer_leaves(array.items)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        yield from _integer_leaves(array.flatten())
    elif pa.types.is_struct(kind):
        for child in array.flatten():  # with the struct's own nulls
            yield from _integer_leaves(child)


def _beyond_javascript(column: pa.ChunkedArray) -> bool:
    for chunk in column.chunks:
        for leaf in _integer_leaves(chunk):
            extremes = pc.min_max(leaf)
            low, high = extremes["min"].as_py(), extremes["max"].as_py()
            if low is not None and (low < -_SAFE_INTEGER or high > _SAFE_INTEGER):
                return True
    return False


def json_values(column: pa.ChunkedArray, kind: str) -> list[Any]:
    """A column's values for JSON. Its 64-bit and wider integers are numbers while JavaScript reads every
    one of them exactly; when one is past +-(2^53 - 1), all of them are strings of their digits, so a
    column has one JSON type in an answer (as BigQuery sends INT64, always as strings)."""
    if kind in ("HUGEINT", "UHUGEINT"):
        # It arrives as decimal(38, 0) (what sum() of integers gives).
        values = python_values(column)
        if any(v is not None and abs(v) > _SAFE_INTEGER for v in values):
            return [None if v is None else str(int(v)) for v in values]
        return [None if v is None else int(v) for v in values]
    textual = _integers_as_text(column.type)
    if textual != column.type and _beyond_javascript(column):
        column = column.cast(textual)
    return python_values(column)


def json_body(result: SqlResult) -> bytes:
    """``{"columns": [{"name", "type"}], "rows": [[...]], "rowCount", "truncated", "elapsedMs"}``."""
    columns = [
        json_values(column, kind)
        for column, (_, kind) in zip(result.table.columns, result.columns, strict=True)
    ]
    body = {
        "columns": [{"name": name, "type": kind} for name, kind in result.columns],
        "rows": list(zip(*columns, strict=True)) if columns else [],
        "rowCount": result.table.num_rows,
        "truncated": result.truncated,
        "elapsedMs": result.elapsed_ms,
    }
    return orjson.dumps(body, default=json_default, option=orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS)


def _textual(table: pa.Table, *, for_csv: bool) -> pa.Table:
    """Columns a writer cannot take become text: intervals always (ISO 8601 durations); for CSV also
    binary (base64), lists, structs and maps (JSON), and dates and times Python cannot hold (as JSON
    writes them: CSV would show Arrow's placeholders)."""
    columns = []
    for field, column in zip(table.schema, table.columns, strict=True):
        kind = field.type
        nested = pa.types.is_nested(kind)
        binary = pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
        temporal = pa.types.is_temporal(kind) and not pa.types.is_interval(kind)
        if for_csv and temporal and not _fits_python(column):
            values = [
                v
                if v is None or isinstance(v, str)
                else orjson.dumps(v, option=orjson.OPT_UTC_Z).decode()[1:-1]
                for v in python_values(column)
            ]
            columns.append(pa.array(values, pa.string()))
        elif pa.types.is_interval(kind) or (for_csv and (nested or binary)):
            values = [
                None
                if v is None
                else orjson.dumps(v, default=json_default, option=orjson.OPT_UTC_Z).decode()
                if nested
                else json_default(v)
                for v in python_values(column)
            ]
            columns.append(pa.array(values, pa.string()))
        else:
            columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names) if table.num_columns else table


def csv_chunks(result: SqlResult) -> Iterator[bytes]:
    """RFC 4180 CSV with a header line; nested values as JSON text."""
    table = _textual(result.table, for_csv=True)
    buffer = io.BytesIO()
    with pa_csv.CSVWriter(buffer, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=CHUNK_ROWS):
            writer.write_batch(batch)
            if buffer.tell() >= CHUNK_BYTES:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
    if buffer.tell() or not table.num_rows:
        yield buffer.getvalue()


def unique_names(names: list[str]) -> list[str]:
    """Column names made unique (`a`, `a_2`): Parquet readers cannot tell two `a` columns apart."""
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def parquet_chunks(result: SqlResult) -> Iterator[bytes]:
    """One Parquet file (zstd), handed out in 1 MiB pieces; repeated column names get a suffix."""
    table = _textual(result.table, for_csv=False)
    table = table.rename_columns(unique_names(table.column_names))
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    data = buffer.getbuffer()
    for start in range(0, len(data), CHUNK_BYTES):
        yield bytes(data[start : start + CHUNK_BYTES])


def text_table(result: SqlResult, *, max_width: int = 40) -> str:
    """A plain aligned table for a terminal, with the row count and whether rows were cut."""
    names = [name for name, _ in result.columns]
    rows = (
        [
            [_cell(v, max_width) for v in row]
            for row in zip(*(python_values(c) for c in result.table.columns), strict=True)
        ]
        if names
        else []
    )
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    line = "+".join("-" * (w + 2) for w in widths)
    out = [
        " " + " | ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)),
        line,
        *(" " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows),
    ]
    plural = "" if result.table.num_rows == 1 else "s"
    more = ", truncated: more rows exist; raise --limit" if result.truncated else ""
    out.append(f"({result.table.num_rows} row{plural}{more})")
    return "\n".join(out)


def _cell(value: Any, max_width: int) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, str):
        text = value
    else:
        text = orjson.dumps(value, default=json_default, option=orjson.OPT_UTC_Z).decode().strip('"')
    text = text.replace("\n", "\\n")
    return text if len(text) <= max_width else text[: max_width - 1] + "…"
