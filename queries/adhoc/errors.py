"""The error of ad-hoc SQL: a query that cannot run, whichever step found it. Its ``code`` is stable:
the API answers it as the error envelope's code."""

from __future__ import annotations

from typing import Any


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


def memory_error(memory_limit: str) -> SqlError:
    """SQL_MEMORY_LIMIT: DuckDB ran out of its limit, or the worker passed its ceiling."""
    return SqlError(
        "SQL_MEMORY_LIMIT",
        f"The query needed more than its memory limit ({memory_limit}); aggregate more or select fewer "
        "columns and rows",
        {"memoryLimit": memory_limit},
    )
