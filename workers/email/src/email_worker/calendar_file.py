"""The `ics` format: an iCalendar file on its own (a calendar exported from Outlook, Google
Calendar or Thunderbird, a saved invitation) as a CALENDAR node and its EVENTs.

The events are projected as a message's invitations are (event_projection.py): the same
deterministic EVENT ids, so an exported calendar, the invitations that made it and their
cancellations land on one node per meeting, and the same PERSONs. The text is a
`Calendar:` line, then one block per event. CALENDAR -HAS_EVENT-> EVENT (with the file's
METHOD, when it has one).

Limits (options): `max_bytes` (default 64 MiB) and `max_events` (default 10,000; more are
counted, defect `calendar:events_capped`). Attendee edges stop at 100,000 per file
(`attendees_dropped` on each EVENT past it), within the core's relationship cap.
"""

from __future__ import annotations

from workers_common import IngestionResultBuilder, InvalidInput, Job, TooLarge

from .event_projection import project_events, write_events
from .invitations import read_calendar
from .layout import Writer
from .options import int_option
from .people import People

__all__ = ["DEFAULT_MAX_CALENDAR_EVENTS", "DEFAULT_MAX_ICS_BYTES", "handle_ics"]

DEFAULT_MAX_ICS_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_CALENDAR_EVENTS = 10_000
_MAX_ATTENDEE_EDGES = 100_000


def handle_ics(job: Job) -> bytes:
    """Projects one .ics file (typed failures: invalid_input, too_large)."""
    limit = int_option(job.options, "max_bytes", DEFAULT_MAX_ICS_BYTES)
    if job.content is not None and job.content.size > limit:
        raise TooLarge(f"calendar of {job.content.size} bytes is over max_bytes={limit}")
    data = job.read_bytes()
    if b"BEGIN:VCALENDAR" not in data[:4096].upper():
        raise InvalidInput("not an iCalendar file: no BEGIN:VCALENDAR at its start")
    events = int_option(job.options, "max_events", DEFAULT_MAX_CALENDAR_EVENTS)
    read = read_calendar(data, max_bytes=limit, max_events=events)
    if not read.readable:
        raise InvalidInput(f"not a readable iCalendar file ({', '.join(read.defects)})")
    budget = _MAX_ATTENDEE_EDGES
    for event in read.events:  # keep the submission within the core's caps
        kept = max(0, min(len(event.attendees), budget))
        event.attendees_dropped += len(event.attendees) - kept
        del event.attendees[kept:]
        budget -= kept
    builder = IngestionResultBuilder(options=job.options)
    writer = Writer(builder)
    begin, end = writer.write(f"Calendar: {read.name or job.name or 'calendar'}")
    header = builder.add_span_range(begin, end, kind="calendar")
    written = write_events(writer, read.events)
    properties = {
        key: value
        for key, value in (
            ("name", read.name),
            ("method", read.method),
            ("product", read.product),
            ("event_count", len(read.events)),
            ("defects", sorted(set(read.defects))),
        )
        if value is not None
    }
    calendar = builder.add_node(["CALENDAR"], properties, spans=[header])
    project_events(builder, calendar, written, People(builder), edge_type="HAS_EVENT")
    builder.set_stats({"events": len(read.events), "defects": len(read.defects)})
    return builder.to_json()
