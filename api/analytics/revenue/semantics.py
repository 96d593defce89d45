"""What the revenue and attribution routes' descriptions share: money, ranges, touchpoints and
conversions, stated once."""

from __future__ import annotations

from queries.attribution import CLICK_NAMES, IMPRESSION_NAMES

MONEY = (
    "Money comes from orders: amounts are never converted and never summed across currencies. Every "
    "amount sits in a row with its own `currency` and is a decimal string with that currency's ISO-4217 "
    "minor units (JPY `1200`, EUR `10.50`, KWD `1.500`), rounded half to even. A card over several "
    "currencies has `amount: null`, `currency: null`, `mixed: true`; the per-currency rows beside it "
    "carry the figures; a card with nothing to total is zero in the site's currency. People are the linked user when the visitor was ever identified, else the visitor."
)

RANGE = (
    "The range is whole days of the site's time zone: `startDate`..`endDate` (inclusive; the last 30 "
    "days by default) or `days` (the last N days, today included), not both."
)

TOUCHPOINTS = (
    "Touchpoints are impressions (events " + ", ".join(f"`{n}`" for n in IMPRESSION_NAMES) + ") and "
    "clicks (" + ", ".join(f"`{n}`" for n in CLICK_NAMES) + ") whose `entityType` is `campaign`, "
    "`widget` or `recommendation` (any case) with an `entityId`, by the same person, strictly before "
    "the conversion and at most `lookbackDays` (default 30, 1-365) earlier. A conversion's touchpoints "
    "are ordered by time, then event id, and each model gives them credits that sum to 1: `first_touch` "
    "/ `last_touch` all to the first / last; `linear` 1/n each; `time_decay` weight 2^(-age / 7 days) "
    "(half-life 7 days, age = conversion time - touchpoint time), normalised; `position_based` 40% "
    "first, 40% last, 20% split evenly between the others (one touchpoint: 100%; two: 50% each). "
    "Credits are split over every touchpoint of a conversion, whatever entity it belongs to; an "
    "entity's credit is the sum of its touchpoints' credits, its revenue that credit times the order "
    "total."
)

CONVERSIONS = (
    "Conversions are orders timed in the range (refunds excluded) and `purchase` events in it that name "
    "no sale; a purchase event whose `metadata.orderId` names a sale of the site (of any date; a refund "
    "is no sale) is that same purchase, once, at the sale's time and with its money (other purchase "
    "events count as conversions without money). "
    "Touchpoints may precede the range. Attributed revenue is the sum over conversions of the entity's "
    "share (credit times order total, kept at 6 decimals), the row then rounded to the currency's minor "
    "units; `orders` / `conversions` are summed credits (fractions of conversions). Refunds are not "
    "netted from attributed revenue. `assistedConversions`: conversions with at least one touchpoint of "
    "the entity. `ctr` is clicks / impressions in the range (null without impressions)."
)
