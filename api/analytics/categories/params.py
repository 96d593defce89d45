"""What the category routes read from a request: the categories selected and the days."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from api.analytics.scope import AnalyticsSite
from api.errors import BadRequest
from ingest.category_paths import NAMED_PATH_PATTERN, normalise_path
from queries.categories import CategoryQuery


def category_query(
    site: AnalyticsSite,
    category_path: Annotated[
        str | None,
        Query(
            alias="categoryPath",
            max_length=500,
            description="A category and its subcategories; it must name one (not only `>` and blanks: "
            "400 `CATEGORY_PATH_INVALID`).",
            json_schema_extra={"pattern": NAMED_PATH_PATTERN},
        ),
    ] = None,
    days: Annotated[int, Query(ge=1, le=365, description="The last N days (site time zone).")] = 30,
) -> CategoryQuery:
    path = None
    if category_path is not None:
        path = normalise_path(category_path)
        if not path:
            raise BadRequest(
                "categoryPath must name a category such as 'Home > Kitchen'", code="CATEGORY_PATH_INVALID"
            )
    return CategoryQuery.last_days(
        site_id=site["id"],
        days=days,
        timezone=site["timezone"],
        currency=site["currency"],
        category_path=path,
    )


Category = Annotated[CategoryQuery, Depends(category_query)]
