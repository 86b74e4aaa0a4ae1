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
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from email.utils import parsedate_to_datetime

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

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

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


def day_bounds(day: date, like: datetime) -> tuple[datetime, datetime]:
    """[start, end) of `day` in the zone of `like` (the sender's offset)."""
    start = datetime.combine(day, time(0), tzinfo=like.tzinfo)
    return start, start + timedelta(days=1)


@dataclass(frozen=True, slots=True)
class ExplicitDate:
    """A calendar date written out in text, where it was found (character offsets)."""

    day: date
    start: int
    end: int
    text: str


_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_WEEKDAY_OPT = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
_DAY_MONTH = re.compile(
    rf"\b{_WEEKDAY_OPT}(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_NAMES})\.?,?\s+(\d{{4}})\b",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    rf"\b{_WEEKDAY_OPT}({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b",
    re.IGNORECASE,
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def find_explicit_dates(text: str) -> list[ExplicitDate]:
    """Dates written with a year in words or ISO form ("5 March 2026", "March 5, 2026",
    "2026-03-05"), in order of appearance; impossible dates are skipped."""
    found: list[ExplicitDate] = []
    for pattern, order in ((_DAY_MONTH, "dmy"), (_MONTH_DAY, "mdy"), (_ISO, "ymd")):
        for match in pattern.finditer(text):
            groups = match.groups()
            try:
                if order == "dmy":
                    day = date(int(groups[2]), MONTHS[groups[1].lower()], int(groups[0]))
                elif order == "mdy":
                    day = date(int(groups[2]), MONTHS[groups[0].lower()], int(groups[1]))
                else:
                    day = date(int(groups[0]), int(groups[1]), int(groups[2]))
            except ValueError:
                continue
            if _MIN_YEAR <= day.year <= _MAX_YEAR:
                found.append(ExplicitDate(day, match.start(), match.end(), match.group()))
    found.sort(key=lambda item: (item.start, -item.end))
    out: list[ExplicitDate] = []
    for item in found:
        if not out or item.start >= out[-1].end:
            out.append(item)
    return out
