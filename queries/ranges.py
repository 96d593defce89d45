"""Report ranges: whole days of a site's time zone, the UTC instants they span, and the lake's UTC date
partitions a query must scan to see them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Self
from zoneinfo import ZoneInfo


def range_params(site_id: str, range_start: datetime, range_end: datetime) -> dict[str, Any]:
    """Bound parameters of the instants [range_start, range_end): the instants, and the first and last
    UTC date partitions holding them (partition pruning; the instants still filter exactly)."""
    return {
        "site_id": site_id,
        "range_start": range_start,
        "range_end": range_end,
        "scan_start": range_start.astimezone(UTC).date(),
        "scan_end": (range_end - timedelta(microseconds=1)).astimezone(UTC).date(),
    }


@dataclass(frozen=True)
class LocalDays:
    """A site and whole days of its time zone, both ends included; a money card with no rows is zero
    in the site's ``currency`` (no amount when it is not given)."""

    site_id: str
    start_date: date
    end_date: date
    timezone: str = "UTC"
    currency: str | None = None

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def range_start(self) -> datetime:
        return datetime.combine(self.start_date, time.min, self.zone)

    @property
    def range_end(self) -> datetime:
        """The first instant after the last day (its local midnight)."""
        return datetime.combine(self.end_date + timedelta(days=1), time.min, self.zone)

    @classmethod
    def of_site(cls, site: Mapping[str, Any], start_date: date, end_date: date, **fields: Any) -> Self:
        """The days of a site's record (its id, time zone and currency)."""
        return cls(
            site_id=site["id"],
            start_date=start_date,
            end_date=end_date,
            timezone=site["timezone"],
            currency=site["currency"],
            **fields,
        )

    @classmethod
    def last_days(
        cls, *, site_id: str, days: int, timezone: str, now: datetime | None = None, **fields: Any
    ) -> Self:
        """The last ``days`` days of the site's time zone, today included."""
        today = (now or datetime.now(UTC)).astimezone(ZoneInfo(timezone)).date()
        return cls(
            site_id=site_id,
            start_date=today - timedelta(days=days - 1),
            end_date=today,
            timezone=timezone,
            **fields,
        )

    def bounds(self) -> tuple[datetime, datetime]:
        return self.range_start, self.range_end

    def params(self) -> dict[str, Any]:
        return range_params(self.site_id, self.range_start, self.range_end)

    def days(self) -> list[date]:
        return [
            self.start_date + timedelta(days=n) for n in range((self.end_date - self.start_date).days + 1)
        ]
