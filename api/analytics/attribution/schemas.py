"""The attribution area's wire: ``queries.attribution``'s report of one conversion, returned as it is."""

from __future__ import annotations

from queries.attribution import EventAttribution

__all__ = ["EventAttribution"]
