"""Meeting invitations: the VEVENTs of a message's `text/calendar` parts and `.ics` files
(RFC 5545, read with icalendar).

Outlook, Google Calendar and most other clients send an invitation, its updates, its
cancellation and each attendee's reply as a message whose `multipart/alternative` holds a
`text/calendar` part beside the text and HTML ones (often an `invite.ics` attachment too,
with the same event). The body's text names the meeting in prose; the calendar part holds
what a graph wants: the event's UID (the same across the invitation, its updates and its
cancellation), its start and end in their time zone, its place, organizer and attendees
with their roles and answers, and the METHOD that says what this message does to it.

Times are kept as written: a zoned time in ISO 8601 with its UTC offset (the VTIMEZONE's
rules applied, or the IANA zone it names), a floating time without an offset, an all-day
event as dates. Nothing depends on the host's zone.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from icalendar import Calendar

from .model import Attendee, CalendarEvent, Mailbox

__all__ = [
    "MAX_ATTENDEES",
    "MAX_CALENDAR_BYTES",
    "MAX_EVENTS",
    "CalendarRead",
    "capped",
    "event_key",
    "read_calendar",
]

MAX_CALENDAR_BYTES = 1024 * 1024
"""A calendar part larger than this is not read (an invitation is a few KB; a whole
calendar exported and mailed is a file, kept as the attachment it is)."""

MAX_EVENTS = 100
"""Events read from one calendar part (a shared calendar exported whole has thousands)."""
MAX_ATTENDEES = 500
"""Attendees kept per event; more are counted in `attendees_dropped`."""
_TEXT_CAP = 500
"""Characters kept of a summary or location."""

logging.getLogger("icalendar").setLevel(logging.CRITICAL)


@dataclass(slots=True)
class CalendarRead:
    """One calendar part: its events (in file order), what it says of itself, defects."""

    events: list[CalendarEvent] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)
    readable: bool = True
    method: str | None = None
    name: str | None = None
    """X-WR-CALNAME: the name a calendar export gives itself."""
    product: str | None = None
    """PRODID: the program that wrote it."""


def read_calendar(
    data: bytes, *, max_bytes: int = MAX_CALENDAR_BYTES, max_events: int = MAX_EVENTS
) -> CalendarRead:
    """The events of one calendar part."""
    if len(data) > max_bytes:
        return CalendarRead(defects=["calendar:over_budget"], readable=False)
    # icalendar warns (Python warnings) when it guesses a vendor-prefixed TZID's zone;
    # the guess is right for the vendors seen, and the worker's log is not the place.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _read(data, max_events)


def _read(data: bytes, max_events: int) -> CalendarRead:
    try:
        calendar = Calendar.from_ical(data.decode("utf-8-sig", errors="replace"))
    except Exception as err:  # icalendar raises ValueError and more on a damaged part
        return CalendarRead(defects=[f"calendar:unreadable:{type(err).__name__}"], readable=False)
    method = (_text(calendar.get("METHOD")) or "").upper() or None
    read = CalendarRead(
        method=method,
        name=capped(calendar.get("X-WR-CALNAME")),
        product=capped(calendar.get("PRODID")),
    )
    events, defects = read.events, read.defects
    seen: set[tuple[str | None, ...]] = set()
    for component in calendar.walk("VEVENT"):
        if len(events) >= max_events:
            defects.append("calendar:events_capped")
            break
        uid = _text(component.get("UID"))
        if not uid:  # RFC 5545 requires one; old exports lack it: named by its content
            defects.append("calendar:event_without_uid")
        try:
            event = _event(component, uid, method)
        except Exception as err:  # a value icalendar cannot decode (a bad date, ...)
            defects.append(f"calendar:bad_event:{type(err).__name__}")
            continue
        if event_key(event) in seen:  # one node per event and occurrence
            defects.append("calendar:duplicate_event")
            continue
        seen.add(event_key(event))
        events.append(event)
    return read


def event_key(event: CalendarEvent) -> tuple[str | None, ...]:
    """One event, one occurrence: its UID, else (an old export) what it says."""
    if event.uid:
        return (event.uid, event.recurrence_id)
    return ("", event.summary, event.start, event.end, event.location)


def _event(component: Any, uid: str | None, method: str | None) -> CalendarEvent:
    start = component.decoded("DTSTART", None)
    end = component.decoded("DTEND", None)
    sequence = component.get("SEQUENCE")
    rule = component.get("RRULE")
    event = CalendarEvent(
        uid=uid or "",
        method=method,
        summary=capped(component.get("SUMMARY")),
        start=_moment(start),
        end=_moment(end),
        all_day=isinstance(start, date) and not isinstance(start, datetime),
        location=capped(component.get("LOCATION")),
        status=(_text(component.get("STATUS")) or "").upper() or None,
        sequence=int(sequence) if sequence is not None else None,
        recurrence_id=_moment(component.decoded("RECURRENCE-ID", None)),
        rule=rule.to_ical().decode("ascii", "replace") if rule is not None else None,
        organizer=_mailbox(component.get("ORGANIZER")),
    )
    attendees = component.get("ATTENDEE") or []
    for attendee in attendees if isinstance(attendees, list) else [attendees]:
        mailbox = _mailbox(attendee)
        if mailbox is None:
            continue
        if len(event.attendees) >= MAX_ATTENDEES:
            event.attendees_dropped += 1
            continue
        params = getattr(attendee, "params", {})
        event.attendees.append(
            Attendee(mailbox, _param(params, "ROLE"), _param(params, "PARTSTAT"))
        )
    return event


def _text(value: object) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None


def capped(value: object) -> str | None:
    """A summary, place or name on one line, at most 500 characters; None when empty."""
    text = " ".join(str(value).split()) if value is not None else ""
    return text[:_TEXT_CAP] or None


def _moment(value: object) -> str | None:
    """ISO 8601: a zoned time with its offset, a floating one without, a date as a date."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return None


def _param(params: Any, name: str) -> str | None:
    value = params.get(name) if hasattr(params, "get") else None
    return str(value).upper() if value else None


def _mailbox(value: object) -> Mailbox | None:
    """A CAL-ADDRESS (`mailto:ada@example.com`, CN=Ada Lovelace) as a Mailbox."""
    if value is None:
        return None
    address = str(value).strip()
    if address.lower().startswith("mailto:"):
        address = address[7:]
    if "@" not in address:
        return None
    params = getattr(value, "params", {})
    name = params.get("CN") if hasattr(params, "get") else None
    return Mailbox(address=address, name=" ".join(str(name).split()).strip('"') if name else "")
