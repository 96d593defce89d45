"""Money on the read path: every amount stays a Decimal beside its own currency, never converted and
never summed across currencies; a formatted amount shows exactly its currency's ISO-4217 minor units."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Decimal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# ISO-4217 exponents that are not 2 (the list in the standard's table A.1); every other code has 2.
_EXPONENTS: dict[str, int] = {
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV",
         "XAF", "XOF", "XPF"),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}  # fmt: skip


def minor_units(currency: str) -> int:
    return _EXPONENTS.get(currency, 2)


def quantize(amount: Decimal | int | str, currency: str) -> Decimal:
    """The amount rounded (half to even, as banks do) to the currency's minor unit."""
    return Decimal(amount).quantize(Decimal(1).scaleb(-minor_units(currency)), rounding=ROUND_HALF_EVEN)


def format_amount(amount: Decimal | int | str, currency: str) -> str:
    """``1234.5 EUR`` → ``"1234.50"``, ``1234.5 JPY`` → ``"1234"``, ``1.5 KWD`` → ``"1.500"``."""
    return f"{quantize(amount, currency):f}"


class MoneyTotal(BaseModel):
    """A card's total: one amount when every row has the same currency; otherwise ``amount`` and
    ``currency`` are null, ``mixed`` is true, and the per-currency rows beside it carry the figures."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    amount: str | None
    currency: str | None
    mixed: bool


def money_total(rows: Iterable[tuple[str, Decimal]]) -> MoneyTotal:
    """The total of ``(currency, amount)`` rows, if one exists (never across currencies)."""
    by_currency: dict[str, Decimal] = {}
    for currency, amount in rows:
        by_currency[currency] = by_currency.get(currency, Decimal(0)) + Decimal(amount)
    if len(by_currency) == 1:
        ((currency, amount),) = by_currency.items()
        return MoneyTotal(amount=format_amount(amount, currency), currency=currency, mixed=False)
    return MoneyTotal(amount=None, currency=None, mixed=len(by_currency) > 1)
