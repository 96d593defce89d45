"""Category paths as Aisle stores and compares them: parts joined by `` > ``, blank parts dropped, case
kept. Ingest uses them to tell whether a path names a category at all; the category analytics to
normalise the path a caller selects (stored paths are normalised by `category_path_of` in SQL)."""

from __future__ import annotations

UNKNOWN_CATEGORY = "unknown"
SEPARATOR = " > "

_BLANK = " \t\n\f\r"
# What a path needs for normalise_path to leave a part: a character that is neither `>` nor _BLANK.
NAMED_PATH_PATTERN = r"[^> \t\n\f\r]"


def normalise_path(path: str) -> str:
    """``"Home>>Kitchen "`` → ``"Home > Kitchen"``: the form the queries compare paths in, blank parts
    dropped (as ``category_path_of`` in SQL does for stored paths); ``""`` when no part is left."""
    return SEPARATOR.join(part for part in (p.strip(_BLANK) for p in path.split(">")) if part)


def names_a_category(path: str | None) -> bool:
    """Whether a path has a part left once normalised (``' > '`` names none)."""
    return path is not None and normalise_path(path) != ""
