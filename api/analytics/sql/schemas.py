"""Bodies and answers of the ad-hoc SQL routes and saved queries."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from api.schemas import CamelModel, StrictCamelModel, leave_out_unset
from ingest.schemas import SiteIdText
from queries.adhoc.policy import (
    DEFAULT_DIALECT,
    DEFAULT_ROW_LIMIT,
    DIALECTS,
    MAX_JSON_ROWS,
    MAX_STREAM_ROWS,
    VIEWS,
)

Format = Literal["json", "csv", "parquet"]
ParameterType = Literal["string", "integer", "number", "boolean", "date", "timestamp", "string_list"]
Scalar = str | int | float | bool | None
ParameterValue = Scalar | list[Scalar]

# The views a query reads, named from the guard's own list so the documentation follows it.
VIEW_NAMES = ", ".join(VIEWS)
QUERY_DESCRIPTION = (
    f"One read-only query (SELECT, WITH, UNION / INTERSECT / EXCEPT, VALUES) over the site views "
    f"{VIEW_NAMES}; docs/sql.md lists their columns and the functions allowed."
)
DIALECT_DESCRIPTION = (
    "The dialect the query is written in; any input dialect sqlglot reads (duckdb, postgres, bigquery, "
    "snowflake, spark, mysql, ...). It is transpiled to DuckDB."
)
FORMAT_DESCRIPTION = (
    "json (default): columns with their DuckDB types and rows as arrays; csv or parquet: a download, "
    "with `X-Aisle-Truncated` and `X-Aisle-Row-Count` headers."
)
LIMIT_DESCRIPTION = (
    f"Most rows returned (default {DEFAULT_ROW_LIMIT:,}; at most {MAX_JSON_ROWS:,} as json and "
    f"{MAX_STREAM_ROWS:,} as csv or parquet). More rows make `truncated` true."
)
TIMEOUT_DESCRIPTION = (
    "Time limit in milliseconds (default and maximum set by AISLE_SQL_DEFAULT_TIMEOUT_MS and "
    "AISLE_SQL_MAX_TIMEOUT_MS: 10 s and 60 s); a longer query is stopped with 408 `SQL_TIMEOUT`."
)
PARAMETERS_DESCRIPTION = (
    "Values of the query's named parameters ($name in DuckDB, :name or @name in other dialects), bound by "
    "the engine, never formatted into the text."
)
PARAMETER_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"
# The guard reads a dialect's name in any case, with blanks around it; the schema lists the plain names.
DIALECT_ENUM: dict[str, Any] = {"enum": list(DIALECTS)}
# `limit` past MAX_JSON_ROWS is 400 `SQL_LIMIT_TOO_LARGE` when the format is json, the default: in JSON
# Schema, `if` holds for a body without `format` too.
JSON_ROW_LIMIT: dict[str, Any] = {
    "if": {"properties": {"format": {"const": "json"}}},
    "then": {"properties": {"limit": {"maximum": MAX_JSON_ROWS}}},
}


def document_timeout_limit(schema: dict[str, Any], *, max_timeout_ms: int) -> None:
    """State the settings' largest `timeoutMs` (AISLE_SQL_MAX_TIMEOUT_MS; more is 400
    `SQL_TIMEOUT_TOO_LARGE`) as the maximum in the OpenAPI schema of the bodies that take one."""
    components = schema.get("components", {}).get("schemas", {})
    for name in ("SqlQueryIn", "SavedQueryRun"):
        timeout = components[name]["properties"]["timeoutMs"]
        for branch in timeout.get("anyOf", [timeout]):
            if branch.get("type") == "integer":
                branch["maximum"] = max_timeout_ms


class RunOptions(StrictCamelModel):
    model_config = ConfigDict(json_schema_extra=JSON_ROW_LIMIT)

    format: Format = Field(default="json", description=FORMAT_DESCRIPTION)
    limit: int | None = Field(default=None, ge=1, le=MAX_STREAM_ROWS, description=LIMIT_DESCRIPTION)
    timeout_ms: int | None = Field(default=None, ge=100, description=TIMEOUT_DESCRIPTION)


class SqlQueryIn(RunOptions):
    site_id: SiteIdText = Field(
        description="The site whose views the query reads; it must be your organisation's."
    )
    query: str = Field(min_length=1, max_length=100_000, description=QUERY_DESCRIPTION)
    dialect: str = Field(
        default=DEFAULT_DIALECT, description=DIALECT_DESCRIPTION, json_schema_extra=DIALECT_ENUM
    )
    parameters: dict[str, ParameterValue] = Field(default_factory=dict, description=PARAMETERS_DESCRIPTION)


class SqlColumn(CamelModel):
    name: str
    type: str = Field(
        description="The DuckDB type, e.g. VARCHAR, BIGINT, DECIMAL(38,6), TIMESTAMP WITH TIME ZONE."
    )


class SqlResultOut(CamelModel):
    """A json answer. Decimals (money) are strings, times ISO 8601 UTC, intervals ISO 8601 durations,
    bytes base64; lists and structs nest. Integers are numbers, except in a column of 64-bit or wider
    integers holding one past +-(2^53 - 1), which JavaScript would round: there every such integer of the
    column is a string of its digits."""

    columns: list[SqlColumn]
    rows: list[list[Any]] = Field(description="One array per row, values in column order.")
    row_count: int
    truncated: bool = Field(description="True when the query had more rows than `limit`.")
    elapsed_ms: float


class SavedQueryParameter(StrictCamelModel):
    name: str = Field(pattern=PARAMETER_NAME, description="As written in the query after $, : or @.")
    type: ParameterType = Field(
        default="string",
        description="How a value is checked and bound: string, integer, number, boolean, date (YYYY-MM-DD), "
        "timestamp (ISO 8601 with offset) or string_list (for `list_contains($p, col)`).",
    )
    required: bool = Field(default=True, description="A run must give a value unless false.")
    default: ParameterValue = Field(
        default=None, description="Used when a run gives no value (required: false)."
    )
    nullable: bool = Field(
        default=False,
        description="A run may send `null`, bound as SQL NULL, only when true; `null` is never the default.",
    )
    description: str | None = Field(default=None, max_length=2000)


class SavedQueryCreate(StrictCamelModel):
    site_id: SiteIdText = Field(description="The site the query belongs to; it must be your organisation's.")
    name: str = Field(min_length=1, max_length=200, description="Unique within the site.")
    description: str | None = Field(default=None, max_length=2000)
    query: str = Field(min_length=1, max_length=100_000, description=QUERY_DESCRIPTION)
    dialect: str = Field(
        default=DEFAULT_DIALECT, description=DIALECT_DESCRIPTION, json_schema_extra=DIALECT_ENUM
    )
    parameters: list[SavedQueryParameter] = Field(
        default_factory=list,
        max_length=50,
        description="Every named parameter the query uses, declared once.",
    )


class SavedQueryUpdate(StrictCamelModel):
    """Partial update: fields left out keep their value; `description: null` clears the description.
    The query is checked again with its (new or kept) dialect and parameters."""

    model_config = ConfigDict(json_schema_extra=leave_out_unset)

    # `X | SkipJsonSchema[None]`: null is read (to answer that it cannot be null) but never documented.
    # The bounds go on X itself: on the union pydantic writes them under the wrong names in the schema.
    name: Annotated[str, Field(min_length=1, max_length=200)] | SkipJsonSchema[None] = None
    description: str | None = Field(default=None, max_length=2000)
    query: Annotated[str, Field(min_length=1, max_length=100_000)] | SkipJsonSchema[None] = None
    dialect: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=DIALECT_ENUM)
    parameters: Annotated[list[SavedQueryParameter], Field(max_length=50)] | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _required_fields_are_not_null(self) -> SavedQueryUpdate:
        nulls = [
            name
            for name in ("name", "query", "dialect", "parameters")
            if name in self.model_fields_set and getattr(self, name) is None
        ]
        if nulls:
            raise ValueError(f"Leave out a field to keep its value; it cannot be null: {', '.join(nulls)}")
        return self


class SavedQueryOut(CamelModel):
    id: str
    site_id: str
    name: str
    description: str | None
    query: str
    dialect: str
    parameters: list[SavedQueryParameter]
    created_by: str | None = Field(description="The user who created it.")
    created_at: datetime
    updated_at: datetime


class SavedQueryRun(RunOptions):
    parameters: dict[str, ParameterValue] = Field(
        default_factory=dict,
        description="Values by parameter name; declared defaults fill the ones left out.",
    )
