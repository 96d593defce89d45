"""The correlation report's answer: `queries.correlations.Correlations`."""

from __future__ import annotations

from queries.correlations import Correlations, CorrelationTotals, EventCorrelation

__all__ = ["CorrelationTotals", "Correlations", "EventCorrelation"]
