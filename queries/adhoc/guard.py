"""The guard of ad-hoc SQL: parse with sqlglot, transpile to DuckDB, and allow only one read-only query
over the site views, with allow-listed functions and named parameters.

The check runs on the parsed tree of the DuckDB text that will actually run (the user's query read in
its dialect, generated as DuckDB, read back), never on the text: comments, quoting and case cannot hide
anything from it. What runs is the SQL generated from the very tree that passed. The steps live in
:mod:`queries.adhoc.parse`, :mod:`queries.adhoc.check` and :mod:`queries.adhoc.translate`; the rules in
:mod:`queries.adhoc.policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from sqlglot import exp

from queries.adhoc.check import check_parameter, check_tree
from queries.adhoc.errors import SqlError
from queries.adhoc.parse import locate, refuse, single_statement, statements_of
from queries.adhoc.policy import DEFAULT_DIALECT, VIEWS, known_dialect
from queries.adhoc.translate import as_the_caller_wrote, read_back, translate


@dataclass(frozen=True)
class GuardedQuery:
    """A query that passed the guard: the DuckDB SQL to run and its named parameters, in order."""

    sql: str
    parameters: tuple[str, ...] = field(default_factory=tuple)
    dialect: str = DEFAULT_DIALECT
    source: str = ""  # the text as sent, to point at positions in it
    views: frozenset[str] = frozenset()  # the site views it reads


def guard(sql: str, *, dialect: str | None = None) -> GuardedQuery:
    """Parse ``sql`` in ``dialect`` (DuckDB by default), transpile it to DuckDB and check the tree: one
    read-only query, only the site views (and its own CTEs), only allow-listed functions, only named
    parameters. Raises :class:`SqlError` naming what it refused."""
    try:
        return _guard(sql, dialect=dialect)
    except RecursionError:
        raise SqlError(
            "SQL_TOO_COMPLEX",
            "The query nests too deeply to be checked; flatten it (fewer nested parentheses)",
        ) from None


def _guard(sql: str, *, dialect: str | None = None) -> GuardedQuery:
    dialect = known_dialect(dialect)
    original = single_statement(statements_of(sql, dialect=dialect), sql, dialect=dialect)
    if isinstance(original, exp.Select) and original.args.get("into"):
        raise refuse(
            "SQL_STATEMENT_NOT_ALLOWED",
            "SELECT ... INTO creates a table and is not allowed",
            refused="INTO",
            kind="statement",
            node=original.args["into"],
            source=sql,
        )
    if dialect == "duckdb":
        check_tree(original, sql)
    duckdb_sql = translate(original, dialect=dialect)
    tree = read_back(original, duckdb_sql, dialect=dialect)
    try:
        check_tree(tree, duckdb_sql, written=partial(as_the_caller_wrote, original, sql, dialect=dialect))
    except SqlError as error:
        # Positions name the caller's text: find the refused name in the query as it was sent.
        error.details.pop("position", None)
        position = locate(original, error.details.get("refused"), sql)
        if position:
            error.details["position"] = position
        error.details["duckdbSql"] = duckdb_sql
        raise
    names: list[str] = []
    for node in tree.find_all(exp.Placeholder, exp.Parameter):
        name = check_parameter(node)
        if name not in names:
            names.append(name)
    views = frozenset(t.name.lower() for t in tree.find_all(exp.Table) if t.name.lower() in VIEWS)
    return GuardedQuery(
        sql=tree.sql(dialect="duckdb"), parameters=tuple(names), dialect=dialect, source=sql, views=views
    )
