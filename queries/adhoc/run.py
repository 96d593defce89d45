"""Ad-hoc SQL for the data team: a guarded query run over one site's views in a sealed DuckDB.

The query has passed :func:`queries.adhoc.guard.guard`; it runs in a worker process
(:mod:`queries.adhoc.process`) watched for memory and time, in the sandbox of
:mod:`queries.adhoc.sandbox`, and at most ``limit`` rows come back. DuckDB's own errors come back as
:class:`~queries.adhoc.errors.SqlError` with advice the caller can follow.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from duckdb.sqltypes import DuckDBPyType
from sqlglot import exp

from queries.adhoc.errors import SqlError, SqlTimeout, memory_error
from queries.adhoc.guard import GuardedQuery, guard
from queries.adhoc.parse import locate, parse_sql
from queries.adhoc.policy import DEFAULT_ROW_LIMIT
from queries.adhoc.process import Job, pool_for
from queries.adhoc.sandbox import DEFAULT_SANDBOX, Limits, Sandbox, Watchdog, open_sandbox
from warehouse.lake import Lake

BATCH_ROWS = 65_536

ParameterValue = str | int | float | bool | None | list[str | int | float | bool | None] | date | datetime


@dataclass(frozen=True)
class SqlResult:
    """Columns as (name, DuckDB type), at most ``limit`` rows, and whether more rows existed."""

    columns: list[tuple[str, str]]
    table: pa.Table
    truncated: bool
    elapsed_ms: float
    duckdb_sql: str


def bind_parameters(query: GuardedQuery, values: dict[str, ParameterValue] | None) -> dict[str, Any]:
    """The values for the query's named parameters: every one the query uses, none it does not."""
    values = values or {}
    missing = [name for name in query.parameters if name not in values]
    if missing:
        raise SqlError(
            "SQL_PARAMETER_MISSING",
            f"Give a value for every parameter of the query; missing: {', '.join(missing)}",
            {"missing": missing},
        )
    unknown = sorted(set(values) - set(query.parameters))
    if unknown:
        raise SqlError(
            "SQL_PARAMETER_UNKNOWN",
            f"The query has no parameter named {', '.join(unknown)}",
            {"unknown": unknown, "parameters": list(query.parameters)},
        )
    return {name: values[name] for name in query.parameters}


def execute(
    lake: Lake,
    query: GuardedQuery,
    *,
    site_id: str,
    parameters: dict[str, ParameterValue] | None = None,
    limit: int = DEFAULT_ROW_LIMIT,
    timeout_ms: int = 10_000,
    sandbox: Sandbox | None = None,
) -> SqlResult:
    """Run a guarded query over ``site_id``'s views: at most ``limit`` rows (``truncated`` says more
    existed), stopped after ``timeout_ms`` (:class:`SqlTimeout`); every failure is a :class:`SqlError`."""
    sandbox = sandbox or DEFAULT_SANDBOX
    bound = bind_parameters(query, parameters)
    if not sandbox.slot(timeout_ms / 1000):
        raise SqlError("SQL_BUSY", "Too many SQL queries are running; try again in a moment")
    try:
        job = Job(str(lake.root), query, site_id, bound, limit, timeout_ms)
        columns, table, truncated, elapsed_ms, duckdb_sql = pool_for(sandbox.limits).run(job)
    finally:
        sandbox.release()
    return SqlResult(columns, table, truncated, elapsed_ms, duckdb_sql)


def run_in_this_process(
    lake: Lake,
    query: GuardedQuery,
    *,
    site_id: str,
    bound: dict[str, Any],
    limit: int,
    timeout_ms: int,
    limits: Limits,
) -> SqlResult:
    """The query run here, in a worker process (:func:`execute` hands it over)."""
    started = time.perf_counter()
    conn = open_sandbox(lake, site_id=site_id, sandbox=limits, views=query.views)
    watchdog = Watchdog(conn, timeout_ms)
    try:
        with watchdog:
            statements = conn.extract_statements(query.sql)
            # DuckDB's own parser agrees with the guard: one SELECT, nothing else.
            if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
                raise SqlError("SQL_STATEMENT_NOT_ALLOWED", "Only one read-only SELECT statement may run")
            relation = conn.sql(query.sql, params=bound or None)
            columns = [
                (name, _type_name(kind)) for name, kind in zip(relation.columns, relation.types, strict=True)
            ]
            relation = _portable(conn, relation, query.sql, bound)
            reader = relation.to_arrow_reader(min(BATCH_ROWS, limit + 1))
            batches, rows, size = [], 0, 0
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                size += batch.nbytes
                if size > limits.max_result_bytes:
                    raise SqlError(
                        "SQL_RESULT_TOO_LARGE",
                        f"The answer is larger than {limits.max_result_bytes // (1024 * 1024)} MiB; select fewer "
                        "rows or columns, or aggregate",
                        {"maxBytes": limits.max_result_bytes},
                    )
                if rows > limit:
                    break
            table = pa.Table.from_batches(batches, schema=reader.schema).slice(0, limit)
            table = table.rename_columns([name for name, _ in columns])
    except duckdb.InterruptException:
        raise SqlTimeout(timeout_ms) from None
    except duckdb.OutOfMemoryException:
        raise memory_error(limits.memory_limit) from None
    except duckdb.Error as error:
        if watchdog.fired:
            raise SqlTimeout(timeout_ms) from None
        raise _user_error(error, query) from None
    finally:
        conn.close()
    return SqlResult(
        columns=columns,
        table=table,
        truncated=rows > limit,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        duckdb_sql=query.sql,
    )


def run_sql(
    lake: Lake,
    sql: str,
    *,
    site_id: str,
    dialect: str | None = None,
    parameters: dict[str, ParameterValue] | None = None,
    limit: int = DEFAULT_ROW_LIMIT,
    timeout_ms: int = 10_000,
    sandbox: Sandbox | None = None,
) -> SqlResult:
    """Guard ``sql`` (read in ``dialect``) and run it over ``site_id``'s views; see :func:`execute`."""
    query = guard(sql, dialect=dialect)
    return execute(
        lake,
        query,
        site_id=site_id,
        parameters=parameters,
        limit=limit,
        timeout_ms=timeout_ms,
        sandbox=sandbox,
    )


# Types no Arrow writer or JSON carries faithfully: BIGNUM and BIT reach Arrow as DuckDB's internal
# bytes, UNION as a sparse union no CSV or Parquet writer takes, TIMETZ without its offset. They are
# answered as DuckDB's own text of the value.
_TEXT_TYPES = re.compile(r"\b(BIGNUM|VARINT|BIT|TIME WITH TIME ZONE)\b|\bUNION\(|HUGEINT\b")


def _portable_type(kind: str) -> str | None:
    """The type DuckDB casts a column of ``kind`` to before it leaves for Arrow; None to keep it."""
    if kind in ("HUGEINT", "UHUGEINT"):
        # Arrow's decimal(38, 0), where a value of 39 digits wraps around: cast there by DuckDB, such
        # a value is an error instead of a wrong number.
        return "DECIMAL(38, 0)"
    return "VARCHAR" if _TEXT_TYPES.search(kind) else None


def _portable(
    conn: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, sql: str, bound: dict[str, Any]
) -> duckdb.DuckDBPyRelation:
    """``relation``, with the columns of types Arrow does not carry faithfully converted by DuckDB."""
    casts = [_portable_type(str(kind)) for kind in relation.types]
    if not any(casts):
        return relation
    # In a subquery DuckDB makes repeated column names unique (a, a_1); the caller's names come back after.
    names = conn.sql(f"SELECT * FROM ({sql}) AS _answer", params=bound or None).columns
    selected = []
    for name, cast in zip(names, casts, strict=True):
        column = exp.column(name, quoted=True).sql(dialect="duckdb")
        selected.append(f"CAST({column} AS {cast})" if cast else column)
    return conn.sql(f"SELECT {', '.join(selected)} FROM ({sql}) AS _answer", params=bound or None)


def _type_name(kind: DuckDBPyType) -> str:
    text = str(kind)
    return text[1:-1] if text.startswith('"') and text.endswith('"') else text  # '"NULL"' -> 'NULL'


# DuckDB's messages advise statements the sandbox refuses ("SET error_on_division_by_zero=false"); each
# such advice is replaced by what the caller can write in the query itself.
_ADVICE = (
    (
        re.compile(
            r"Use TRY\(\.\.\.\) to return NULL for this expression, or SET error_on_division_by_zero=\w+ .*"
        ),
        "Divide by NULLIF(divisor, 0) to get NULL instead of an error.",
    ),
    (
        re.compile(r'\s*Use "SET scalar_subquery_error_on_multiple_rows=\w+" .*', re.DOTALL),
        " Make the subquery return one row (aggregate it, or add LIMIT 1), or use IN or a join instead.",
    ),
    (
        re.compile(r"\s*\* SET order_by_non_integer_literal=\w+ .*"),
        " Order by a column, an expression or a column number instead.",
    ),
    (re.compile(r"Use SET pivot_limit=\w+ .*"), "Pivot on fewer values (filter the rows first)."),
    (
        re.compile(r"\s*Please try installing and loading the .*", re.DOTALL),
        " Extensions cannot be installed or loaded here; docs/sql.md lists the functions you can use.",
    ),
)


# Advice to run a statement of these kinds, left in a message no rewrite above matched: dropped.
_REFUSED_ADVICE = re.compile(
    r"""\b(?:(?:SET|RESET|PRAGMA)\s+["']?[a-z][a-z0-9_]*\s*(?:=|TO\b|;|["'])|(?:INSTALL|LOAD)\s+[a-z][a-z0-9_]*\s*;)"""
)


def _doable_advice(message: str) -> str:
    """``message`` with advice to run a statement the sandbox refuses replaced or dropped."""
    for pattern, advice in _ADVICE:
        message = pattern.sub(advice, message)
    kept = []
    for line in message.split("\n"):
        sentences = re.split(r"(?<=[.!])\s+", line)
        left = " ".join(s for s in sentences if not _REFUSED_ADVICE.search(s))
        if left.strip() or not line.strip():
            kept.append(left)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


# DuckDB's parser and binder both stop at this depth; each operator of a chain (a + b + c ...) is a level.
_TOO_DEEP = re.compile(r"Max expression depth limit of (\d+) exceeded")


def _user_error(error: duckdb.Error, query: GuardedQuery) -> SqlError:
    """DuckDB's own message for a query that parsed but cannot run (an unknown column, a bad cast),
    with the position of the name it complains about in the caller's text when it can be found."""
    text = str(error)
    too_deep = _TOO_DEEP.search(text)
    if too_deep:
        # Not a mistake in the SQL (it came as a syntax or binder error): the query is fine, only too
        # deep for DuckDB, and the setting that raises the limit is locked.
        return SqlError(
            "SQL_TOO_COMPLEX",
            f"An expression of the query nests too deeply: DuckDB allows {too_deep[1]} levels, and each "
            "operator of a chain such as a + b + c or a || b || c is one; write it with fewer levels "
            "(list_sum([a, b, c]), concat(a, b, c)) or in steps with CTEs",
            {"maxDepth": int(too_deep[1]), "duckdbSql": query.sql},
        )
    message, _, context = text.partition("\n\nLINE ")
    message = _doable_advice(message)
    details: dict[str, Any] = {"duckdbSql": query.sql}
    if context:
        details["duckdbContext"] = "LINE " + context
    name = _quoted_name(message)
    if name:
        try:
            position = locate(parse_sql(query.source, dialect=query.dialect)[0], name, query.source)
        except sqlglot.errors.SqlglotError:
            position = None
        if position:
            details["position"] = position
            message += f" (line {position['line']}, column {position['column']})"
    if isinstance(error, duckdb.ParserException) and query.dialect != "duckdb" and "syntax error" in message:
        # sqlglot read the query in its dialect and wrote DuckDB that DuckDB cannot read: a construct
        # with no DuckDB form (FOR SYSTEM_TIME AS OF, LIMIT 1 BY, CHANGES), not a mistake in the query.
        code = "SQL_UNSUPPORTED"
        message = (
            f"This query cannot be translated from {query.dialect} to DuckDB: DuckDB cannot read what it "
            f"becomes ({message.strip()})"
        )
    elif isinstance(error, duckdb.ParserException):
        code = "SQL_SYNTAX_ERROR"
    elif isinstance(error, duckdb.BinderException | duckdb.CatalogException):
        code = "SQL_INVALID"
    else:
        code = "SQL_EXECUTION_ERROR"
    return SqlError(code, message.strip(), details)


def _quoted_name(message: str) -> str | None:
    start = message.find('"')
    end = message.find('"', start + 1)
    return message[start + 1 : end] if 0 <= start < end else None
