"""Rates from counts: SQL returns counts, and this is the one place they become shares."""

from __future__ import annotations


def rate(part: int | float, whole: int | float) -> float:
    """part / whole rounded to 6 decimals; 0 when there is no whole (nothing to convert from)."""
    return round(part / whole, 6) if whole else 0.0
