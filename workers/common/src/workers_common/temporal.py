"""Relative-date phrases and self-dating, shared by the email and docling workers.

Moved here from the email worker so both share one implementation; the email worker
anchors to a message's Date header, the docling worker to a document's own date.

Relative-date phrases ("tomorrow", "next Friday", "in two weeks", "by end of month", …)
are resolved against the sender's own calendar day: the Date header's date in the
Date header's own UTC offset, never the machine's clock or zone. Each phrase becomes a
`Mention` with one or more readings, best guess first, and two confidences (how sure the
detector is that the phrase is temporal, and how sure the first reading is right).

Text inside quoted reply blocks is skipped: a "tomorrow" there was written relative to
the quoted message's date, not this one's.

Conflicts: a body that dates itself ("Date: 5 March 2026" at the start of a line,
"today, March 5, 2026") more than a day away from the header's date.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from .dates import WEEKDAYS, ExplicitDate, day_bounds, find_explicit_dates

__all__ = ["CONTRACT_RULES", "RULES", "Mention", "Reading", "relative_mentions", "self_dates"]


@dataclass(frozen=True, slots=True)
class Reading:
    """One interpretation: [start, end) in the sender's zone."""

    label: str
    start: datetime
    end: datetime


@dataclass(frozen=True, slots=True)
class Mention:
    """A relative-date phrase in the body (character offsets) and its readings."""

    start: int
    end: int
    phrase: str
    readings: tuple[Reading, ...]
    detector_confidence: float
    applied_confidence: float


_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUMBER = r"(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(day|week|month|year)s?"
_WEEKDAY = "(" + "|".join(WEEKDAYS) + ")"


def _day(label: str, day: date, like: datetime) -> Reading:
    start, end = day_bounds(day, like)
    return Reading(f"{day.isoformat()} ({label})", start, end)


def _span(label: str, first: date, last: date, like: datetime) -> Reading:
    start = datetime.combine(first, time(0), tzinfo=like.tzinfo)
    end = datetime.combine(last + timedelta(days=1), time(0), tzinfo=like.tzinfo)
    return Reading(f"{first.isoformat()}..{last.isoformat()} ({label})", start, end)


def _add_months(day: date, months: int) -> date:
    month0 = day.month - 1 + months
    year, month = day.year + month0 // 12, month0 % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _month_end(day: date) -> date:
    return date(day.year, day.month, calendar.monthrange(day.year, day.month)[1])


# Each rule: a pattern and a function from (match, anchor) to (readings, detector, applied).
Rule = tuple[
    re.Pattern[str], Callable[[re.Match[str], datetime], tuple[list[Reading], float, float]]
]


def _fixed(
    offset: int, label: str
) -> Callable[[re.Match[str], datetime], tuple[list[Reading], float, float]]:
    def resolve(_: re.Match[str], anchor: datetime) -> tuple[list[Reading], float, float]:
        return [_day(label, anchor.date() + timedelta(days=offset), anchor)], 0.95, 0.9

    return resolve


def _weekday(match: re.Match[str], anchor: datetime) -> tuple[list[Reading], float, float]:
    qualifier = (match.group(1) or "").lower()
    target = WEEKDAYS.index(match.group(2).lower())
    today = anchor.date()
    ahead = (target - today.weekday()) % 7
    upcoming = today + timedelta(days=ahead or 7)
    previous = today - timedelta(days=(today.weekday() - target) % 7 or 7)
    name = WEEKDAYS[target].capitalize()
    if qualifier == "next":
        next_week = today - timedelta(days=today.weekday()) + timedelta(days=7 + target)
        if next_week == upcoming:
            return [_day(f"next {name}", upcoming, anchor)], 0.9, 0.85
        # Said early in a week, "next Friday" splits readers: the Friday of next week is
        # the slightly more common reading; this week's is the other candidate.
        return (
            [
                _day(f"{name} of next week", next_week, anchor),
                _day(f"the coming {name}", upcoming, anchor),
            ],
            0.9,
            0.55,
        )
    if qualifier == "last":
        return [_day(f"last {name}", previous, anchor)], 0.9, 0.8
    this_one = today + timedelta(days=ahead)
    if qualifier in {"this", "coming"}:
        return [_day(f"this {name}", this_one, anchor)], 0.9, 0.8
    # "on/by/until Friday": usually the coming one, sometimes the one just past.
    return (
        [
            _day(f"the coming {name}", upcoming, anchor),
            _day(f"the past {name}", previous, anchor),
        ],
        0.8,
        0.75,
    )


def _offset(match: re.Match[str], anchor: datetime) -> tuple[list[Reading], float, float]:
    text = match.group(0).lower()
    count = _NUMBERS.get(match.group(1).lower()) or int(match.group(1))
    unit = match.group(2).lower()
    sign = -1 if text.endswith("ago") else 1
    today = anchor.date()
    if unit == "day":
        day = today + timedelta(days=sign * count)
    elif unit == "week":
        day = today + timedelta(weeks=sign * count)
    elif unit == "month":
        day = _add_months(today, sign * count)
    else:
        day = _add_months(today, sign * 12 * count)
    return [_day(text, day, anchor)], 0.9, 0.85


def _period(match: re.Match[str], anchor: datetime) -> tuple[list[Reading], float, float]:
    which, unit = match.group(1).lower(), match.group(2).lower()
    step = {"next": 1, "last": -1, "this": 0}[which]
    today = anchor.date()
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
        return [_span(f"{which} week", monday, monday + timedelta(days=6), anchor)], 0.9, 0.85
    if unit == "month":
        first = _add_months(today.replace(day=1), step)
        return [_span(f"{which} month", first, _month_end(first), anchor)], 0.9, 0.9
    year = today.year + step
    return [_span(f"{which} year", date(year, 1, 1), date(year, 12, 31), anchor)], 0.9, 0.9


_ABBREVIATIONS = {"EOD": "day", "COB": "day", "EOW": "week", "EOM": "month", "EOY": "year"}


def _end_of_words(match: re.Match[str], anchor: datetime) -> tuple[list[Reading], float, float]:
    return _end_of((match.group(1) or "this").strip().lower(), match.group(2).lower(), anchor)


def _end_of_abbreviation(
    match: re.Match[str], anchor: datetime
) -> tuple[list[Reading], float, float]:
    return _end_of("this", _ABBREVIATIONS[match.group(1).upper()], anchor)


def _end_of(which: str, unit: str, anchor: datetime) -> tuple[list[Reading], float, float]:
    today = anchor.date()
    step = 1 if which == "next" else 0
    if unit == "day":
        return [_day("end of day", today, anchor)], 0.9, 0.9
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
        friday, sunday = monday + timedelta(days=4), monday + timedelta(days=6)
        # The working week ends on Friday for most senders; the calendar week on Sunday.
        return (
            [
                _day("end of the working week", friday, anchor),
                _day("end of the calendar week", sunday, anchor),
            ],
            0.85,
            0.7,
        )
    if unit == "quarter":
        first_month = (today.month - 1) // 3 * 3 + 1
        last = _month_end(_add_months(date(today.year, first_month, 1), 2 + 3 * step))
        return [_day("end of quarter", last, anchor)], 0.9, 0.85
    if unit == "year":
        return [_day("end of year", date(today.year + step, 12, 31), anchor)], 0.9, 0.9
    last = _month_end(_add_months(today.replace(day=1), step))
    return [_day("end of month", last, anchor)], 0.9, 0.9


_RULES: tuple[Rule, ...] = (
    (re.compile(r"\bthe day after tomorrow\b", re.I), _fixed(2, "the day after tomorrow")),
    (re.compile(r"\bthe day before yesterday\b", re.I), _fixed(-2, "the day before yesterday")),
    (re.compile(r"\b(?:tomorrow|tmrw)\b", re.I), _fixed(1, "tomorrow")),
    (re.compile(r"\byesterday\b", re.I), _fixed(-1, "yesterday")),
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.I),
     _fixed(0, "today")),
    (re.compile(rf"\b(next|last|this|coming|on|by|until|till|before|after)\s+{_WEEKDAY}\b",
                re.I),
     _weekday),
    (re.compile(rf"\bin\s+{_NUMBER}\s+{_UNIT}\b", re.I), _offset),
    (re.compile(rf"\b{_NUMBER}\s+{_UNIT}\s+(?:from now|ago)\b", re.I), _offset),
    (re.compile(r"\b(next|last|this)\s+(week|month|year)\b", re.I), _period),
    (
        re.compile(
            r"\b(?:by\s+|until\s+|before\s+)?(?:the\s+)?end\s+of\s+(?:the\s+)?(this\s+|next\s+)?"
            r"(day|week|month|quarter|year)\b",
            re.I,
        ),
        _end_of_words,
    ),
    (re.compile(r"\b(EOD|COB|EOW|EOM|EOY)\b", re.I), _end_of_abbreviation),
)  # fmt: skip


def _inside(position: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in ranges)


_EVENTS = r"(?:signing|signature|execution|the effective date|delivery|receipt|invoice|notice)"


def _within(match: re.Match[str], anchor: datetime) -> tuple[list[Reading], float, float]:
    # "within 30 days of signing": anchored to the document's date, which is the signing
    # date only when the document was dated on signing; hence the lower applied confidence.
    readings, _, _ = _offset(match, anchor)
    return readings, 0.85, 0.6


RULES: tuple[Rule, ...] = _RULES
"""The rules email has always applied."""

CONTRACT_RULES: tuple[Rule, ...] = (
    (
        re.compile(
            rf"\b(?:within|after|no later than)\s+{_NUMBER}\s+{_UNIT}\s+(?:of|from|after)\s+"
            rf"{_EVENTS}\b",
            re.I,
        ),
        _within,
    ),
)
"""Extra rules for agreements: periods counted from signing, delivery, notice, …"""


def relative_mentions(
    body: str,
    anchor: datetime,
    skip: Sequence[tuple[int, int]] = (),
    rules: Sequence[Rule] = RULES,
) -> list[Mention]:
    """Every relative-date phrase of `body` outside `skip` (character ranges), in order;
    where phrases overlap the longest wins."""
    found: list[Mention] = []
    for pattern, resolve in rules:
        for match in pattern.finditer(body):
            if _inside(match.start(), skip):
                continue
            readings, detector, applied = resolve(match, anchor)
            found.append(
                Mention(
                    match.start(), match.end(), match.group(0), tuple(readings), detector, applied
                )
            )
    found.sort(key=lambda m: (m.start, -(m.end - m.start)))
    out: list[Mention] = []
    for mention in found:
        if not out or mention.start >= out[-1].end:
            out.append(mention)
    return out


_SELF_DATED_LINE = re.compile(r"^[ \t]*(?:date|sent|dated)[ \t]*:?[ \t]*", re.I | re.M)
_TODAY_IS = re.compile(r"\btoday\b[ \t]*(?:\(|,|is|:)?[ \t]*", re.I)


def self_dates(
    body: str, anchor: datetime, skip: Sequence[tuple[int, int]] = ()
) -> list[ExplicitDate]:
    """Dates by which the body dates itself and that are more than a day from the
    anchor's calendar day: a conflict with the Date header."""
    explicit = [d for d in find_explicit_dates(body) if not _inside(d.start, skip)]
    starts: set[int] = set()
    for pattern in (_SELF_DATED_LINE, _TODAY_IS):
        starts.update(m.end() for m in pattern.finditer(body))
    anchor_day = anchor.date()
    return [d for d in explicit if d.start in starts and abs((d.day - anchor_day).days) > 1]
