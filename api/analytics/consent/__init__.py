"""Consent analytics: opt-in figures, trends, impact, the consent log and a consent gate's replay."""
