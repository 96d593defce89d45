"""The check of a parsed query against :mod:`queries.adhoc.policy`: every node of the tree, so that
comments, quoting and case hide nothing. Refusals name what was refused and where."""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from queries.adhoc.errors import SqlError
from queries.adhoc.parse import Written, as_written, parameter_name, position_of, refuse, statement_kind
from queries.adhoc.policy import (
    ALLOWED_FUNCTIONS,
    ALLOWED_SYNTAX,
    NAMES_CALLING_FUNCTIONS,
    READ_ONLY_STATEMENTS,
    REFUSED_STATEMENT_NODES,
    TABLE_FUNCTIONS,
    VIEWS,
)


@cache
def _allowed_function_classes() -> frozenset[type]:
    """The sqlglot classes DuckDB's parser gives the allowed names and syntax. A typed node generates its
    own canonical DuckDB function, so allowing by class is as strict as allowing by name."""
    classes: set[type] = {exp.Unnest}  # UNNEST in FROM; in the select list it parses as Explode
    snippets = [*ALLOWED_SYNTAX]
    for name in ALLOWED_FUNCTIONS:
        snippets += [f"{name}()", f"{name}(a)", f"{name}(a, b)", f"{name}(a, b, c)"]
    for snippet in snippets:
        try:
            tree = sqlglot.parse_one(f"SELECT {snippet}", read="duckdb")
        except (ParseError, TokenError):
            continue
        classes.update(
            type(n) for n in tree.walk() if isinstance(n, exp.Func) and not isinstance(n, exp.Anonymous)
        )
    return frozenset(classes)


def check_tree(tree: exp.Expr, source: str, *, written: Written | None = None) -> None:
    """Refuse what the guard does not allow anywhere in ``tree`` (parsed from ``source``); ``written``
    says how the caller wrote a refused function or parameter when ``tree`` is not their text."""
    written = written or partial(as_written, source=source)
    allowed_classes = _allowed_function_classes()
    for node in tree.walk():
        if isinstance(node, REFUSED_STATEMENT_NODES):
            kind = statement_kind(node)
            raise refuse(
                "SQL_STATEMENT_NOT_ALLOWED",
                f"{kind} is not allowed anywhere in the query; only read-only queries ({READ_ONLY_STATEMENTS})",
                refused=kind,
                kind="statement",
                node=node,
                source=source,
            )
        if isinstance(node, exp.Table):
            _check_table(node, source)
        elif isinstance(node, exp.Pivot):
            _check_pivot(node, source)
        elif isinstance(node, exp.Func):
            in_from = isinstance(node.parent, exp.Table | exp.Lateral) and node.arg_key == "this"
            if in_from and isinstance(node, exp.Anonymous) and node.name.lower() == "table":
                # Snowflake's TABLE(f(...)): sqlglot turns TABLE(GENERATOR(...)) into range(), other
                # functions stay wrapped in a TABLE(...) that DuckDB does not have.
                text = " ".join(node.sql(dialect="duckdb").split())
                raise SqlError(
                    "SQL_UNSUPPORTED",
                    "TABLE(...) around a table function has no DuckDB equivalent; call the function in FROM "
                    "itself (FROM unnest([1, 2]), FROM range(10))",
                    {"unsupported": text if len(text) <= 60 else text[:57] + "..."},
                )
            if in_from and not isinstance(node, TABLE_FUNCTIONS):
                raise _function_refused(node, written(node), source, in_from=True)
            allowed = (
                str(node.name).lower() in ALLOWED_FUNCTIONS
                if isinstance(node, exp.Anonymous)
                else type(node) in allowed_classes
            )
            if not allowed:
                raise _function_refused(node, written(node), source, in_from=False)
        elif isinstance(node, exp.Column):
            _check_bare_name(node, source)
        elif isinstance(node, (exp.Placeholder, exp.Parameter)):
            check_parameter(node, written=written)


def _function_refused(node: exp.Func, name: str, source: str, *, in_from: bool) -> SqlError:
    """The refusal of a function the policy does not allow: as a table (in FROM) or anywhere else."""
    if in_from:
        code, kind = "SQL_TABLE_FUNCTION_NOT_ALLOWED", "table_function"
        message = f"Table function '{name}' is not allowed; read from the views: {', '.join(VIEWS)}"
    else:
        code, kind = "SQL_FUNCTION_NOT_ALLOWED", "function"
        message = f"Function '{name}' is not allowed; docs/sql.md lists the functions you can use"
    return refuse(code, message, refused=name, kind=kind, node=node, source=source)


def _check_table(table: exp.Table, source: str) -> None:
    if isinstance(table.this, exp.Func):
        return  # checked as a function in FROM
    if table.args.get("rows_from"):
        # PostgreSQL's ROWS FROM (f(...), g(...)) zips table functions; DuckDB cannot read it.
        text = " ".join(table.sql(dialect="duckdb").split())
        details: dict[str, Any] = {"unsupported": text if len(text) <= 60 else text[:57] + "..."}
        position = position_of(table, source)
        if position:
            details["position"] = position
        raise SqlError(
            "SQL_UNSUPPORTED",
            "ROWS FROM (...) has no DuckDB equivalent; call the table function in FROM itself "
            "(FROM generate_series(1, 3)), or join one per function",
            details,
        )
    name = table.name.lower()
    qualified = ".".join(p.name for p in table.parts)
    if table.args.get("db") or table.args.get("catalog") or not isinstance(table.this, exp.Identifier):
        raise refuse(
            "SQL_TABLE_NOT_ALLOWED",
            f"'{qualified}' is not available: query the views by their plain names ({', '.join(VIEWS)})",
            refused=qualified,
            kind="table",
            node=table,
            source=source,
        )
    if name in VIEWS or name in _visible_ctes(table):
        return
    raise refuse(
        "SQL_TABLE_NOT_ALLOWED",
        f"Table '{table.name}' is not available; the views are {', '.join(VIEWS)} (or a CTE of the query)",
        refused=table.name,
        kind="table",
        node=table,
        source=source,
    )


def _visible_ctes(table: exp.Table) -> set[str]:
    """The CTE names in scope where ``table`` is: all CTEs of an enclosing query's WITH when the table is
    in the query's body; only the earlier ones (and itself when RECURSIVE) when it is inside a CTE."""
    names: set[str] = set()
    child: exp.Expr = table
    parent = table.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = parent.expressions
            index = next((i for i, c in enumerate(ctes) if c is child), len(ctes))
            visible = ctes[: index + 1] if parent.args.get("recursive") else ctes[:index]
            names.update(c.alias_or_name.lower() for c in visible)
        else:
            with_ = parent.args.get("with_") or parent.args.get("with")
            if isinstance(with_, exp.With) and with_ is not child:
                names.update(c.alias_or_name.lower() for c in with_.expressions)
        child, parent = parent, parent.parent
    return names


def _check_pivot(pivot: exp.Pivot, source: str) -> None:
    """Refuse a PIVOT that does not list the values it turns into columns. DuckDB finds them by running
    statements of its own before the query (it creates a type of the distinct values), which the
    sandbox's one-SELECT rule refuses at run time with no word of PIVOT; IN (ANY) and IN (SELECT ...)
    of other dialects have no DuckDB form at all."""
    if pivot.args.get("unpivot"):
        return
    # DuckDB's own form, PIVOT t ON col IN (...) USING agg, keeps the table in `this`; the SQL standard's
    # t PIVOT (agg FOR col IN (...)) hangs off the table and keeps its columns in `fields`.
    simplified = pivot.args.get("this") is not None
    for on in pivot.expressions if simplified else pivot.args.get("fields") or []:
        values = on.expressions if isinstance(on, exp.In) else []
        listed = (
            values
            and not on.args.get("query")
            and not on.args.get("field")
            and not any(v.find(exp.Query, exp.PivotAny) for v in values)
        )
        if listed:
            continue
        column = on.this if isinstance(on, exp.In) else on
        written = " ".join(column.sql(dialect="duckdb").split())
        example = f"ON {written} IN ('a', 'b')" if simplified else f"FOR {written} IN ('a', 'b')"
        details: dict[str, Any] = {"unsupported": f"PIVOT {'ON' if simplified else 'FOR'} {written}"[:60]}
        position = position_of(column, source)
        if position:
            details["position"] = position
        raise SqlError(
            "SQL_UNSUPPORTED",
            f"PIVOT needs an IN (...) list of the values of {written} to turn into columns ({example}); "
            "without one DuckDB runs statements of its own to find them, which is not allowed here",
            details,
        )


def _check_bare_name(column: exp.Column, source: str) -> None:
    """Refuse a bare name DuckDB may call a function for, unless that function is allowed. Which column
    a name finds is DuckDB's to decide, so any such name is refused, not only one no column answers to;
    qualified (`t."user"`) it always names a column."""
    name = column.name.lower()
    function = NAMES_CALLING_FUNCTIONS.get(name)
    if function is None or function in ALLOWED_FUNCTIONS or column.table or _is_a_variable(column):
        return
    raise refuse(
        "SQL_FUNCTION_NOT_ALLOWED",
        f"Function '{name}' is not allowed (DuckDB reads a bare {name} as a call of {function}); docs/sql.md "
        f'lists the functions you can use. For a column of that name, qualify it with its table: t."{name}"',
        refused=name,
        kind="function",
        node=column,
        source=source,
    )


def _is_a_variable(column: exp.Column) -> bool:
    """Whether the name is the variable of an enclosing list comprehension or lambda there."""
    name = column.name.lower()
    parent = column.parent
    while parent is not None:
        variables: list[exp.Expr] = []
        if isinstance(parent, exp.Lambda):
            variables = parent.expressions
        elif isinstance(parent, exp.Comprehension) and parent.args.get("expression"):
            variables = list(parent.args["expression"].find_all(exp.Identifier))
        if any(v.name.lower() == name for v in variables):
            return True
        parent = parent.parent
    return False


def check_parameter(node: exp.Expr, *, written: Written | None = None) -> str:
    """The name of a parameter, or SQL_PARAMETER_UNNAMED for a positional one."""
    name = parameter_name(node)
    if name is None:
        shown = (written or partial(as_written, source=None))(node)
        raise SqlError(
            "SQL_PARAMETER_UNNAMED",
            f"Use named parameters ($name in DuckDB, :name or @name in other dialects), not {shown}",
            {"refused": shown, "kind": "parameter"},
        )
    return name
