"""Outlook meeting items in a .msg (`IPM.Schedule.Meeting.Request`, `.Canceled`,
`.Resp.Pos/Neg/Tent`, and `IPM.Appointment`): the meeting as a CalendarEvent, from the
named properties Outlook keeps it in, so a .msg and the iCalendar invitation of the same
meeting land on one EVENT.

- The UID is the one Outlook writes into iCalendar ([MS-OXCICAL] PidLidGlobalObjectId):
  the string after `vCal-Uid` when the meeting came from iCalendar, else the clean global
  object id (PidLidCleanGlobalObjectId, or the id with its instance date zeroed) in
  upper-case hex.
- Start and end: PidLidAppointmentStartWhole / EndWhole (UTC); place: PidLidLocation; the
  title: PR_CONVERSATION_TOPIC (the subject without "Accepted:" and its kin in any
  language), else the subject.
- METHOD by message class: REQUEST, CANCEL, REPLY (the sender's answer as their
  attendee's PARTSTAT), PUBLISH for an appointment. For a request or cancellation the
  sender organizes and the recipient table lists the attendees (To required, Cc optional,
  Bcc resources).

One occurrence of a series is projected onto the series' EVENT: the item keeps only the
occurrence's date, not the original start iCalendar names it by.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from extract_msg.constants import ps

from .charsets import clean_text
from .invitations import capped
from .model import Attendee, CalendarEvent, Mailbox, ParsedMessage

__all__ = ["meeting_event"]

_METHODS = {
    "ipm.schedule.meeting.request": "REQUEST",
    "ipm.schedule.meeting.canceled": "CANCEL",
    "ipm.schedule.meeting.resp.pos": "REPLY",
    "ipm.schedule.meeting.resp.neg": "REPLY",
    "ipm.schedule.meeting.resp.tent": "REPLY",
    "ipm.appointment": "PUBLISH",
}
_ANSWERS = {
    "ipm.schedule.meeting.resp.pos": "ACCEPTED",
    "ipm.schedule.meeting.resp.neg": "DECLINED",
    "ipm.schedule.meeting.resp.tent": "TENTATIVE",
}
_VCAL_UID = b"vCal-Uid\x01\x00\x00\x00"
_GOID_HEADER = 40
"""Class id (16), instance date (4), creation time (8), reserved (8), data size (4)."""


def meeting_event(msg: Any, message_class: str, parsed: ParsedMessage) -> CalendarEvent | None:
    """The meeting of an Outlook meeting item, or None for any other message."""
    kind = message_class.lower()
    method = next((m for prefix, m in _METHODS.items() if kind.startswith(prefix)), None)
    if method is None:
        return None
    start = _named(msg, "820D", ps.PSETID_APPOINTMENT)
    end = _named(msg, "820E", ps.PSETID_APPOINTMENT)
    location = _named(msg, "8208", ps.PSETID_APPOINTMENT)
    try:
        topic = msg.getStringStream("__substg1.0_0070")  # PR_CONVERSATION_TOPIC
    except Exception:  # a damaged stream reads as absent
        topic = None
    title = topic if isinstance(topic, str) and topic.strip() else parsed.subject
    event = CalendarEvent(
        uid=_uid(msg) or "",
        method=method,
        summary=capped(clean_text(title)),
        start=start.isoformat() if isinstance(start, datetime) else None,
        end=end.isoformat() if isinstance(end, datetime) else None,
        all_day=bool(_named(msg, "8215", ps.PSETID_APPOINTMENT)),
        location=capped(location) if isinstance(location, str) else None,
        status="CANCELLED" if method == "CANCEL" else None,
    )
    sender = parsed.senders[0] if parsed.senders else None
    if method == "REPLY":
        answer = next((a for prefix, a in _ANSWERS.items() if kind.startswith(prefix)), None)
        if sender is not None:
            event.attendees.append(Attendee(sender, None, answer))
        return event
    event.organizer = sender
    roles = (("REQ-PARTICIPANT", parsed.to), ("OPT-PARTICIPANT", parsed.cc),
             ("NON-PARTICIPANT", parsed.bcc))  # fmt: skip
    for role, mailboxes in roles:
        event.attendees += [Attendee(Mailbox(m.address, m.name), role, None) for m in mailboxes]
    return event


def _named(msg: Any, lid: str, guid: str) -> Any:
    try:
        return msg.getNamedProp(lid, guid)
    except Exception:  # a damaged name map or property reads as absent
        return None


def _uid(msg: Any) -> str | None:
    """The iCalendar UID Outlook gives the meeting ([MS-OXCICAL] 2.1.3.1.1.20.26)."""
    goid = _named(msg, "0023", ps.PSETID_MEETING) or _named(msg, "0003", ps.PSETID_MEETING)
    if not isinstance(goid, bytes) or len(goid) < _GOID_HEADER:
        return None
    data = goid[_GOID_HEADER:]
    if data.startswith(_VCAL_UID):
        return data[len(_VCAL_UID) :].rstrip(b"\x00").decode("utf-8", "replace") or None
    return (goid[:16] + b"\x00\x00\x00\x00" + goid[20:]).hex().upper()
