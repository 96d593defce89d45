"""What an ad-hoc query may do: read the site views, in one of sqlglot's dialects, as one read-only
statement, calling only allow-listed functions, with named parameters, and answer at most so many rows.

The lists are the rules; :mod:`queries.adhoc.check` applies them to a parsed tree and
:mod:`queries.adhoc.sandbox` holds what a query may use (memory, threads, time).
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialects

from queries.adhoc.errors import SqlError

# The views a query may read (queries/sql/adhoc_views.sql); nothing else in the catalog resolves.
VIEWS = ("events", "orders", "order_items", "products", "people", "sessions", "consents")

DIALECTS = tuple(sorted(d.value for d in Dialects if d.value))
DEFAULT_DIALECT = "duckdb"

# How many rows an answer has at most: unless the caller says, as JSON, as CSV or Parquet.
DEFAULT_ROW_LIMIT = 10_000
MAX_JSON_ROWS = 100_000
MAX_STREAM_ROWS = 1_000_000

READ_ONLY_STATEMENTS = ", ".join(("SELECT", "WITH", "UNION / INTERSECT / EXCEPT", "VALUES"))
# A name DuckDB binds a `$name` parameter by.
PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


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
ALLOWED_SYNTAX = (
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
REFUSED_STATEMENT_NODES = tuple(
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
TABLE_FUNCTIONS = (exp.GenerateSeries, exp.Unnest, exp.Explode)

# DuckDB binds a bare name that no column answers to as one of these functions (`SELECT user`, even
# quoted as "current_schema"), whatever sqlglot reads it as: each counts as the function it calls.
NAMES_CALLING_FUNCTIONS = {
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

# What a statement may be: a query.
QUERY_ROOTS = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)


# Statements that write, load or reach outside the query. Written with arguments sqlglot cannot read
# (EXPORT DATABASE 'dir'), they are still refused as statements, not reported as syntax errors.
WRITING_STATEMENTS = frozenset(
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


def known_dialect(name: str | None) -> str:
    """``name`` (DuckDB when None) in lower case, when sqlglot reads that dialect."""
    dialect = (name or DEFAULT_DIALECT).strip().lower()
    if dialect not in DIALECTS:
        raise SqlError(
            "SQL_DIALECT_UNKNOWN",
            f"Unknown SQL dialect '{name}'; use one sqlglot reads, e.g. duckdb, postgres, bigquery, snowflake",
            {"dialects": list(DIALECTS)},
        )
    return dialect
