from decimal import Decimal

import pytest

from queries.money import format_amount, minor_units, money_total, per_unit


@pytest.mark.parametrize(("currency", "units"), [("JPY", 0), ("EUR", 2), ("USD", 2), ("KWD", 3), ("CLF", 4)])
def test_minor_units_follow_iso_4217(currency, units):
    assert minor_units(currency) == units


def test_amounts_are_formatted_with_their_own_minor_units():
    assert format_amount(Decimal("1234.5"), "EUR") == "1234.50"
    assert format_amount(Decimal("1234.5"), "JPY") == "1234"
    assert format_amount(Decimal("1235.5"), "JPY") == "1236"
    assert format_amount(Decimal("1.5"), "KWD") == "1.500"


def test_a_total_over_one_currency_is_a_number():
    total = money_total([("EUR", Decimal("10.10")), ("EUR", Decimal("0.90"))])
    assert total.model_dump(by_alias=True) == {"amount": "11.00", "currency": "EUR", "mixed": False}


def test_a_total_over_several_currencies_is_never_merged():
    total = money_total([("EUR", Decimal("10")), ("JPY", Decimal("1000"))])
    assert total.model_dump(by_alias=True) == {"amount": None, "currency": None, "mixed": True}


def test_no_rows_is_no_total_and_not_mixed():
    assert money_total([]).model_dump(by_alias=True) == {"amount": None, "currency": None, "mixed": False}


# The largest sums the lake holds: 2,000 lines of 10^6 units at just under 10^17, ~2e26 (29+ digits
# with cents; the default decimal context keeps 28).
HUGE = Decimal("199999999999999998000000000.123456")


def test_sums_beyond_28_digits_are_formatted_exactly():
    assert format_amount(HUGE, "EUR") == "199999999999999998000000000.12"
    assert (
        format_amount(Decimal("199999999999999998000000000123.456"), "JPY")
        == "199999999999999998000000000123"
    )


def test_sums_beyond_28_digits_add_and_divide_exactly():
    total = money_total([("EUR", HUGE), ("EUR", HUGE)])
    assert total.amount == "399999999999999996000000000.25"
    assert (
        per_unit(Decimal("399999999999999996000000000.246912"), 2, "EUR") == "199999999999999998000000000.12"
    )
    assert per_unit(HUGE, 0, "EUR") == "0.00"
