"""ISO-4217 codes and the spec's currency resolution order (event, order, site, EUR; never USD)."""

from __future__ import annotations

import pycountry

# pycountry ships the ISO-4217 list maintained by Debian's iso-codes project. Left out: the codes
# ISO gives no minor unit ("N.A." in its table), which no shop prices in: precious metals (XAU, XAG,
# XPD, XPT), units of account (XDR, XSU, XUA, the bond-market XBA-XBD), testing (XTS) and "no
# currency" (XXX). Their amounts would have no decimals to show.
NOT_MONEY = frozenset(
    {"XAG", "XAU", "XPD", "XPT", "XDR", "XSU", "XUA", "XBA", "XBB", "XBC", "XBD", "XTS", "XXX"}
)
ISO4217_CODES: frozenset[str] = frozenset(c.alpha_3 for c in pycountry.currencies) - NOT_MONEY

DEFAULT_CURRENCY = "EUR"


def is_iso4217(code: object) -> bool:
    return isinstance(code, str) and code in ISO4217_CODES


def not_a_currency(code: object) -> str:
    """Why ``code`` is refused as a currency."""
    if isinstance(code, str) and code.strip().upper() in NOT_MONEY:
        return f"'{code}' is an ISO-4217 code for no currency a shop prices in (metals, units of account, testing)"
    return f"'{code}' is not an ISO-4217 currency code (three letters, such as EUR or GBP)"


def normalise_currency(code: str) -> str:
    """Uppercase an incoming code; raises ValueError unless it is a real ISO-4217 code."""
    candidate = code.strip().upper() if isinstance(code, str) else code
    if not is_iso4217(candidate):
        raise ValueError(not_a_currency(code))
    return candidate


def resolve_currency(*candidates: object) -> str:
    """The first valid code among event, order and site currency (in that order); else EUR."""
    for candidate in candidates:
        if isinstance(candidate, str) and is_iso4217(candidate.strip().upper()):
            return candidate.strip().upper()
    return DEFAULT_CURRENCY
