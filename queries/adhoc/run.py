"""Ad-hoc SQL for the data team: a guarded query run over one site's views in a sealed DuckDB.

Every run opens a fresh in-memory DuckDB. Before anything of the caller's runs, it is allowed to read
exactly the site's current Parquet files (``allowed_paths``), external access is switched off, the site
views are defined over those files, and the configuration is locked (memory limit, threads, no
extensions, no spilling to disk). The query itself has passed :func:`queries.adhoc.guard.guard`;
it runs in a worker process (:mod:`queries.adhoc.process`) watched for memory and time, a
watchdog interrupts it at its time limit, and at most ``limit`` rows come back.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from queries.adhoc.guard import VIEWS, GuardedQuery, SqlError, SqlTimeout, guard, locate, parse_sql
from queries.adhoc.process import Job, Limits, memory_error, pool_for
from queries.library import SQL_DIR
from warehouse.lake import CONSENTS, EVENTS, ORDERS, Lake, LakeTable

VIEWS_SQL = (SQL_DIR / "adhoc_views.sql").read_text()
# The lake tables the views read (as `_lake_<table>`, one site's files only).
SITE_TABLES = (EVENTS, ORDERS, CONSENTS)

DEFAULT_ROW_LIMIT = 10_000
MAX_JSON_ROWS = 100_000
MAX_STREAM_ROWS = 1_000_000
BATCH_ROWS = 65_536
_INTERRUPT_EVERY_SECONDS = 0.05

ParameterValue = str | int | float | bool | None | list[str | int | float | bool | None] | date | datetime


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def size_bytes(size: str) -> int:
    """A DuckDB size string (``1GB``, ``512 MiB``) in bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", size)
    if not match or match[2].lower() not in _SIZE_UNITS:
        raise ValueError(f"not a size such as 1GB or 512MiB: {size!r}")
    return int(float(match[1]) * _SIZE_UNITS[match[2].lower()])


class Sandbox:
    """How much one query may use (memory as a DuckDB size string, threads) and how many run at once in
    this process. One per process: the limit on concurrent queries lives here."""

    def __init__(
        self,
        *,
        memory_limit: str = "1GB",
        threads: int = 2,
        max_concurrent: int = 4,
        max_result_bytes: int = 512 * 1024 * 1024,
        max_process_bytes: int | None = None,
    ) -> None:
        self.memory_limit = memory_limit
        self.threads = threads
        # DuckDB's memory limit covers what it manages (joins, aggregates, sorts), not every string a
        # scalar function builds; the answer itself is capped here, and the worker process as a whole
        # by its resident memory: DuckDB's share, the answer twice (the table and its IPC copy) and
        # the interpreter with its libraries.
        self.max_result_bytes = max_result_bytes
        self.max_process_bytes = max_process_bytes or size_bytes(memory_limit) + 2 * max_result_bytes + 2**29
        self._slots = threading.BoundedSemaphore(max_concurrent)

    @property
    def limits(self) -> Limits:
        return Limits(self.memory_limit, self.threads, self.max_result_bytes, self.max_process_bytes)

    def slot(self, timeout_seconds: float) -> bool:
        return self._slots.acquire(timeout=timeout_seconds)

    def release(self) -> None:
        self._slots.release()


DEFAULT_SANDBOX = Sandbox()


@dataclass(frozen=True)
class SqlResult:
    """Columns as (name, DuckDB type), at most ``limit`` rows, and whether more rows existed."""

    columns: list[tuple[str, str]]
    table: pa.Table
    truncated: bool
    elapsed_ms: float
    duckdb_sql: str


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="duckdb")


def _site_files(lake: Lake, table: LakeTable, site_id: str) -> list[str]:
    # Real paths, as the engine's views use: compaction may swap the partition symlink meanwhile.
    return [str(p) for p in lake.live_files(table, site_id=site_id)]


def _define_source(conn: duckdb.DuckDBPyConnection, table: LakeTable, files: list[str], site_id: str) -> None:
    """``_lake_<table>``: the site's rows of one lake table with the typed columns of the lake schema
    (a column missing from older files reads as NULL), plus the UTC ``date`` of its partition."""
    empty = pa.schema([*table.schema, pa.field("date", pa.date32())]).empty_table()
    conn.register("_arrow_empty", empty)
    conn.execute(f"CREATE TEMP TABLE _lake_{table.name}_empty AS SELECT * FROM _arrow_empty")
    conn.unregister("_arrow_empty")
    source = f"SELECT * FROM _lake_{table.name}_empty"
    if files:
        listing = ", ".join(_literal(f) for f in files)
        source += (
            f" UNION ALL BY NAME SELECT * EXCLUDE (site_id) FROM read_parquet([{listing}], "
            "hive_partitioning = true, union_by_name = true, hive_types = {'site_id': VARCHAR, 'date': DATE}) "
            f"WHERE site_id = {_literal(site_id)}"
        )
    conn.execute(f"CREATE TEMP VIEW _lake_{table.name} AS {source}")


@cache
def _view_statements() -> dict[str, tuple[str, frozenset[str]]]:
    """Each view of adhoc_views.sql in file order (which is dependency order): its CREATE statement
    and the views and lake sources it reads."""
    sources = {f"_lake_{t.name}" for t in SITE_TABLES}
    statements: dict[str, tuple[str, frozenset[str]]] = {}
    for text in re.split(r";\s*\n", VIEWS_SQL):
        create = sqlglot.parse_one(text, read="duckdb") if text.strip() else None
        if not isinstance(create, exp.Create):
            continue
        known = sources | set(statements)
        reads = frozenset(t.name for t in create.expression.find_all(exp.Table) if t.name in known)
        statements[create.this.name] = (text, reads)
    return statements


def _needed(views: frozenset[str]) -> list[str]:
    """The views to create for a query reading ``views``, with what they read, in dependency order."""
    statements = _view_statements()
    needed = set(views)
    for name in reversed(statements):
        if name in needed:
            needed |= statements[name][1]
    return [
        name for name in [*sorted(n for n in needed if n.startswith("_lake_")), *statements] if name in needed
    ]


def open_sandbox(
    lake: Lake, *, site_id: str, sandbox: Sandbox | Limits, views: frozenset[str] = frozenset(VIEWS)
) -> duckdb.DuckDBPyConnection:
    """A fresh DuckDB that can read only ``site_id``'s lake files, through the site views (those in
    ``views`` and what they read), with external access off and its configuration locked."""
    site = str(uuid.UUID(site_id))  # canonical: the partition directories are named with it
    conn = duckdb.connect(
        ":memory:",
        config={
            "threads": sandbox.threads,
            "memory_limit": sandbox.memory_limit,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "temp_directory": "",  # nothing spills to disk: a query over the limit fails instead
        },
    )
    try:
        conn.execute("SET TimeZone = 'UTC'")
        needed = _needed(views)
        tables = [t for t in SITE_TABLES if f"_lake_{t.name}" in needed]
        files = {table: _site_files(lake, table, site) for table in tables}
        conn.execute("SET allowed_paths = $paths", {"paths": [f for fs in files.values() for f in fs]})
        conn.execute("SET enable_external_access = false")
        for table, table_files in files.items():
            _define_source(conn, table, table_files, site)
        statements = _view_statements()
        for name in needed:
            if name in statements:
                conn.execute(statements[name][0])
        conn.execute("SET lock_configuration = true")
    except BaseException:
        conn.close()
        raise
    return conn


class _Watchdog:
    """Interrupts the connection's query once the deadline passes, again every 50 ms until it stops
    (an interrupt that lands between two statements would otherwise be lost)."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, timeout_ms: int) -> None:
        self.conn = conn
        self.timeout_seconds = timeout_ms / 1000
        self.fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="aisle-sql-watchdog", daemon=True)

    def _watch(self) -> None:
        if self._done.wait(self.timeout_seconds):
            return
        self.fired = True
        while not self._done.is_set():
            self.conn.interrupt()
            self._done.wait(_INTERRUPT_EVERY_SECONDS)

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join()


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


def _type_name(kind: duckdb.DuckDBPyType) -> str:
    text = str(kind)
    return text[1:-1] if text.startswith('"') and text.endswith('"') else text  # '"NULL"' -> 'NULL'


def _quoted_name(message: str) -> str | None:
    start = message.find('"')
    end = message.find('"', start + 1)
    return message[start + 1 : end] if 0 <= start < end else None


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
    watchdog = _Watchdog(conn, timeout_ms)
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
