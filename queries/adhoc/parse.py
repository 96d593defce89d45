"""Reading the caller's text: tokens (DuckDB's ``$name`` parameters as DuckDB reads them), statements,
syntax errors in words with where they are, and positions and names as the caller wrote them."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenizerCore

from queries.adhoc.errors import SqlError
from queries.adhoc.policy import (
    DEFAULT_DIALECT,
    PARAMETER_NAME,
    QUERY_ROOTS,
    READ_ONLY_STATEMENTS,
    WRITING_STATEMENTS,
)


class _NoCommandFallbackWarning(logging.Filter):
    """Hostile input makes sqlglot warn that it falls back to a Command; the guard refuses it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_NoCommandFallbackWarning())


# DuckDB opens a dollar-quoted string only with `$tag$` where the tag is empty or a name, as PostgreSQL
# does. sqlglot takes everything up to the next `$` as a tag, so `x=$a` at the end of a query read
# fine but `$a=$b`, `$a+$b` or `[$a,$b]` failed to tokenize (`a=` is no tag). Any other `$` is the
# sign of a parameter, here as in DuckDB.
_DOLLAR_QUOTE = re.compile(r"\$(?:[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*)?\$")


class _DuckDBTokenizerCore(TokenizerCore):
    __slots__ = ()

    def _scan_string(self, start: str) -> bool:
        if start == "$" and not _DOLLAR_QUOTE.match(self.sql, self._start):
            return False  # then `$` is read as a parameter's sign
        return super()._scan_string(start)


class _DuckDBTokenizer(DuckDB.Tokenizer):
    def _init_core(self) -> TokenizerCore:
        core = super()._init_core()
        # The core takes some thirty settings from the tokenizer; only the class changes.
        core.__class__ = _DuckDBTokenizerCore
        return core


def _tokens(sql: str, *, dialect: str) -> list[Token]:
    reader = Dialect.get_or_raise(dialect)
    tokenizer = _DuckDBTokenizer(dialect=reader) if dialect == "duckdb" else reader.tokenizer()
    try:
        return tokenizer.tokenize(sql)
    except TokenError as error:
        # The error says only which text was being read; where the token it failed on starts (the
        # opening quote of a string never closed) is in the tokenizer's state.
        error.start_offset = getattr(getattr(tokenizer, "_core", None), "_start", None)  # type: ignore[attr-defined]
        raise


def parse_sql(sql: str, *, dialect: str) -> list[exp.Expr]:
    """The statements of ``sql`` read in ``dialect``, DuckDB's `$name` parameters read as DuckDB does."""
    parser = Dialect.get_or_raise(dialect).parser()
    return [t for t in parser.parse(_tokens(sql, dialect=dialect), sql) if t is not None]


def statements_of(sql: str, *, dialect: str) -> list[exp.Expr]:
    """:func:`parse_sql`, with what it cannot read as a SqlError for the caller: a writing statement
    refused as one, else a syntax error saying where."""
    try:
        return parse_sql(sql, dialect=dialect)
    except ParseError as error:
        keyword = _first_keyword(sql, dialect=dialect)
        if keyword is not None and keyword[0] in WRITING_STATEMENTS:
            raise _statement_not_allowed(*keyword) from None
        raise _syntax_error(error, sql, dialect=dialect) from None
    except TokenError as error:
        raise _unreadable(error, sql, dialect=dialect) from None


def _syntax_error(error: ParseError, sql: str, *, dialect: str) -> SqlError:
    """SQL_SYNTAX_ERROR in words: the token the parser stopped at and where it starts, and what was
    expected when sqlglot says so in words."""
    first = error.errors[0] if error.errors else {}
    near = first.get("highlight") or ""
    description = first.get("description") or ""
    details: dict[str, Any] = {"dialect": dialect}
    position = _token_start(sql, line=first.get("line"), column=first.get("col"), text=near)
    if position:
        details["position"] = position
    if near:
        details["near"] = near
    where = f" at line {position['line']}, column {position['column']}" if position else ""
    # At the last token sqlglot may have wanted more after it or found it out of place; it does not say.
    at_the_end = not (first.get("end_context") or "").strip() and not description.startswith(
        "Invalid expression"
    )
    if near and at_the_end:
        message = f"Syntax error near '{near}'{where}, where the query ends"
    elif near:
        message = f"Syntax error: unexpected '{near}'{where}"
    else:
        message = f"Syntax error{where}"
    expected = _expected(description)
    return SqlError("SQL_SYNTAX_ERROR", f"{message}; {expected}" if expected else message, details)


def _expected(description: str) -> str | None:
    """sqlglot's description when it is meant for people ("Expecting )", "Expected END after CASE");
    None for those naming its internals (a Token's repr, an expression class)."""
    description = description.split(" but got ", 1)[0].strip()
    if (
        not description
        or "<" in description
        or description.startswith(("Required keyword", "Invalid expression"))
    ):
        return None
    match = re.fullmatch(r"Expect(?:ed|ing) (\W+)", description)
    if match:
        return f"expected '{match[1]}'"
    return description[0].lower() + description[1:]


def _token_start(sql: str, *, line: int | None, column: int | None, text: str) -> dict[str, int] | None:
    """Where a token starts, from the line and column sqlglot gives for its last character."""
    if not line:
        return None
    if line > sql.count("\n") + 1 or not column:
        return {"line": line, "column": column or 1}
    end = offset_at(sql, {"line": line, "column": column})
    start = end - len(text) + 1
    if text and start >= 0 and sql[start : end + 1] == text:
        return position_at(sql, start)
    return {"line": line, "column": column}


def _unreadable(error: TokenError, sql: str, *, dialect: str) -> SqlError:
    """SQL_SYNTAX_ERROR for text that cannot be split into tokens: mostly a string or quoted name that is
    never closed, said with where it opens."""
    offset = getattr(error, "start_offset", None)
    missing = re.match(r"Missing (.+?) from ", str(error.__cause__ or ""))
    details: dict[str, Any] = {"dialect": dialect}
    if offset is None or not 0 <= offset < len(sql):
        return SqlError("SQL_SYNTAX_ERROR", "Syntax error: a string or quoted name is never closed", details)
    position = details["position"] = position_at(sql, offset)
    where = f"line {position['line']}, column {position['column']}"
    if missing:
        message = f"Syntax error: the text opened at {where} is never closed; add the closing {missing[1]}"
    else:
        message = f"Syntax error: cannot read the text at {where}"
    return SqlError("SQL_SYNTAX_ERROR", message, details)


def single_statement(statements: list[exp.Expr], source: str, *, dialect: str) -> exp.Expr:
    """The one statement of ``source``, when it is a query; else the SqlError naming what it is."""
    if not statements:
        raise SqlError("SQL_EMPTY", "The query is empty; send one SELECT statement")
    if len(statements) > 1:
        raise SqlError(
            "SQL_MULTIPLE_STATEMENTS",
            f"Send one statement, not {len(statements)}; remove the ';' between them",
            {"statements": len(statements)},
        )
    tree = statements[0]
    if not isinstance(tree, QUERY_ROOTS):
        kind, position = _statement_written(tree, source, dialect=dialect)
        raise _statement_not_allowed(kind, position, node=tree, source=source)
    return tree


def _statement_not_allowed(
    kind: str,
    position: dict[str, int] | None,
    *,
    node: exp.Expr | None = None,
    source: str | None = None,
) -> SqlError:
    """SQL_STATEMENT_NOT_ALLOWED for a statement starting with ``kind``, where it was written (else
    where the node is)."""
    error = refuse(
        "SQL_STATEMENT_NOT_ALLOWED",
        f"{kind} statements are not allowed; only read-only queries ({READ_ONLY_STATEMENTS})",
        refused=kind,
        kind="statement",
        node=node,
        source=source,
    )
    if position:
        error.details["position"] = position
    return error


def _first_keyword(source: str, *, dialect: str) -> tuple[str, dict[str, int]] | None:
    """The word the text starts with, upper case, and where; None when it starts otherwise."""
    first = next(iter(_tokens(source, dialect=dialect)), None)
    if first is None or not re.fullmatch(r"[A-Za-z_]+", first.text):
        return None
    return first.text.upper(), position_at(source, first.start)


def _statement_written(tree: exp.Expr, source: str, *, dialect: str) -> tuple[str, dict[str, int] | None]:
    """The keyword a refused statement starts with, and where. sqlglot reads statements it does not know
    as something else (CHECKPOINT as a column, DEALLOCATE x as an alias), so its node names them wrongly;
    after a WITH clause the keyword says nothing, and the node's kind is used."""
    keyword = _first_keyword(source, dialect=dialect)
    if keyword is not None and keyword[0] != "WITH":
        return keyword
    return statement_kind(tree), None


def statement_kind(node: exp.Expr) -> str:
    """A statement node's kind as its keyword (``DROP``, ``PRAGMA``)."""
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return node.key.upper()


def refuse(
    code: str,
    message: str,
    *,
    refused: str,
    kind: str,
    node: exp.Expr | None = None,
    source: str | None = None,
) -> SqlError:
    """A refusal of ``refused`` (a ``kind`` of thing: table, function, statement), with where ``node`` is
    in ``source`` when the parser kept it."""
    details: dict[str, Any] = {"refused": refused, "kind": kind}
    position = position_of(node, source) if node is not None else None
    if position:
        details["position"] = position
    return SqlError(code, message, details)


def position_of(node: exp.Expr, source: str | None) -> dict[str, int] | None:
    """Line and column (1-based) of a node in the text it was parsed from, when the parser kept them."""
    # A function's identifiers are its arguments': OPENJSON(metadata) is not where `metadata` is.
    parts = (node,) if isinstance(node, exp.Func) else (node, *node.find_all(exp.Identifier))
    for part in parts:
        meta = part.meta if isinstance(part, exp.Expression) else {}
        if "start" in meta and source is not None:
            return position_at(source, meta["start"])
        if "line" in meta:
            return {"line": meta["line"], "column": meta.get("col", 1)}
    return None


def offset_at(text: str, position: dict[str, int]) -> int:
    """The index in ``text`` of a 1-based line and column (what :func:`position_at` gives, the other way)."""
    lines = text.split("\n")
    return sum(len(part) + 1 for part in lines[: position["line"] - 1]) + position["column"] - 1


def position_at(text: str, offset: int) -> dict[str, int]:
    """The 1-based line and column of ``offset`` in ``text``."""
    before = text[:offset]
    line = before.count("\n") + 1
    return {"line": line, "column": offset - (before.rfind("\n") + 1) + 1}


def locate(tree: exp.Expr, name: str | None, source: str) -> dict[str, int] | None:
    """Where a table, function or column called ``name`` first appears in ``tree`` (parsed from
    ``source``), if anywhere."""
    if not name:
        return None
    wanted = name.lower()
    for node in tree.walk():
        named = (
            isinstance(node, exp.Func)
            and wanted in (function_name(node), as_written(node, source=source).lower())
        ) or (isinstance(node, exp.Identifier) and node.name.lower() == wanted)
        found = position_of(node, source) if named else None
        if found:
            return found
    return None


def function_name(node: exp.Func) -> str:
    """The function's name in lower case, as DuckDB SQL writes it."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    # A class hashes as an object; mypy checks the class against its instances' __hash__ instead.
    return _typed_function_name(type(node))  # type: ignore[arg-type]


@cache
def _typed_function_name(kind: type[exp.Func]) -> str:
    # A class that declares no SQL name is named after itself in snake case (OpenJSON: open_j_s_o_n), a
    # name nobody writes; the generator writes the real one (OPENJSON).
    if not kind._sql_names:
        try:
            written = re.match(r"[A-Za-z_][A-Za-z0-9_]*(?=\()", kind().sql(dialect="duckdb"))
        except (SqlglotError, ValueError, TypeError):
            written = None
        if written:
            return written[0].lower()
    return kind.sql_name().lower()


# A function, or a parameter: how the caller wrote it.
Written = Callable[[exp.Expr], str]


def as_written(node: exp.Expr, *, source: str | None, dialect: str = DEFAULT_DIALECT) -> str:
    """A function's name as typed in ``source`` (``getEnv``, ``OPENJSON``) when the parser kept where it
    is, else its name in lower case; a parameter as ``dialect`` writes it (``$1``, ``?``, ``%s``)."""
    if not isinstance(node, exp.Func):
        return node.sql(dialect=dialect)
    start, end = node.meta.get("start"), node.meta.get("end")
    if source is not None and start is not None and end is not None:
        typed = source[start : end + 1].strip('"`[]')
        if re.fullmatch(r"[^\s()]+", typed):
            return typed
    return function_name(node)


def parameter_name(node: exp.Expr) -> str | None:
    """A parameter's name, or None for a positional one (`?`, `$1`) or one DuckDB cannot bind by name."""
    name = node.name if not isinstance(node.this, exp.Expression) else node.this.name
    return None if not name or name.isdigit() or not PARAMETER_NAME.match(name) else name
