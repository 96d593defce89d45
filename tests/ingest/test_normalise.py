"""Pure tests of event, order and metric normalisation: exact rows, rejection codes, the property."""

from __future__ import annotations

import json
import string
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.currency import is_iso4217
from ingest.event_names import CANONICAL_EVENT_NAMES, EVENT_FAMILIES
from ingest.events import event_log_columns, parse_event_batch, valid_event_log_columns
from ingest.metrics import metric_row
from ingest.orders import order_row
from ingest.schemas import MAX_EVENT_BYTES
from ingest.validation import Context, Rejected
from tests.ingest.event_rows import event_row, event_rows

RECEIVED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
RECEIVED_US = 1714564800000000
SITE = "11111111-1111-1111-1111-111111111111"
PRODUCT_EVENTS = (
    "product_impression", "product_click", "product_view", "product_dwell_time", "add_to_cart", "wishlist",
)  # fmt: skip


def ctx(**fields) -> Context:
    base = {"site_id": SITE, "site_currency": "GBP", "received_at": RECEIVED, "channel": "web"}
    return Context(**{**base, **fields})


def event(**fields) -> dict:
    return {"name": "page_view", "visitorId": "v-1", "sessionId": "s-1", **fields}


def rejection(raw, context: Context | None = None, make=event_row) -> tuple[str, str]:
    with pytest.raises(Rejected) as caught:
        make(raw, context or ctx())
    return caught.value.code, caught.value.reason


# --- events: the exact row --------------------------------------------------------------------------


def test_event_row_is_exact():
    raw = event(
        name="add_to_cart",
        timestamp="2024-05-01T11:00:00.25Z",
        eventId="e-1",
        journeyId="j-1",
        userId="u-1",
        entityType="product",
        entityId="p-9",
        url="https://shop.example.com/p/9",
        referrer="https://search.example.org/",
        metadata={"productItemCode": "SKU-9", "categoryPath": "Shoes/Men", "qty": 2},
        consent={"necessary": True, "analytics": True, "marketing": False},
        currency="usd",
        value="19.99",
    )
    row = event_row(raw, ctx(client_platform="ios", client_version="3.1.0", channel="mobile"))
    assert row == {
        "event_id": "e-1",
        "name": "add_to_cart",
        "ts": 1714561200250000,
        "visitor_id": "v-1",
        "session_id": "s-1",
        "journey_id": "j-1",
        "user_id": "u-1",
        "entity_type": "product",
        "entity_id": "p-9",
        "url": "https://shop.example.com/p/9",
        "referrer": "https://search.example.org/",
        "metadata": '{"productItemCode":"SKU-9","categoryPath":"Shoes/Men","qty":2}',
        "product_item_code": "SKU-9",
        "category_path": "Shoes/Men",
        "currency": "USD",
        "value": "19.990000",
        "consent_necessary": True,
        "consent_analytics": True,
        "consent_marketing": False,
        "consent_preferences": None,
        "received_at": RECEIVED_US,
        "channel": "mobile",
        "client_platform": "ios",
        "client_version": "3.1.0",
        "site_id": SITE,
        "date": "2024-05-01",
    }


def test_a_minimal_event_gets_server_time_a_fresh_id_and_empty_metadata():
    row = event_row(event(), ctx())
    assert row["ts"] == RECEIVED_US
    assert row["date"] == "2024-05-01"
    assert len(row["event_id"]) == 32 and all(c in string.hexdigits for c in row["event_id"])
    assert row["metadata"] == "{}"
    assert row["value"] is None
    assert row["currency"] == "GBP"
    assert (row["product_item_code"], row["category_path"]) == (None, None)
    assert event_row(event(), ctx())["event_id"] != row["event_id"]


def test_null_metadata_is_no_metadata_on_both_paths():
    assert event_row(event(metadata=None), ctx())["metadata"] == "{}"
    fast = parse_event_batch(orjson.dumps({"events": [event(metadata=None)]}))
    assert valid_event_log_columns(fast.events, ctx())[0]["metadata"] == ["{}"]
    code, reason = rejection(event(name="product_view", metadata=None))
    assert (code, reason) == ("MISSING_PRODUCT_CODE", "'product_view' needs metadata.productItemCode")


def test_events_sent_without_a_time_keep_their_batch_order_a_microsecond_apart():
    batch = [event(name="page_view", eventId="z"), event(name="nope"), event(name="add_to_cart", eventId="a",
             metadata={"productItemCode": "P"}), event(timestamp="2024-05-01T11:00:00Z", eventId="m")]  # fmt: skip
    rows, rejected = event_rows(batch, ctx())
    assert [i for i, _ in rejected] == [1]
    # by its place in the batch (the rejected one's included), not by id; a sent time is kept as sent
    assert [(r["event_id"], r["ts"]) for r in rows] == [
        ("z", RECEIVED_US), ("a", RECEIVED_US + 2), ("m", RECEIVED_US - 3_600_000_000)
    ]  # fmt: skip
    # the same columns from the batch path (the batch workers' msgspec decode)
    columns, _ = valid_event_log_columns(parse_event_batch(orjson.dumps({"events": [batch[0], batch[2]]})).events,
                                         ctx())  # fmt: skip
    assert columns["ts"] == [RECEIVED_US, RECEIVED_US + 1]


def test_a_batch_received_just_before_midnight_dates_each_event_by_its_own_time():
    midnight = datetime(2024, 5, 2, tzinfo=UTC)
    rows, _ = event_rows([event(), event(), event()], ctx(received_at=midnight - timedelta(microseconds=2)))
    assert [(r["ts"] - RECEIVED_US, r["date"]) for r in rows] == [
        (43_199_999_998, "2024-05-01"), (43_199_999_999, "2024-05-01"), (43_200_000_000, "2024-05-02")
    ]  # fmt: skip


def test_date_is_the_utc_date_and_naive_timestamps_are_utc():
    # 01:30 at +02:00 is 23:30 UTC of the day before.
    row = event_row(event(timestamp="2024-05-01T01:30:00+02:00"), ctx())
    assert (row["ts"], row["date"]) == (1714519800000000, "2024-04-30")
    naive = event_row(event(timestamp="2024-04-30T23:30:00"), ctx())
    assert (naive["ts"], naive["date"]) == (1714519800000000, "2024-04-30")


# --- currency: event > metadata > the order it carries > site > EUR, never USD ---------------------------


@pytest.mark.parametrize(
    ("fields", "site_currency", "expected"),
    [
        ({"currency": "chf"}, "GBP", "CHF"),
        ({"currency": " JPY "}, "GBP", "JPY"),
        ({"currency": "SEK", "metadata": {"currency": "NOK"}}, "GBP", "SEK"),
        ({"metadata": {"currency": "nok"}}, "GBP", "NOK"),
        ({}, "GBP", "GBP"),
        ({}, "gbp", "GBP"),
        ({}, "", "EUR"),
        ({}, "XXY", "EUR"),
        ({"metadata": {"currency": 978}}, "DKK", "DKK"),
        # A purchase carrying its order: the order's currency comes after the event's own.
        ({"metadata": {"order": {"orderId": "o-1", "currency": "gbp"}}}, "USD", "GBP"),
        ({"metadata": {"currency": "NOK", "order": {"currency": "GBP"}}}, "USD", "NOK"),
        ({"currency": "SEK", "metadata": {"order": {"currency": "GBP"}}}, "USD", "SEK"),
        ({"metadata": {"order": {"currency": "ABC"}}}, "USD", "USD"),  # "if valid"
        ({"metadata": {"currency": "ABC", "order": {"currency": "GBP"}}}, "USD", "GBP"),
        ({"metadata": {"order": "o-1"}}, "JPY", "JPY"),
    ],
)
def test_event_currency_resolution(fields, site_currency, expected):
    assert event_row(event(**fields), ctx(site_currency=site_currency))["currency"] == expected


@pytest.mark.parametrize("code", ["EURO", "XYZ", "us", "", "€"])
def test_event_currency_must_be_iso4217(code):
    assert rejection(event(currency=code)) == (
        "CURRENCY_NOT_ISO4217",
        f"'{code}' is not an ISO-4217 currency code (three letters, such as EUR or GBP)",
    )


@pytest.mark.parametrize("code", ["XXX", "XTS", "XAU", "xag", "XDR", "XBA", "XUA"])
def test_iso_codes_without_a_minor_unit_are_not_money(code):
    assert rejection(event(currency=code)) == (
        "CURRENCY_NOT_ISO4217",
        f"'{code}' is an ISO-4217 code for no currency a shop prices in (metals, units of account, testing)",
    )


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ({"productItemCode": True}, "metadata.productItemCode must be a string (or a whole number)"),
        ({"productItemCode": "P" * 129}, "metadata.productItemCode is longer than 128 characters"),
        (
            {"productItemCode": "P", "categoryPath": "A > " * 200},
            "metadata.categoryPath is longer than 500 characters",
        ),
    ],
)
def test_product_codes_and_category_paths_are_bounded(metadata, reason):
    assert rejection(event(name="product_view", metadata=metadata))[1] == reason


def test_a_product_code_written_as_a_number_is_kept_as_text():
    assert (
        event_row(event(name="product_view", metadata={"productItemCode": 12345}), ctx())["product_item_code"]
        == "12345"
    )


# --- money -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("19.99", "19.990000"),
        (19.99, "19.990000"),
        (5, "5.000000"),
        ("-0.5", "-0.500000"),
        ("0.000001", "0.000001"),
        ("1E+2", "100.000000"),
        ("1.2300000", "1.230000"),
        ("1." + "0" * 40, "1.000000"),  # more zeros than decimal128(24, 6) holds: normalised
        ("99999999999999999.999999", "99999999999999999.999999"),
        (99999999999999.9, "99999999999999.900000"),  # 15 digits: what a JSON number keeps exactly
        ("99999999999999.99", "99999999999999.990000"),  # longer: as a string
    ],
)
def test_money_is_kept_exact_at_six_decimals(value, stored):
    assert event_row(event(value=value), ctx())["value"] == stored


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("0.1234567", "AMOUNT_TOO_PRECISE"),
        (0.0000001, "AMOUNT_TOO_PRECISE"),
        ("1e17", "AMOUNT_INVALID"),
        ("-1e17", "AMOUNT_INVALID"),
        ("1E+1000000", "AMOUNT_INVALID"),  # beyond the decimal context: no arithmetic may touch it
        ("-1E+1000000", "AMOUNT_INVALID"),
        ("1E-1000000", "AMOUNT_TOO_PRECISE"),
        ("١٢", "INVALID_EVENT"),  # Python's Decimal reads other scripts' digits; a shop does not
        ("１２", "INVALID_EVENT"),
        ("1_000", "INVALID_EVENT"),
        (" 12", "INVALID_EVENT"),
        ("Infinity", "INVALID_EVENT"),
        ("NaN", "INVALID_EVENT"),
        ("lots", "INVALID_EVENT"),
        # JSON numbers past a double's 15 digits: refused, not stored as the double read (...98)
        (orjson.loads(b"99999999999999.99"), "INVALID_EVENT"),
        (orjson.loads(b"123456789012345678901234567890"), "INVALID_EVENT"),
    ],
)
def test_bad_amounts_are_rejected(value, code):
    assert rejection(event(value=value))[0] == code


# --- time: clock skew, age limits --------------------------------------------------------------------


def test_sent_at_corrects_a_client_clock_that_is_behind():
    # The client's clock is 3 h behind: it sent at 09:00 what the server received at 12:00.
    row = event_row(
        event(timestamp="2024-05-01T08:59:30Z"), ctx(sent_at=datetime(2024, 5, 1, 9, 0, tzinfo=UTC))
    )
    assert row["ts"] == 1714564770000000  # 11:59:30


def test_sent_at_corrects_a_client_clock_that_is_ahead():
    ahead = event(timestamp="2024-05-01T13:59:00Z")
    assert rejection(ahead)[0] == "TIMESTAMP_IN_FUTURE"
    row = event_row(ahead, ctx(sent_at=datetime(2024, 5, 1, 14, 0, tzinfo=UTC)))
    assert row["ts"] == 1714564740000000  # 11:59


def test_sent_at_without_timestamp_is_server_time():
    row = event_row(event(), ctx(sent_at=datetime(2024, 5, 1, 9, 0, tzinfo=UTC)))
    assert row["ts"] == RECEIVED_US


def test_naive_sent_at_is_utc():
    row = event_row(event(timestamp="2024-05-01T09:30:00Z"), ctx(sent_at=datetime(2024, 5, 1, 10, 0)))
    assert row["ts"] == RECEIVED_US - 30 * 60 * 1_000_000


def test_a_skew_correction_out_of_datetime_range_is_a_rejection_not_a_crash():
    far = ctx(sent_at=datetime(1, 1, 1, tzinfo=UTC))
    assert rejection(event(timestamp="9999-12-31T00:00:00Z"), far)[0] == "TIMESTAMP_INVALID"
    assert rejection({"name": "LCP", "value": 1, "timestamp": "9999-12-31T00:00:00Z"}, far, metric_row)[
        0
    ] == ("TIMESTAMP_INVALID")


@pytest.mark.parametrize(
    ("timestamp", "code"),
    [
        ("yesterday", "TIMESTAMP_INVALID"),
        ("2024-13-01T00:00:00Z", "TIMESTAMP_INVALID"),
        ("2024-04-24T11:59:59Z", "TIMESTAMP_TOO_OLD"),
        ("2024-05-01T12:10:01Z", "TIMESTAMP_IN_FUTURE"),
        ("2011-03-04T05:06:07Z", "TIMESTAMP_TOO_OLD"),
        # Numbers as text are unix times sent by mistake (pydantic read them as epoch seconds).
        ("1714564800", "TIMESTAMP_INVALID"),
        ("0", "TIMESTAMP_INVALID"),
        ("-1", "TIMESTAMP_INVALID"),
        (" 1714564800.5 ", "TIMESTAMP_INVALID"),
    ],
)
def test_public_timestamps_outside_the_window_are_rejected(timestamp, code):
    assert rejection(event(timestamp=timestamp))[0] == code


def test_public_timestamps_at_the_edges_of_the_window_are_kept():
    assert event_row(event(timestamp="2024-04-24T12:00:01Z"), ctx())["ts"] == 1713960001000000
    assert event_row(event(timestamp="2024-05-01T12:10:00Z"), ctx())["ts"] == RECEIVED_US + 600_000_000


def test_historical_context_accepts_old_timestamps_back_to_2000():
    old = event(timestamp="2011-03-04T05:06:07.123456Z")
    code, reason = rejection(old)
    assert code == "TIMESTAMP_TOO_OLD" and "7 days" in reason
    row = event_row(old, ctx(historical=True, channel="server"))
    assert (row["ts"], row["date"]) == (1299215167123456, "2011-03-04")
    code, reason = rejection(event(timestamp="1999-12-31T23:59:59Z"), ctx(historical=True))
    assert code == "TIMESTAMP_TOO_OLD" and "2000-01-01" in reason
    assert (
        rejection(event(timestamp="2024-05-01T12:11:00Z"), ctx(historical=True))[0] == "TIMESTAMP_IN_FUTURE"
    )


# --- names, products, categories, shape --------------------------------------------------------------


@pytest.mark.parametrize("blank", [{"visitorId": "  "}, {"sessionId": "\t"}])
def test_an_event_of_a_blank_visitor_or_session_is_refused(blank):
    # Stored, " " would be one visitor: every client sending it one person in every analysis.
    assert rejection(event(**blank)) == ("INVALID_EVENT", "visitorId and sessionId must not be blank")


def test_identify_with_a_blank_user_is_refused():
    assert rejection(event(name="identify", userId="   "))[0] == "MISSING_USER_ID"


def test_the_product_family_is_the_documented_one():
    assert set(EVENT_FAMILIES["product"]) == set(PRODUCT_EVENTS)


@pytest.mark.parametrize("name", PRODUCT_EVENTS)
def test_product_events_need_a_product_code(name):
    assert rejection(event(name=name))[0] == "MISSING_PRODUCT_CODE"
    assert rejection(event(name=name, metadata={"productItemCode": "   "}))[0] == "MISSING_PRODUCT_CODE"
    assert rejection(event(name=name, metadata={"productItemCode": ["A"]}))[0] == "MISSING_PRODUCT_CODE"
    assert rejection(event(name=name, entityId="P-1"))[0] == "MISSING_PRODUCT_CODE"
    assert (
        event_row(event(name=name, metadata={"productItemCode": " P-1 "}), ctx())["product_item_code"]
        == "P-1"
    )
    assert event_row(event(name=name, metadata={"productItemCode": 123}), ctx())["product_item_code"] == "123"


def test_other_events_do_not_need_a_product_code():
    for name in ("page_view", "update_cart", "remove_from_cart", "purchase", "search_query"):
        assert event_row(event(name=name), ctx())["product_item_code"] is None


@pytest.mark.parametrize("name", ["category_view", "category_filter"])
def test_category_path_of_category_events(name):
    def path(**fields):
        return event_row(event(name=name, **fields), ctx())["category_path"]

    assert path() == "unknown"
    assert path(metadata={"other": 1}) == "unknown"
    assert path(entityId="cat-7") == "cat-7"
    assert path(metadata={"categoryPath": "Home/Garden"}) == "Home/Garden"
    assert path(entityId="cat-7", metadata={"categoryPath": "Home/Garden"}) == "Home/Garden"
    # A path naming no category (empty, or only `>` and blanks) is none: the entity names it.
    assert path(entityId="cat-7", metadata={"categoryPath": ""}) == "cat-7"
    assert path(entityId="cat-7", metadata={"categoryPath": " > \t"}) == "cat-7"
    assert path(metadata={"categoryPath": " > "}) == " > "  # kept as sent: the queries read it as `unknown`


def test_category_path_of_other_events_is_kept_only_as_text():
    assert event_row(event(metadata={"categoryPath": "Home"}), ctx())["category_path"] == "Home"
    assert event_row(event(entityId="cat-7"), ctx())["category_path"] is None
    for name in ("page_view", "category_view"):
        with pytest.raises(Rejected) as rejected:
            event_row(event(name=name, metadata={"categoryPath": ["Home", "Kitchen"]}), ctx())
        assert rejected.value.code == "INVALID_EVENT"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (event(name="pageview"), "UNKNOWN_EVENT_NAME"),
        (event(name="PAGE_VIEW"), "UNKNOWN_EVENT_NAME"),
        (event(name=None), "UNKNOWN_EVENT_NAME"),
        (event(name=["page_view"]), "UNKNOWN_EVENT_NAME"),
        (event(name={"page_view": 1}), "UNKNOWN_EVENT_NAME"),
        ({"visitorId": "v", "sessionId": "s"}, "UNKNOWN_EVENT_NAME"),
        (event(visitorId=""), "INVALID_EVENT"),
        ({"name": "page_view", "sessionId": "s"}, "INVALID_EVENT"),
        (event(sessionId="x" * 129), "INVALID_EVENT"),
        (event(metadata=[1, 2]), "INVALID_EVENT"),
        (event(consent={"analytics": "maybe"}), "INVALID_EVENT"),
        (event(url="https://x/" + "a" * 2048), "INVALID_EVENT"),
        (event(metadata={"blob": "x" * (32 * 1024)}), "EVENT_TOO_LARGE"),
        (["page_view"], "EVENT_NOT_OBJECT"),
        ("page_view", "EVENT_NOT_OBJECT"),
        (None, "EVENT_NOT_OBJECT"),
    ],
)
def test_event_rejection_codes(raw, code):
    assert rejection(raw)[0] == code


def test_json_nested_too_deeply_to_store_is_rejected_not_a_crash():
    deep = orjson.loads(b"[" * 300 + b"]" * 300)
    assert rejection(event(metadata={"deep": deep}))[0] == "INVALID_EVENT"
    assert rejection(event(ignored=deep))[0] == "INVALID_EVENT"
    # 200 levels still fit.
    shallow = orjson.loads(b"[" * 200 + b"]" * 200)
    assert event_row(event(metadata={"ok": shallow}), ctx())["metadata"].startswith('{"ok":[[[')


def test_a_batch_keeps_the_valid_events_and_reports_the_others_by_index():
    raws = [
        event(eventId="a"),
        event(name="teleport"),
        event(eventId="b", name="product_view"),
        42,
        event(eventId="c", timestamp="nope"),
        event(eventId="d", name="product_view", metadata={"productItemCode": "P"}),
        event(eventId="e", currency="ZZZ"),
        event(eventId="f", metadata={"blob": "x" * 40_000}),
    ]
    rows, rejected = event_rows(raws, ctx())
    assert [r["event_id"] for r in rows] == ["a", "d"]
    assert [(index, r.code) for index, r in rejected] == [
        (1, "UNKNOWN_EVENT_NAME"),
        (2, "MISSING_PRODUCT_CODE"),
        (3, "EVENT_NOT_OBJECT"),
        (4, "TIMESTAMP_INVALID"),
        (6, "CURRENCY_NOT_ISO4217"),
        (7, "EVENT_TOO_LARGE"),
    ]
    assert rejected[3][1].reason.startswith("timestamp:")


# --- orders ------------------------------------------------------------------------------------------

P_ID = "8c0d4f39-0000-4000-8000-000000000001"


def order(**fields) -> dict:
    return {
        "orderId": "o-1",
        "visitorId": "v-1",
        "sessionId": "s-1",
        "total": "59.97",
        "items": [{"productItemCode": "SKU-1", "quantity": 3, "price": "19.99"}],
        **fields,
    }


def test_order_row_is_exact():
    raw = order(
        timestamp="2024-05-01T11:00:00Z",
        journeyId="j-1",
        userId="u-1",
        currency="sek",
        total=64.47,
        subtotal="59.97",
        tax="0",
        shipping=4.5,
        discount="0.000000",
        items=[
            {
                "productItemCode": "SKU-1",
                "quantity": 3,
                "price": "19.99",
                "name": "Sock",
                "categoryPath": "Socks",
            },
            {"productId": " 8C0D4F39-0000-4000-8000-00000000000A ", "quantity": 1, "price": 0.01},
        ],
        consent={"marketing": True},
    )
    assert order_row(raw, ctx()) == {
        "order_id": "o-1",
        "ts": 1714561200000000,
        "visitor_id": "v-1",
        "session_id": "s-1",
        "journey_id": "j-1",
        "user_id": "u-1",
        "currency": "SEK",
        "total": "64.470000",
        "subtotal": "59.970000",
        "tax": "0.000000",
        "shipping": "4.500000",
        "discount": "0.000000",
        "is_refund": False,
        "refund_of": None,
        "items": [
            {
                "product_item_code": "SKU-1",
                "product_id": None,
                "quantity": 3,
                "price": "19.990000",
                "name": "Sock",
                "category_path": "Socks",
            },
            {
                "product_item_code": None,
                "product_id": "8c0d4f39-0000-4000-8000-00000000000a",
                "quantity": 1,
                "price": "0.010000",
                "name": None,
                "category_path": None,
            },
        ],
        "item_count": 4,
        "consent_necessary": None,
        "consent_analytics": None,
        "consent_marketing": True,
        "consent_preferences": None,
        "received_at": RECEIVED_US,
        "channel": "web",
        "client_platform": None,
        "client_version": None,
        "site_id": SITE,
        "date": "2024-05-01",
    }


@pytest.mark.parametrize(
    ("currency", "site_currency", "expected"),
    [("chf", "GBP", "CHF"), (None, "GBP", "GBP"), (None, "", "EUR"), (None, "bad", "EUR")],
)
def test_order_currency_resolution(currency, site_currency, expected):
    raw = order() if currency is None else order(currency=currency)
    assert order_row(raw, ctx(site_currency=site_currency))["currency"] == expected


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (order(currency="EURO"), "CURRENCY_NOT_ISO4217"),
        (order(total="1.0000001"), "AMOUNT_TOO_PRECISE"),
        (order(items=[{"productId": P_ID, "quantity": 1, "price": "0.0000005"}]), "AMOUNT_TOO_PRECISE"),
        (order(tax="1e20"), "AMOUNT_INVALID"),
        (order(total="1E+1000000"), "AMOUNT_INVALID"),
        (order(items=[{"productId": P_ID, "quantity": 1, "price": "-1E+1000000"}]), "AMOUNT_INVALID"),
        (order(total="1_000"), "INVALID_ORDER"),
        (order(orderId="   "), "INVALID_ORDER"),
        (order(visitorId="  "), "INVALID_ORDER"),
        (order(sessionId=" "), "INVALID_ORDER"),
        (order(items=[{"productId": P_ID, "quantity": "2", "price": "1"}]), "INVALID_ORDER"),
        (order(items=[{"productId": P_ID, "quantity": True, "price": "1"}]), "INVALID_ORDER"),
        (order(currency="XXX"), "CURRENCY_NOT_ISO4217"),
        (order(items=[{"quantity": 1, "price": "1"}]), "INVALID_ORDER"),
        (order(items=[{"productItemCode": "", "quantity": 1, "price": "1"}]), "INVALID_ORDER"),
        (order(items=[]), "INVALID_ORDER"),
        (order(items=[{"productId": P_ID, "quantity": -1, "price": "1"}]), "INVALID_ORDER"),
        (order(items=[{"productId": P_ID, "quantity": 1, "price": "-1"}]), "INVALID_ORDER"),
        (order(orderId=""), "INVALID_ORDER"),
        (order(total=None), "INVALID_ORDER"),
        (order(timestamp="2011-01-01T00:00:00Z"), "TIMESTAMP_TOO_OLD"),
        (order(timestamp="soon"), "INVALID_ORDER"),
        (order(timestamp="1714564800"), "INVALID_ORDER"),
        ([order()], "ORDER_NOT_OBJECT"),
    ],
)
def test_order_rejection_codes(raw, code):
    assert rejection(raw, make=order_row)[0] == code


def test_an_item_without_any_product_id_names_the_item():
    code, reason = rejection(
        order(items=[{"productId": P_ID, "quantity": 1, "price": "1"}, {"quantity": 1, "price": "1"}]),
        make=order_row,
    )
    assert code == "INVALID_ORDER"
    assert reason.startswith("items.1") and "productItemCode or productId" in reason


@pytest.mark.parametrize(
    "product_id", ["p-2", "123", "8c0d4f39-0000-4000-8000", "SKU 8c0d4f39-0000-4000-8000-000000000001"]
)
def test_an_item_product_id_is_a_uuid(product_id):
    # A shop's own id belongs in productItemCode: read as a productId it names no product the
    # product reports can find.
    code, reason = rejection(
        order(items=[{"productId": product_id, "quantity": 1, "price": "1"}]), make=order_row
    )
    assert code == "INVALID_ORDER"
    assert reason.startswith("items.0.productId") and "productItemCode" in reason


def test_historical_orders_are_accepted():
    row = order_row(order(timestamp="2011-03-04T05:06:07.123456Z"), ctx(historical=True))
    assert (row["ts"], row["date"]) == (1299215167123456, "2011-03-04")


# --- metrics -----------------------------------------------------------------------------------------


def test_metric_row_is_exact():
    raw = {
        "name": "LCP",
        "value": 2.5,
        "unit": "s",
        "timestamp": "2024-05-01T11:00:00Z",
        "visitorId": "v-1",
        "sessionId": "s-1",
        "url": "https://shop.example.com/",
        "tags": {"page": "home", "slow": True},
    }
    row = metric_row(raw, ctx(client_platform="web", client_version="1.2"))
    metric_id = row.pop("metric_id")
    assert len(metric_id) == 32
    assert row == {
        "name": "LCP",
        "value": 2.5,
        "unit": "s",
        "ts": 1714561200000000,
        "visitor_id": "v-1",
        "session_id": "s-1",
        "url": "https://shop.example.com/",
        "tags": '{"page":"home","slow":true}',
        "received_at": RECEIVED_US,
        "channel": "web",
        "client_platform": "web",
        "client_version": "1.2",
        "site_id": SITE,
        "date": "2024-05-01",
    }


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ({"name": "LCP"}, "INVALID_METRIC"),
        ({"name": "", "value": 1}, "INVALID_METRIC"),
        ({"name": "LCP", "value": "fast"}, "INVALID_METRIC"),
        ({"name": "LCP", "value": True}, "INVALID_METRIC"),  # lax pydantic read it as 1.0
        ({"name": "LCP", "value": "2.5"}, "INVALID_METRIC"),
        ({"name": "LCP", "value": 1, "tags": {"a": [1]}}, "INVALID_METRIC"),
        ({"name": "LCP", "value": 1, "timestamp": "2024-04-01T00:00:00Z"}, "TIMESTAMP_TOO_OLD"),
        (7, "METRIC_NOT_OBJECT"),
    ],
)
def test_metric_rejection_codes(raw, code):
    assert rejection(raw, make=metric_row)[0] == code


# --- property: valid events never fail with anything but Rejected, and keep their id ------------------

IDS = st.text(alphabet=st.characters(categories=("L", "N", "P", "S")), min_size=1, max_size=128)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)


def json_containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)


JSON = st.recursive(JSON_LEAVES, json_containers, max_leaves=12)
# Wire strings are whitespace-stripped (str_strip_whitespace), metadata keys included.
KEYS = st.text(alphabet=st.characters(categories=("L", "N", "P", "S")), max_size=12)
OFFSETS = st.integers(min_value=-7 * 24 * 3600 + 1, max_value=599)


@st.composite
def valid_events(draw) -> tuple[dict, Context, set[str]]:
    """An event valid in shape, the context it arrives in, and the codes it may still be rejected with
    (a timestamp skewed without sentAt to correct it, or a currency that is not ISO-4217)."""
    name = draw(st.sampled_from(sorted(CANONICAL_EVENT_NAMES)))
    metadata = draw(st.dictionaries(KEYS, JSON, max_size=4))
    if name in PRODUCT_EVENTS:
        metadata["productItemCode"] = draw(IDS)
    raw = {
        "name": name,
        "eventId": draw(IDS),
        "visitorId": draw(IDS),
        "sessionId": draw(IDS),
        "metadata": metadata,
    }
    allowed: set[str] = set()
    sent_at = None
    if draw(st.booleans()):
        skew = draw(st.integers(min_value=-3600, max_value=3600))
        moment = RECEIVED + timedelta(seconds=draw(OFFSETS), microseconds=draw(st.integers(0, 999_999)))
        raw["timestamp"] = (moment - timedelta(seconds=skew)).isoformat()
        if draw(st.booleans()):
            sent_at = RECEIVED - timedelta(seconds=skew)
        else:
            allowed |= {"TIMESTAMP_IN_FUTURE", "TIMESTAMP_TOO_OLD"}
    for field in ("journeyId", "userId", "entityId"):
        if draw(st.booleans()):
            raw[field] = draw(IDS)
    if name == "identify":  # it links the visitor to a user: valid only with one
        raw.setdefault("userId", draw(IDS))
    if draw(st.booleans()):
        raw["value"] = str(
            draw(st.decimals(min_value=-(10**16), max_value=10**16, places=draw(st.integers(0, 6))))
        )
    if draw(st.booleans()):
        raw["currency"] = draw(st.sampled_from(["EUR", "usd", "gbp", "JPY", "XYZ", "nope"]))
        if raw["currency"] in ("XYZ", "nope"):
            allowed.add("CURRENCY_NOT_ISO4217")
    if draw(st.booleans()):
        raw["consent"] = {"analytics": draw(st.booleans()), "marketing": draw(st.none() | st.booleans())}
    return raw, ctx(sent_at=sent_at, site_currency=draw(st.sampled_from(["EUR", "GBP", "", "xx"]))), allowed


@settings(max_examples=300, deadline=None)
@given(valid_events())
def test_event_row_only_rejects_and_keeps_the_given_event_id(case):
    raw, context, allowed = case
    try:
        row = event_row(raw, context)
    except Rejected as rejected:
        assert rejected.code in allowed, (rejected.code, rejected.reason)
        return
    assert row["event_id"] == raw["eventId"]
    assert row["name"] == raw["name"]
    assert is_iso4217(row["currency"])
    assert RECEIVED_US - 7 * 24 * 3600 * 1_000_000 < row["ts"] <= RECEIVED_US + 600 * 1_000_000
    assert orjson.loads(row["metadata"]) == raw["metadata"]
    if "value" in raw:
        assert Decimal(row["value"]) == Decimal(raw["value"])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(valid_events(), min_size=1, max_size=5), st.sampled_from([None, "page_vieww", 7]))
def test_the_one_call_batch_path_gives_the_per_event_answer(cases, odd_name):
    """The route's fast path (the whole body validated at once) and the per-event path agree on
    every row and every rejection; a batch the fast path cannot take whole goes per event."""
    raws = [raw for raw, _, _ in cases]
    if odd_name is not None:
        raws.append(event(name=odd_name))
    body = orjson.dumps({"events": raws})
    context = cases[0][1]
    fast = parse_event_batch(body)
    per_event = event_log_columns(orjson.loads(body)["events"], context)
    if odd_name is not None:
        assert fast is None
        assert per_event[1][-1][0] == len(raws) - 1
        return
    assert fast is not None

    def comparable(result):
        rows, rejected = result
        return rows, [(index, exc.code, exc.reason) for index, exc in rejected]

    assert comparable(valid_event_log_columns(fast.events, context)) == comparable(per_event)


# Forms pydantic reads and the fast path leaves to it (or reads alike): any of them may send a body
# per event, and wherever the fast path does take one, both paths must give the same answer.
WIDER_FORMS = st.sampled_from([
    {"value": 19.99}, {"value": 12345678901.123456}, {"value": 1e3}, {"value": 7}, {"value": " 12 "},
    {"value": "NaN"}, {"value": "1e3"}, {"value": True}, {"value": 10**20},
    {"timestamp": "2024-05-01T11:59:59.1234567Z"}, {"timestamp": "2024-05-01T11:59:59.9999995Z"},
    {"timestamp": "2024-05-01"}, {"timestamp": 1714564700}, {"timestamp": "2024-05-01 11:59:59Z"},
    {"timestamp": "2024-05-01t11:59:59z"}, {"timestamp": "2024-05-01T11:59Z"}, {"timestamp": "2024-02-30T11:59:59Z"},
    {"timestamp": "2024-05-01T11:59:59+0200"}, {"timestamp": "2024-05-01T11:59:59.5"},
    {"consent": {"analytics": "yes"}}, {"consent": {"analytics": 1}}, {"consent": None}, {"consent": {}},
    {"visitor_id": "snake"}, {"event_id": "snake-id"}, {"metadata": None}, {"metadata": {}},
    {"metadata": {"big": 10**20}}, {"metadata": {"productItemCode": 12}}, {"entityId": None}, {"url": None},
    {"currency": None}, {"sentAt": "ignored inside an event"},
])  # fmt: skip


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(valid_events(), WIDER_FORMS), min_size=1, max_size=4))
def test_wider_forms_give_the_per_event_answer_on_either_path(cases):
    raws = [{**raw, **form} for (raw, _, _), form in cases]
    context = cases[0][0][1]
    body = json.dumps({"events": raws}).encode()  # orjson writes no integer beyond 64 bits
    fast = parse_event_batch(body)
    per_event = event_log_columns(json.loads(body)["events"], context)
    if fast is not None:
        rows, rejected = valid_event_log_columns(fast.events, context)
        assert (rows, [(i, e.code, e.reason) for i, e in rejected]) == (
            per_event[0],
            [(i, e.code, e.reason) for i, e in per_event[1]],
        )


def test_the_fast_path_takes_what_storefronts_send_and_leaves_the_rest():
    plain = event(timestamp="2024-05-01T11:59:59.123Z", value="19.99", consent={"analytics": True})
    assert parse_event_batch(orjson.dumps({"events": [plain], "sentAt": "2024-05-01T12:00:00Z"})) is not None
    assert parse_event_batch(orjson.dumps({"events": [event(value=7)]})) is not None
    empty_consent = orjson.dumps({"events": [event(consent={}), event(consent={"analytics": False})]})
    fast_rows, _ = valid_event_log_columns(parse_event_batch(empty_consent).events, ctx())
    per_event_rows, _ = event_log_columns(orjson.loads(empty_consent)["events"], ctx())
    assert fast_rows["consent_analytics"] == per_event_rows["consent_analytics"] == [None, False]
    assert fast_rows["consent_marketing"] == per_event_rows["consent_marketing"] == [None, None]
    snake_case = {"name": "page_view", "visitor_id": "v-1", "sessionId": "s-1"}  # pydantic reads it by name
    assert parse_event_batch(orjson.dumps({"events": [snake_case]})) is None
    for odd in (
        {"value": 19.99},
        {"timestamp": "2024-05-01T11:59:59.1234567Z"},
        {"consent": {"analytics": "yes"}},
    ):
        assert parse_event_batch(orjson.dumps({"events": [event(**odd)]})) is None, odd


def test_bodies_that_may_hold_an_oversized_event_go_per_event():
    big = event(metadata={"text": "x" * MAX_EVENT_BYTES})
    assert parse_event_batch(orjson.dumps({"events": [event()]})) is not None
    assert parse_event_batch(orjson.dumps({"events": [big]})) is None
    assert parse_event_batch(orjson.dumps({"events": [event(visitorId="")]})) is None
    assert parse_event_batch(b'{"events": [') is None


@pytest.mark.parametrize(
    "body",
    [
        b'{"events":[{"name":"page_view","visitorId":"v","sessionId":"s","metadata":{"a":'
        + b"[" * 15000
        + b"]" * 15000
        + b"}}]}",
        b'{"events":[{"name":"page_view","visitorId":"\xff\xfe","sessionId":"s"}]}'.decode(
            "unicode_escape"
        ).encode("latin-1"),
        b'{"events":' + b"[" * 15000 + b"]" * 15000 + b"}",
    ],
    ids=["metadata nested past the recursion limit", "invalid UTF-8", "nested events"],
)
def test_hostile_bodies_go_per_event_instead_of_raising(body):
    assert parse_event_batch(body) is None
