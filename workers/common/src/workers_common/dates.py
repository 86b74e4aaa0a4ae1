"""Calendar dates written in text, shared by the workers' temporal rules (email, docling).

`find_explicit_dates` finds dates written with a year ("5 March 2026", "March 5, 2026",
"2026-03-05"); `day_bounds` is a calendar day in the zone of a given moment (never the
machine's zone, so TZ cannot change a result).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

__all__ = ["MONTHS", "WEEKDAYS", "ExplicitDate", "day_bounds", "find_explicit_dates"]

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
