"""The caller's query in DuckDB: sqlglot writes it from the tree read in the caller's dialect and reads
it back; a construct with no DuckDB form is SQL_UNSUPPORTED, named as the caller wrote it."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError

from queries.adhoc.errors import SqlError
from queries.adhoc.parse import (
    as_written,
    function_name,
    offset_at,
    parameter_name,
    single_statement,
    statements_of,
)


def translate(original: exp.Expr, *, dialect: str) -> str:
    """The DuckDB text of the caller's query; SQL_UNSUPPORTED when sqlglot has no DuckDB form of a part."""
    try:
        return original.sql(dialect="duckdb", unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as error:
        raise SqlError(
            "SQL_UNSUPPORTED",
            f"This query cannot be translated from {dialect} to DuckDB: {error}",
            {"dialect": dialect},
        ) from None
    except ValueError as error:
        # The generator knows no DuckDB form of a node at all: "Unsupported expression type Final".
        match = re.fullmatch(r"Unsupported expression type (\w+)", str(error))
        kind = getattr(exp, match[1], None) if match else None
        node = original.find(kind) if isinstance(kind, type) else None
        if node is None:
            raise
        raise _untranslatable(node, dialect=dialect) from None


def read_back(original: exp.Expr, duckdb_sql: str, *, dialect: str) -> exp.Expr:
    """The tree of the DuckDB text made from the caller's query. When sqlglot cannot read that text back,
    a construct of the caller's dialect has no DuckDB form: SQL_UNSUPPORTED naming it, rather than a
    syntax error pointing into text the caller never wrote."""
    try:
        statements = statements_of(duckdb_sql, dialect="duckdb")
    except SqlError as error:
        position = error.details.get("position")
        if dialect == "duckdb" or not position:
            raise
        culprit = _culprit(original, duckdb_sql, offset_at(duckdb_sql, position))
        raise _untranslatable(culprit, dialect=dialect, climb=True, duckdb_sql=duckdb_sql) from None
    return single_statement(statements, duckdb_sql, dialect="duckdb")


# Kinds of node a caller would name a construct by; a smaller part is named by the nearest of these (a
# list or struct literal is a value, not what failed to translate around it).
_CONSTRUCTS = (exp.Func, exp.Lateral, exp.Join, exp.MatchRecognize, exp.Table, exp.TableFromRows, exp.Query)


_VALUES = (exp.Array, exp.Struct)


# At most this many characters are generated while looking for the part that did not translate: each
# step down renders the node's children, and a deeply nested query must not keep the server busy.
_CULPRIT_BUDGET = 1_000_000


def _culprit(original: exp.Expr, duckdb_sql: str, offset: int) -> exp.Expr:
    """The smallest part of ``original`` whose DuckDB text holds ``offset`` of ``duckdb_sql`` (the text
    generated from it): down from the root, into the child whose text holds it, while one does."""
    node, start, end, budget = original, 0, len(duckdb_sql), _CULPRIT_BUDGET
    while budget > 0:
        for child in node.iter_expressions():
            try:
                text = child.sql(dialect="duckdb")
            except (SqlglotError, ValueError):
                continue
            budget -= len(text)
            at = duckdb_sql.find(text, start, end) if text else -1
            while at >= 0 and not at <= offset < at + len(text):
                at = duckdb_sql.find(text, at + 1, end)
            if at >= 0:
                node, start, end = child, at, at + len(text)
                break
        else:
            return node
    return node


def _untranslatable(
    node: exp.Expr, *, dialect: str, climb: bool = False, duckdb_sql: str | None = None
) -> SqlError:
    """SQL_UNSUPPORTED naming ``node`` (or, with ``climb``, the construct around it) as the caller's
    dialect writes it."""
    if climb:
        while (not isinstance(node, _CONSTRUCTS) or isinstance(node, _VALUES)) and node.parent is not None:
            node = node.parent
    try:
        text = " ".join(node.sql(dialect=dialect).split())
    except (SqlglotError, ValueError):
        text = node.key.upper()
    if len(text) > 60:
        text = text[:57] + "..."
    details: dict[str, Any] = {"dialect": dialect, "unsupported": text}
    if duckdb_sql:
        details["duckdbSql"] = duckdb_sql
    return SqlError(
        "SQL_UNSUPPORTED",
        f"This query cannot be translated from {dialect} to DuckDB: '{text}' has no DuckDB equivalent",
        details,
    )


def as_the_caller_wrote(original: exp.Expr, source: str, node: exp.Expr, *, dialect: str) -> str:
    """How the caller wrote a function or parameter found in the DuckDB tree made from their query: as
    the first one of its kind in their own tree (``original``, parsed from ``source``). The DuckDB text
    says CURRENT_DATABASE for ClickHouse's currentDatabase, and `$1` for Snowflake's `$1` reads back as
    a placeholder generic SQL writes `:1`."""
    twin: exp.Expr | None
    if isinstance(node, exp.Func):
        wanted = function_name(node)
        twin = next((f for f in original.find_all(exp.Func) if function_name(f) == wanted), None)
    else:
        twin = next(
            (p for p in original.find_all(exp.Placeholder, exp.Parameter) if parameter_name(p) is None), None
        )
    if twin is None:
        return as_written(node, source=None)
    return as_written(twin, source=source, dialect=dialect)
