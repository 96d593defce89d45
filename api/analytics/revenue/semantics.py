"""What the revenue and attribution routes' descriptions share: money, ranges, touchpoints and
conversions, stated once."""

from __future__ import annotations

from api.descriptions import module_rules
from queries import attribution, money
from queries.attribution import CLICK_NAMES, IMPRESSION_NAMES

# Money and attribution follow the rules ``queries.money`` and ``queries.attribution`` state; the
# constants add who a person is, which event names and parameters feed them, and the range.
MONEY = (
    f"{module_rules(money)} People are the linked user when the visitor was ever identified, else the "
    "visitor."
)

RANGE = (
    "The range is whole days of the site's time zone: `startDate`..`endDate` (inclusive; the last 30 "
    "days by default) or `days` (the last N days, today included), not both."
)

IMPRESSIONS = ", ".join(f"`{n}`" for n in IMPRESSION_NAMES)
CLICKS = ", ".join(f"`{n}`" for n in CLICK_NAMES)
TOUCHPOINTS = (
    f"{module_rules(attribution, paragraphs=slice(1))}\n\n"
    f"Impressions are the events {IMPRESSIONS}; clicks the events {CLICKS}. The lookback window is "
    "`lookbackDays` days (default 30, 1-365) before the conversion."
)

CONVERSIONS = module_rules(attribution, paragraphs=slice(1, 2))
