"""Money on the read path: amounts per currency, formatted in the currency's minor units, and a card's
total.

Money comes from orders: amounts are exact decimals, never converted and never summed across
currencies. Every amount sits in a row with its own ``currency`` and is a decimal string with exactly
that currency's ISO-4217 minor units (JPY ``1200``, EUR ``10.50``, KWD ``1.500``), rounded half to even.
A card over several currencies has ``amount: null``, ``currency: null``, ``mixed: true``; the
per-currency rows beside it carry the figures; a card with nothing to total is zero in the site's
currency.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Context, Decimal

from aisle.wire import CamelModel

# ISO-4217 exponents that are not 2 (the list in the standard's table A.1); every other code has 2.
_EXPONENTS: dict[str, int] = {
    **dict.fromkeys(
        (
            "BIF",
            "CLP",
            "DJF",
            "GNF",
            "ISK",
            "JPY",
            "KMF",
            "KRW",
            "PYG",
            "RWF",
            "UGX",
            "UYI",
            "VND",
            "VUV",
            "XAF",
            "XOF",
            "XPF",
        ),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}


def minor_units(currency: str) -> int:
    return _EXPONENTS.get(currency, 2)


# Read-path arithmetic, wide enough for any sum the lake can give (DuckDB sums decimal(24, 6) as
# decimal(38, 6)): the default context keeps 28 digits, rounds sums past them and refuses to
# quantize them (a 2,000-line order at the amount limits reaches ~2e26).
MONEY_CONTEXT = Context(prec=60, rounding=ROUND_HALF_EVEN)


def quantize(amount: Decimal | int | str, currency: str) -> Decimal:
    """The amount rounded (half to even, as banks do) to the currency's minor unit."""
    return MONEY_CONTEXT.quantize(Decimal(amount), Decimal(1).scaleb(-minor_units(currency)))


def format_amount(amount: Decimal | int | str, currency: str) -> str:
    """``1234.5 EUR`` → ``"1234.50"``, ``1234.5 JPY`` → ``"1234"``, ``1.5 KWD`` → ``"1.500"``."""
    return f"{quantize(amount, currency):f}"


def per_unit(amount: Decimal | int | str, count: int, currency: str) -> str:
    """An amount divided by a count, formatted in the currency's minor units (zero when no count)."""
    return format_amount(MONEY_CONTEXT.divide(Decimal(amount), count) if count else Decimal(0), currency)


class MoneyTotal(CamelModel):
    """A card's total: one amount when every row has the same currency; otherwise ``amount`` and
    ``currency`` are null, ``mixed`` is true, and the per-currency rows beside it carry the figures."""

    amount: str | None
    currency: str | None
    mixed: bool


def money_total(rows: Iterable[tuple[str, Decimal]], *, empty_currency: str | None = None) -> MoneyTotal:
    """The total of ``(currency, amount)`` rows, if one exists (never across currencies). With no
    rows, zero in ``empty_currency`` (a site's card: its currency), else no amount."""
    by_currency: dict[str, Decimal] = {}
    for currency, amount in rows:
        by_currency[currency] = MONEY_CONTEXT.add(by_currency.get(currency, Decimal(0)), Decimal(amount))
    if not by_currency and empty_currency is not None:
        by_currency[empty_currency] = Decimal(0)
    if len(by_currency) == 1:
        ((currency, amount),) = by_currency.items()
        return MoneyTotal(amount=format_amount(amount, currency), currency=currency, mixed=False)
    return MoneyTotal(amount=None, currency=None, mixed=len(by_currency) > 1)
