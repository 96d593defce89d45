"""ISO-4217 codes and the spec's currency resolution order (event, order, site, EUR; never USD)."""

from __future__ import annotations

import pycountry

# pycountry ships the ISO-4217 list maintained by Debian's iso-codes project. Left out: the codes
# ISO keeps for "no currency involved" (XXX) and for testing (XTS), which no amount is in.
NOT_MONEY = frozenset({"XXX", "XTS"})
ISO4217_CODES: frozenset[str] = frozenset(c.alpha_3 for c in pycountry.currencies) - NOT_MONEY

DEFAULT_CURRENCY = "EUR"


def is_iso4217(code: object) -> bool:
    return isinstance(code, str) and code in ISO4217_CODES


def normalise_currency(code: str) -> str:
    """Uppercase an incoming code; raises ValueError unless it is a real ISO-4217 code."""
    candidate = code.strip().upper() if isinstance(code, str) else code
    if not is_iso4217(candidate):
        raise ValueError(f"'{code}' is not an ISO-4217 currency code (three letters, such as EUR or GBP)")
    return candidate


def resolve_currency(*candidates: object) -> str:
    """The first valid code among event, order and site currency (in that order); else EUR."""
    for candidate in candidates:
        if isinstance(candidate, str) and is_iso4217(candidate.strip().upper()):
            return candidate.strip().upper()
    return DEFAULT_CURRENCY
