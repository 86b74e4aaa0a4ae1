"""Absolute dates: the Date header, Received hops, and explicit dates written in a body.

Everything returns timezone-aware datetimes carrying the offset the text gave, never the
machine's local zone (so TZ cannot change a result). A Date without a zone ("-0000" or
none) is read as UTC and reported as a defect; a Date the RFC 5322 parser cannot read
gets a second chance as ISO 8601 or a numeric day/month reading, where both day-first and
month-first candidates come back when both are valid (the missing_date ambiguity lists
them).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from email.utils import parsedate_to_datetime

from workers_common.dates import MONTHS, WEEKDAYS, ExplicitDate, day_bounds, find_explicit_dates

__all__ = [
    "MONTHS",
    "WEEKDAYS",
    "ExplicitDate",
    "day_bounds",
    "find_explicit_dates",
    "loose_date_candidates",
    "parse_date_header",
    "received_dates",
]

_MIN_YEAR, _MAX_YEAR = 1970, 2199


def _plausible(moment: datetime) -> bool:
    return _MIN_YEAR <= moment.year <= _MAX_YEAR


def parse_date_header(raw: str) -> tuple[datetime | None, str | None]:
    """Parses an RFC 5322 date; returns (moment, defect). (None, defect) when unreadable."""
    try:
        moment = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None, "date:unparseable"
    if moment is None or not _plausible(moment):
        return None, "date:unparseable"
    if moment.tzinfo is None:
        # "-0000" means "zone unknown" (RFC 5322 §3.3): UTC is the only neutral reading.
        return moment.replace(tzinfo=UTC), "date:no_zone"
    return moment, None


def received_dates(values: list[str]) -> list[tuple[str, datetime]]:
    """The timestamps of Received headers, first hop (the bottom header) first."""
    out: list[tuple[str, datetime]] = []
    for hop, value in enumerate(reversed(values)):
        _, sep, stamp = value.rpartition(";")
        if not sep:
            continue
        moment, _ = parse_date_header(stamp)
        if moment is not None:
            out.append((f"Received hop {hop + 1}", moment))
    return out


_NUMERIC = re.compile(r"^\s*(\d{1,2})[./-](\d{1,2})[./-](\d{4})(?:[ T,]+(\d{1,2}):(\d{2}))?")


def loose_date_candidates(raw: str) -> list[tuple[str, datetime]]:
    """Readings of a Date value the RFC parser refused: ISO 8601, or numeric d/m/y with
    both day-first and month-first candidates (day-first first: it is the reading of most
    of the world's mail clients that write numeric dates). Zone-less readings are UTC."""
    text = raw.strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        pass
    else:
        if _plausible(moment):
            aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            return [(f"{aware.isoformat()} (Date header, ISO 8601)", aware)]
    match = _NUMERIC.match(text)
    if not match:
        return []
    first, second, year = int(match.group(1)), int(match.group(2)), int(match.group(3))
    clock = time(int(match.group(4) or 0) % 24, int(match.group(5) or 0) % 60)
    out: list[tuple[str, datetime]] = []
    for label, day, month in (("day-first", first, second), ("month-first", second, first)):
        try:
            moment = datetime.combine(date(year, month, day), clock, tzinfo=UTC)
        except ValueError:
            continue
        if _plausible(moment) and all(moment != seen for _, seen in out):
            out.append((f"{moment.date().isoformat()} (Date header read {label})", moment))
    return out
