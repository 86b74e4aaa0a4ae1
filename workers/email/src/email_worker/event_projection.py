"""Meeting invitations in the projection: each event of the message's calendar parts is
written after the body (and any delivery reports) as a block of `Name: value` lines, and
projected as an EVENT node.

- EVENT, id `email:event:<UID>` (`#<original start>` for one occurrence of a series): the
  invitation, its updates, its cancellation and every reply upsert the one node. Its
  properties: `uid`, `summary`, `start` and `end` (ISO 8601 as written: zoned times with
  their offset, floating ones without, all-day events as dates, `all_day`), `location`,
  `status`, `sequence`, `recurrence_id`, `rule` (the RRULE), `attendee_count` and
  `attendees_dropped`. Its span: its block.
- MESSAGE -ABOUT_EVENT-> EVENT with the calendar's `method` (REQUEST: an invitation or an
  update; CANCEL; REPLY: an attendee's answer; PUBLISH; COUNTER...).
- EVENT -ORGANIZED_BY-> PERSON and EVENT -ATTENDEE-> PERSON (`role`, `answer`: the
  PARTSTAT, `name` as the calendar spells it), the PERSONs by the message's own rule
  (deterministic ids by normalized address), with an `address` span in the block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers_common import IngestionResultBuilder, NodeRef, SpanRef, normalize_canonical

from .identity import event_node_id, normalize_address
from .layout import Writer
from .model import CalendarEvent, Mailbox
from .people import People, render_mailbox

__all__ = ["EventText", "project_events", "write_events"]


@dataclass(slots=True)
class EventText:
    """Where write_events put one event, for project_events to point at."""

    event: CalendarEvent
    span: SpanRef
    organizer: tuple[Mailbox, SpanRef] | None = None
    attendees: list[tuple[int, SpanRef]] = field(default_factory=list)
    """(index into event.attendees, the span over its address)."""


def _clean(text: str) -> str:
    return " ".join(normalize_canonical(text).split())


def _write_person(writer: Writer, mailbox: Mailbox) -> SpanRef:
    rendered = _clean(render_mailbox(mailbox))
    address = _clean(mailbox.address)
    at = rendered.rfind(address)
    writer.write(rendered[:at])
    begin, end = writer.write(address)
    writer.write(rendered[at + len(address) :])
    return writer.builder.add_span_range(begin, end, kind="address")


def _when(event: CalendarEvent) -> str | None:
    if event.start is None:
        return None
    if event.end is None or event.end == event.start:
        return event.start
    return f"{event.start} to {event.end}"


def write_events(writer: Writer, events: list[CalendarEvent]) -> list[EventText]:
    """Writes each event's block; returns where they landed."""
    written: list[EventText] = []
    for event in events:
        writer.write("\n\n" if writer.position else "")
        begin = writer.position
        writer.write(f"Event: {_clean(event.summary or '') or '(no title)'}\n")
        when = _when(event)
        if when:
            writer.write(f"When: {when}{' (all day)' if event.all_day else ''}\n")
        if event.location:
            writer.write(f"Where: {_clean(event.location)}\n")
        if event.status:
            writer.write(f"Status: {event.status}\n")
        organizer = None
        if event.organizer is not None:
            writer.write("Organizer: ")
            organizer = (event.organizer, _write_person(writer, event.organizer))
            writer.write("\n")
        attendees: list[tuple[int, SpanRef]] = []
        if event.attendees:
            writer.write("Attendees: ")
            for index, attendee in enumerate(event.attendees):
                if index:
                    writer.write(", ")
                attendees.append((index, _write_person(writer, attendee.mailbox)))
            writer.write("\n")
        end = writer.position - 1  # the block without its last line break
        span = writer.builder.add_span_range(begin, end, kind="event")
        written.append(EventText(event, span, organizer, attendees))
    return written


def _properties(event: CalendarEvent) -> dict[str, Any]:
    props: dict[str, Any] = {"all_day": event.all_day}
    if event.uid:
        props["uid"] = event.uid
    for key, value in (
        ("summary", event.summary),
        ("start", event.start),
        ("end", event.end),
        ("location", event.location),
        ("status", event.status),
        ("sequence", event.sequence),
        ("recurrence_id", event.recurrence_id),
        ("rule", event.rule),
    ):
        if value is not None:
            props[key] = value
    props["attendee_count"] = len(event.attendees) + event.attendees_dropped
    if event.attendees_dropped:
        props["attendees_dropped"] = event.attendees_dropped
    return props


def _event_id(event: CalendarEvent) -> str:
    """By UID; an event without one (an old export) by what it says: its summary, start,
    end, place and organizer."""
    if event.uid:
        return event_node_id(event.uid, event.recurrence_id)
    organizer = event.organizer.address if event.organizer is not None else ""
    parts = (event.summary, event.start, event.end, event.location, organizer)
    return event_node_id("nouid:" + "\x1f".join(p or "" for p in parts))


def project_events(
    builder: IngestionResultBuilder,
    owner: NodeRef,
    written: list[EventText],
    people: People,
    edge_type: str = "ABOUT_EVENT",
) -> None:
    """EVENT nodes and their edges (see the module's notes): `owner` (a MESSAGE, or a
    calendar file's CALENDAR with `HAS_EVENT`) -> each EVENT."""
    for text in written:
        event = text.event
        node = builder.add_node(
            ["EVENT"],
            _properties(event),
            spans=[text.span],
            id=_event_id(event),
        )
        edge = {"method": event.method} if event.method else {}
        builder.add_relationship(edge_type, from_ref=owner, to_ref=node, properties=edge)
        if text.organizer is not None:
            mailbox, span = text.organizer
            address = normalize_address(mailbox.address)
            if address is not None:
                person = people.node(address, mailbox.name, span)
                builder.add_relationship("ORGANIZED_BY", from_ref=node, to_ref=person)
        seen: set[str] = set()
        for index, span in text.attendees:
            attendee = event.attendees[index]
            address = normalize_address(attendee.mailbox.address)
            if address is None or address in seen:
                continue
            seen.add(address)
            person = people.node(address, attendee.mailbox.name, span)
            props = {
                key: value
                for key, value in (
                    ("role", attendee.role),
                    ("answer", attendee.answer),
                    ("name", attendee.mailbox.name or None),
                )
                if value
            }
            builder.add_relationship("ATTENDEE", from_ref=node, to_ref=person, properties=props)
