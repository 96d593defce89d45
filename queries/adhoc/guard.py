"""The guard of ad-hoc SQL: parse with sqlglot, transpile to DuckDB, and allow only one read-only query
over the site views, with allow-listed functions and named parameters.

The check runs on the parsed tree of the DuckDB text that will actually run (the user's query read in
its dialect, generated as DuckDB, read back), never on the text: comments, quoting and case cannot hide
anything from it. What runs is the SQL generated from the very tree that passed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, Dialects
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError, TokenError, UnsupportedError
from sqlglot.tokenizer_core import Token, TokenizerCore


class _NoCommandFallbackWarning(logging.Filter):
    """Hostile input makes sqlglot warn that it falls back to a Command; the guard refuses it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_NoCommandFallbackWarning())

# The views a query may read (queries/sql/adhoc_views.sql); nothing else in the catalog resolves.
VIEWS = ("events", "orders", "order_items", "products", "people", "sessions", "consents")

DIALECTS = tuple(sorted(d.value for d in Dialects if d.value))
DEFAULT_DIALECT = "duckdb"

_STATEMENTS = ", ".join(("SELECT", "WITH", "UNION / INTERSECT / EXCEPT", "VALUES"))
_PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# DuckDB functions a query may call (scalar, aggregate, window). Everything else is refused: no table
# functions that read files or run SQL, nothing that reads settings, the environment or the catalog.
ALLOWED_FUNCTIONS = _words(
    """
    count count_if countif sum avg mean min max any_value first last arg_min arg_max argmin argmax
    min_by max_by median mode quantile quantile_cont quantile_disc approx_count_distinct approx_quantile
    reservoir_quantile stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop covar_samp
    regr_slope regr_intercept regr_r2 entropy kurtosis skewness product fsum sumkahan favg
    string_agg group_concat listagg list array_agg histogram bool_and bool_or bit_and bit_or bit_xor
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    date_trunc datetrunc date_part datepart extract date_diff datediff date_sub datesub date_add
    strftime strptime try_strptime make_date make_time make_timestamp make_timestamptz epoch epoch_ms
    epoch_us epoch_ns to_timestamp time_bucket age last_day dayname monthname year month day hour
    minute second millisecond microsecond week weekofyear weekday dayofweek dayofmonth dayofyear
    isodow isoyear quarter yearweek era century decade millennium julian timezone current_date
    today now current_timestamp get_current_timestamp get_current_time to_years to_months to_weeks
    to_days to_hours to_minutes to_seconds to_milliseconds to_microseconds
    lower upper lcase ucase length len strlen char_length character_length octet_length concat
    concat_ws substr substring left right trim ltrim rtrim replace translate split_part string_split
    str_split string_split_regex str_split_regex regexp_matches regexp_full_match regexp_extract
    regexp_extract_all regexp_replace regexp_split_to_array contains starts_with ends_with prefix
    suffix strpos instr position lpad rpad reverse repeat ascii chr unicode initcap format printf
    md5 sha1 sha256 hash levenshtein damerau_levenshtein jaccard jaro_similarity jaro_winkler_similarity
    hamming mismatches editdist3 like_escape ilike_escape nfc_normalize strip_accents url_decode
    url_encode bit_length array_to_string list_to_string
    json_extract json_extract_path json_extract_string json_extract_path_text json_value json_exists
    json_keys json_array_length json_valid json_type json_contains json_structure json_transform
    json_object json_array json_quote to_json json json_merge_patch json_group_array json_group_object
    abs round round_even ceil ceiling floor sqrt cbrt power pow exp ln log log2 log10 sign mod trunc
    greatest least pi degrees radians sin cos tan asin acos atan atan2 gcd lcm factorial isnan isinf
    isfinite even bit_count xor divide fdiv fmod
    coalesce ifnull nullif if iff
    list_value list_pack list_extract list_element list_contains list_has list_position list_indexof
    list_sort list_reverse_sort list_distinct list_unique list_aggregate list_aggr list_concat
    list_cat list_slice list_transform list_apply list_filter list_reduce list_sum list_min list_max
    list_avg list_count list_any_value list_has_any list_has_all list_zip array_length array_contains
    array_has array_position array_sort array_distinct array_concat array_slice array_transform
    array_filter array_reduce array_extract array_value flatten range generate_series
    generate_subscripts unnest struct_extract struct_pack row map map_extract map_keys map_values
    element_at cardinality typeof try_cast cast
    """
)

# Syntax that sqlglot models as functions (casts, CASE, EXTRACT, arrays, structs, maps, JSON arrows,
# lambdas).
_ALLOWED_SYNTAX = (
    "CAST(a AS INT)",
    "TRY_CAST(a AS INT)",
    "a::DATE",
    "CASE WHEN a THEN 1 ELSE 2 END",
    "CASE a WHEN 1 THEN 2 END",
    "EXTRACT(year FROM a)",
    "[1, 2]",
    "{'a': 1}",
    "MAP {'a': 1}",
    "a -> '$.b'",
    "a ->> '$.b'",
    "a[1]",
    "a[1:2]",
    "a IN (1, 2)",
    "a BETWEEN 1 AND 2",
    "a LIKE 'b'",
    "a ILIKE 'b'",
    "a SIMILAR TO 'b'",
    "a IS DISTINCT FROM b",
    "a AT TIME ZONE 'UTC'",
    "INTERVAL 1 DAY",
    "COUNT(*)",
    "COUNT(DISTINCT a)",
    "EXISTS (SELECT 1)",
    "a AND b",
    "a OR b",
    "NOT a",
    "a COLLATE NOCASE",
    "a && b",
    "a @> b",
    "a <@ b",
    "a || b",
    "a // b",
    "a % b",
    "a ^ b",
    "a ** b",
    "a ~ 'b'",
)

# Statement kinds refused wherever they appear (also inside a CTE or a subquery).
_STATEMENT_NODES = tuple(
    getattr(exp, name)
    for name in (
        "DML",
        "DDL",
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "Command",
        "Copy",
        "Attach",
        "Detach",
        "Pragma",
        "Set",
        "Use",
        "Describe",
        "Show",
        "Summarize",
        "Install",
        "Transaction",
        "Commit",
        "Rollback",
        "Export",
        "LoadData",
        "Cache",
        "Uncache",
        "Refresh",
        "Grant",
        "Revoke",
        "Comment",
        "Analyze",
        "TruncateTable",
        "Kill",
        "Execute",
        "Into",
        "Declare",
        "SessionParameter",
    )
    if hasattr(exp, name)
)
# The only functions that may stand as a table: RANGE / GENERATE_SERIES and UNNEST.
_TABLE_FUNCTIONS = (exp.GenerateSeries, exp.Unnest, exp.Explode)
# DuckDB binds a bare name that no column answers to as one of these functions (`SELECT user`, even
# quoted as "current_schema"), whatever sqlglot reads it as: each counts as the function it calls.
_NAMES_CALLING_FUNCTIONS = {
    "current_catalog": "current_catalog",
    "current_date": "current_date",
    "current_role": "current_role",
    "current_schema": "current_schema",
    "current_time": "get_current_time",
    "current_timestamp": "get_current_timestamp",
    "current_user": "current_user",
    "localtime": "current_localtime",
    "localtimestamp": "current_localtimestamp",
    "session_user": "session_user",
    "user": "user",
}
_ROOTS = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)


class SqlError(Exception):
    """A query that cannot run: refused by the guard, invalid, too slow or too big. ``code`` is stable."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


class SqlTimeout(SqlError):
    def __init__(self, timeout_ms: int) -> None:
        super().__init__(
            "SQL_TIMEOUT",
            f"The query ran longer than {timeout_ms} ms and was stopped; narrow it (a date range on `ts`, "
            "fewer joins) or raise timeoutMs",
            {"timeoutMs": timeout_ms},
        )


@dataclass(frozen=True)
class GuardedQuery:
    """A query that passed the guard: the DuckDB SQL to run and its named parameters, in order."""

    sql: str
    parameters: tuple[str, ...] = field(default_factory=tuple)
    dialect: str = DEFAULT_DIALECT
    source: str = ""  # the text as sent, to point at positions in it
    views: frozenset[str] = frozenset()  # the site views it reads


def _refuse(
    code: str,
    message: str,
    *,
    refused: str,
    kind: str,
    node: exp.Expression | None = None,
    source: str | None = None,
) -> SqlError:
    details: dict[str, Any] = {"refused": refused, "kind": kind}
    position = _position_of(node, source) if node is not None else None
    if position:
        details["position"] = position
    return SqlError(code, message, details)


def _position_of(node: exp.Expression, source: str | None) -> dict[str, int] | None:
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


def _offset_at(text: str, position: dict[str, int]) -> int:
    """The index in ``text`` of a 1-based line and column (what :func:`position_at` gives, the other way)."""
    lines = text.split("\n")
    return sum(len(part) + 1 for part in lines[: position["line"] - 1]) + position["column"] - 1


def position_at(text: str, offset: int) -> dict[str, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    return {"line": line, "column": offset - (before.rfind("\n") + 1) + 1}


@cache
def _allowed_function_classes() -> frozenset[type]:
    """The sqlglot classes DuckDB's parser gives the allowed names and syntax. A typed node generates its
    own canonical DuckDB function, so allowing by class is as strict as allowing by name."""
    classes: set[type] = {exp.Unnest}  # UNNEST in FROM; in the select list it parses as Explode
    snippets = [*_ALLOWED_SYNTAX]
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


def function_name(node: exp.Func) -> str:
    """The function's name in lower case, as DuckDB SQL writes it."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return _typed_function_name(type(node))


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
Written = Callable[[exp.Expression], str]


def _as_written(node: exp.Expression, *, source: str | None, dialect: str = DEFAULT_DIALECT) -> str:
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


def _dialect(name: str | None) -> str:
    dialect = (name or DEFAULT_DIALECT).strip().lower()
    if dialect not in DIALECTS:
        raise SqlError(
            "SQL_DIALECT_UNKNOWN",
            f"Unknown SQL dialect '{name}'; use one sqlglot reads, e.g. duckdb, postgres, bigquery, snowflake",
            {"dialects": list(DIALECTS)},
        )
    return dialect


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


def parse_sql(sql: str, *, dialect: str) -> list[exp.Expression]:
    """The statements of ``sql`` read in ``dialect``, DuckDB's `$name` parameters read as DuckDB does."""
    parser = Dialect.get_or_raise(dialect).parser()
    return [t for t in parser.parse(_tokens(sql, dialect=dialect), sql) if t is not None]


# Statements that write, load or reach outside the query. Written with arguments sqlglot cannot read
# (EXPORT DATABASE 'dir'), they are still refused as statements, not reported as syntax errors.
_WRITING_STATEMENTS = frozenset(
    {
        "ALTER",
        "ANALYZE",
        "ATTACH",
        "BEGIN",
        "CALL",
        "CHECKPOINT",
        "COMMENT",
        "COMMIT",
        "COPY",
        "CREATE",
        "DEALLOCATE",
        "DELETE",
        "DETACH",
        "DROP",
        "EXECUTE",
        "EXPORT",
        "FORCE",
        "GRANT",
        "IMPORT",
        "INSERT",
        "INSTALL",
        "LOAD",
        "MERGE",
        "PRAGMA",
        "PREPARE",
        "RESET",
        "REVOKE",
        "ROLLBACK",
        "SET",
        "TRUNCATE",
        "UPDATE",
        "UPSERT",
        "USE",
        "VACUUM",
    }
)


def _parse(sql: str, *, dialect: str) -> list[exp.Expression]:
    try:
        return parse_sql(sql, dialect=dialect)
    except ParseError as error:
        keyword = _first_keyword(sql, dialect=dialect)
        if keyword is not None and keyword[0] in _WRITING_STATEMENTS:
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
    end = _offset_at(sql, {"line": line, "column": column})
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


def _single_statement(statements: list[exp.Expression], source: str, *, dialect: str) -> exp.Expression:
    if not statements:
        raise SqlError("SQL_EMPTY", "The query is empty; send one SELECT statement")
    if len(statements) > 1:
        raise SqlError(
            "SQL_MULTIPLE_STATEMENTS",
            f"Send one statement, not {len(statements)}; remove the ';' between them",
            {"statements": len(statements)},
        )
    tree = statements[0]
    if not isinstance(tree, _ROOTS):
        kind, position = _statement_written(tree, source, dialect=dialect)
        raise _statement_not_allowed(kind, position, node=tree, source=source)
    return tree


def _statement_not_allowed(
    kind: str,
    position: dict[str, int] | None,
    *,
    node: exp.Expression | None = None,
    source: str | None = None,
) -> SqlError:
    """SQL_STATEMENT_NOT_ALLOWED for a statement starting with ``kind``, where it was written (else
    where the node is)."""
    error = _refuse(
        "SQL_STATEMENT_NOT_ALLOWED",
        f"{kind} statements are not allowed; only read-only queries ({_STATEMENTS})",
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


def _statement_written(
    tree: exp.Expression, source: str, *, dialect: str
) -> tuple[str, dict[str, int] | None]:
    """The keyword a refused statement starts with, and where. sqlglot reads statements it does not know
    as something else (CHECKPOINT as a column, DEALLOCATE x as an alias), so its node names them wrongly;
    after a WITH clause the keyword says nothing, and the node's kind is used."""
    keyword = _first_keyword(source, dialect=dialect)
    if keyword is not None and keyword[0] != "WITH":
        return keyword
    return _statement_kind(tree), None


def _statement_kind(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return node.key.upper()


def _visible_ctes(table: exp.Table) -> set[str]:
    """The CTE names in scope where ``table`` is: all CTEs of an enclosing query's WITH when the table is
    in the query's body; only the earlier ones (and itself when RECURSIVE) when it is inside a CTE."""
    names: set[str] = set()
    child: exp.Expression = table
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


def _check_tree(tree: exp.Expression, source: str, *, written: Written | None = None) -> None:
    """Refuse what the guard does not allow anywhere in ``tree`` (parsed from ``source``); ``written``
    says how the caller wrote a refused function or parameter when ``tree`` is not their text."""
    written = written or partial(_as_written, source=source)
    allowed_classes = _allowed_function_classes()
    for node in tree.walk():
        if isinstance(node, _STATEMENT_NODES):
            kind = _statement_kind(node)
            raise _refuse(
                "SQL_STATEMENT_NOT_ALLOWED",
                f"{kind} is not allowed anywhere in the query; only read-only queries ({_STATEMENTS})",
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
            if in_from and not isinstance(node, _TABLE_FUNCTIONS):
                name = written(node)
                raise _refuse(
                    "SQL_TABLE_FUNCTION_NOT_ALLOWED",
                    f"Table function '{name}' is not allowed; read from the views: {', '.join(VIEWS)}",
                    refused=name,
                    kind="table_function",
                    node=node,
                    source=source,
                )
            allowed = (
                str(node.name).lower() in ALLOWED_FUNCTIONS
                if isinstance(node, exp.Anonymous)
                else type(node) in allowed_classes
            )
            if not allowed:
                name = written(node)
                raise _refuse(
                    "SQL_FUNCTION_NOT_ALLOWED",
                    f"Function '{name}' is not allowed; docs/sql.md lists the functions you can use",
                    refused=name,
                    kind="function",
                    node=node,
                    source=source,
                )
        elif isinstance(node, exp.Column):
            _check_bare_name(node, source)
        elif isinstance(node, (exp.Placeholder, exp.Parameter)):
            _parameter_name(node, written=written)


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
        position = _position_of(column, source)
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
    function = _NAMES_CALLING_FUNCTIONS.get(name)
    if function is None or function in ALLOWED_FUNCTIONS or column.table or _is_a_variable(column):
        return
    raise _refuse(
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
        variables: list[exp.Expression] = []
        if isinstance(parent, exp.Lambda):
            variables = parent.expressions
        elif isinstance(parent, exp.Comprehension) and parent.args.get("expression"):
            variables = list(parent.args["expression"].find_all(exp.Identifier))
        if any(v.name.lower() == name for v in variables):
            return True
        parent = parent.parent
    return False


def _check_table(table: exp.Table, source: str) -> None:
    if isinstance(table.this, exp.Func):
        return  # checked as a function in FROM
    if table.args.get("rows_from"):
        # PostgreSQL's ROWS FROM (f(...), g(...)) zips table functions; DuckDB cannot read it.
        text = " ".join(table.sql(dialect="duckdb").split())
        details: dict[str, Any] = {"unsupported": text if len(text) <= 60 else text[:57] + "..."}
        position = _position_of(table, source)
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
        raise _refuse(
            "SQL_TABLE_NOT_ALLOWED",
            f"'{qualified}' is not available: query the views by their plain names ({', '.join(VIEWS)})",
            refused=qualified,
            kind="table",
            node=table,
            source=source,
        )
    if name in VIEWS or name in _visible_ctes(table):
        return
    raise _refuse(
        "SQL_TABLE_NOT_ALLOWED",
        f"Table '{table.name}' is not available; the views are {', '.join(VIEWS)} (or a CTE of the query)",
        refused=table.name,
        kind="table",
        node=table,
        source=source,
    )


def _named(node: exp.Expression) -> str | None:
    """A parameter's name, or None for a positional one (`?`, `$1`) or one DuckDB cannot bind by name."""
    name = node.name if not isinstance(node.this, exp.Expression) else node.this.name
    return None if not name or name.isdigit() or not _PARAMETER_NAME.match(name) else name


def _parameter_name(node: exp.Expression, *, written: Written | None = None) -> str:
    name = _named(node)
    if name is None:
        shown = (written or partial(_as_written, source=None))(node)
        raise SqlError(
            "SQL_PARAMETER_UNNAMED",
            f"Use named parameters ($name in DuckDB, :name or @name in other dialects), not {shown}",
            {"refused": shown, "kind": "parameter"},
        )
    return name


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
    dialect = _dialect(dialect)
    original = _single_statement(_parse(sql, dialect=dialect), sql, dialect=dialect)
    if isinstance(original, exp.Select) and original.args.get("into"):
        raise _refuse(
            "SQL_STATEMENT_NOT_ALLOWED",
            "SELECT ... INTO creates a table and is not allowed",
            refused="INTO",
            kind="statement",
            node=original.args["into"],
            source=sql,
        )
    if dialect == "duckdb":
        _check_tree(original, sql)
    duckdb_sql = _translate(original, dialect=dialect)
    tree = _read_back(original, duckdb_sql, dialect=dialect)
    try:
        _check_tree(tree, duckdb_sql, written=partial(_as_the_caller_wrote, original, sql, dialect=dialect))
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
        name = _parameter_name(node)
        if name not in names:
            names.append(name)
    views = frozenset(t.name.lower() for t in tree.find_all(exp.Table) if t.name.lower() in VIEWS)
    return GuardedQuery(
        sql=tree.sql(dialect="duckdb"), parameters=tuple(names), dialect=dialect, source=sql, views=views
    )


def _as_the_caller_wrote(original: exp.Expression, source: str, node: exp.Expression, *, dialect: str) -> str:
    """How the caller wrote a function or parameter found in the DuckDB tree made from their query: as
    the first one of its kind in their own tree (``original``, parsed from ``source``). The DuckDB text
    says CURRENT_DATABASE for ClickHouse's currentDatabase, and `$1` for Snowflake's `$1` reads back as
    a placeholder generic SQL writes `:1`."""
    if isinstance(node, exp.Func):
        wanted = function_name(node)
        twin = next((f for f in original.find_all(exp.Func) if function_name(f) == wanted), None)
    else:
        twin = next((p for p in original.find_all(exp.Placeholder, exp.Parameter) if _named(p) is None), None)
    if twin is None:
        return _as_written(node, source=None)
    return _as_written(twin, source=source, dialect=dialect)


def _translate(original: exp.Expression, *, dialect: str) -> str:
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


def _read_back(original: exp.Expression, duckdb_sql: str, *, dialect: str) -> exp.Expression:
    """The tree of the DuckDB text made from the caller's query. When sqlglot cannot read that text back,
    a construct of the caller's dialect has no DuckDB form: SQL_UNSUPPORTED naming it, rather than a
    syntax error pointing into text the caller never wrote."""
    try:
        statements = _parse(duckdb_sql, dialect="duckdb")
    except SqlError as error:
        position = error.details.get("position")
        if dialect == "duckdb" or not position:
            raise
        culprit = _culprit(original, duckdb_sql, _offset_at(duckdb_sql, position))
        raise _untranslatable(culprit, dialect=dialect, climb=True, duckdb_sql=duckdb_sql) from None
    return _single_statement(statements, duckdb_sql, dialect="duckdb")


# Kinds of node a caller would name a construct by; a smaller part is named by the nearest of these (a
# list or struct literal is a value, not what failed to translate around it).
_CONSTRUCTS = (exp.Func, exp.Lateral, exp.Join, exp.MatchRecognize, exp.Table, exp.TableFromRows, exp.Query)
_VALUES = (exp.Array, exp.Struct)
# At most this many characters are generated while looking for the part that did not translate: each
# step down renders the node's children, and a deeply nested query must not keep the server busy.
_CULPRIT_BUDGET = 1_000_000


def _culprit(original: exp.Expression, duckdb_sql: str, offset: int) -> exp.Expression:
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
    node: exp.Expression, *, dialect: str, climb: bool = False, duckdb_sql: str | None = None
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


def locate(tree: exp.Expression, name: str | None, source: str) -> dict[str, int] | None:
    """Where a table, function or column called ``name`` first appears in ``tree`` (parsed from
    ``source``), if anywhere."""
    if not name:
        return None
    wanted = name.lower()
    for node in tree.walk():
        named = (
            isinstance(node, exp.Func)
            and wanted in (function_name(node), _as_written(node, source=source).lower())
        ) or (isinstance(node, exp.Identifier) and node.name.lower() == wanted)
        found = _position_of(node, source) if named else None
        if found:
            return found
    return None
