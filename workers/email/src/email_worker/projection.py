"""A ParsedMessage as a graph projection: MESSAGE, PERSON, ATTACHMENT and DATE_REFERENCE
nodes, their edges, spans over the canonical text, child jobs and ambiguities.

- MESSAGE (deterministic id, identity.py) with the headers block and the body as spans,
  plus one `quote` span per quoted reply block; valid time from the Date header.
- PERSON per distinct normalized address (deterministic id), `address` and, when the
  message gives one, `name`; one `address` span per occurrence in the headers block.
  Edges MESSAGE -FROM/TO/CC/BCC-> PERSON, with the display name as written.
- MESSAGE -IN_REPLY_TO-> and -REFERENCES-> the parents' deterministic ids (`toId`): they
  dangle until the parent's own job arrives, then the core resolves them.
- ATTACHMENT per attachment (deterministic id `<message id>#attachment-<n>`), MESSAGE
  -HAS_ATTACHMENT-> it; routed ones become child jobs (attachments.py); an enclosed
  message also gets MESSAGE -ENCLOSES-> its MESSAGE id.
- Temporal ambiguities from temporal_projection.py.

Nothing here reads the clock, the environment's zone or an unordered collection's
iteration order, so identical bytes give identical submissions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workers_common import IngestionResultBuilder, NodeRef, SpanRef, ValidTime, normalize_canonical

from .attachments import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    INLINE_BUDGET_BYTES,
    Route,
    attachment_name,
    detect_format,
)
from .event_projection import project_events, write_events
from .identity import (
    message_node_id,
    message_node_id_of,
    normalize_address,
    normalize_message_id,
    subject_normalized,
)
from .layout import Writer, byte_offsets
from .model import Mailbox, ParsedAttachment, ParsedMessage
from .people import People, render_mailbox
from .quotes import quote_ranges
from .report_projection import project_reports, write_reports
from .temporal_projection import BodyText, project_temporal

__all__ = ["MAX_EMAIL_DEPTH", "ProjectionSettings", "project"]

MAX_EMAIL_DEPTH = 8
"""Enclosed messages are routed as child jobs this many levels below the first message."""

_ROLES = (("From", "FROM"), ("To", "TO"), ("Cc", "CC"), ("Bcc", "BCC"))


@dataclass(frozen=True, slots=True)
class ProjectionSettings:
    """What the job's options and the pool's environment decide."""

    routed_formats: frozenset[str]
    max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES
    depth: int = 0
    """How many enclosing messages this one had (the `email_depth` option of child jobs)."""
    child_options: Mapping[str, Any] = field(default_factory=dict)
    """Options every child job inherits (clarify, max_attachment_bytes)."""


def _write_headers(
    writer: Writer, parsed: ParsedMessage
) -> tuple[list[SpanRef], list[tuple[str, Mailbox, SpanRef]]]:
    """Writes the headers block; returns its spans and every (role, mailbox, span)."""
    builder = writer.builder
    spans: list[SpanRef] = []
    occurrences: list[tuple[str, Mailbox, SpanRef]] = []
    lists = {"From": parsed.senders, "To": parsed.to, "Cc": parsed.cc, "Bcc": parsed.bcc}
    start = writer.position
    for label, role in _ROLES:
        mailboxes = lists[label]
        if not mailboxes:
            continue
        line_start, _ = writer.write(f"{label}: ")
        for index, mailbox in enumerate(mailboxes):
            if index:
                writer.write(", ")
            begin, end = writer.write(render_mailbox(mailbox))
            occurrences.append((role, mailbox, builder.add_span_range(begin, end, kind="address")))
        _, line_end = writer.write("\n")
        spans.append(
            builder.add_span_range(line_start, line_end - 1, kind=f"header:{label.lower()}")
        )
    date_text = parsed.date_raw or (parsed.date.isoformat() if parsed.date else None)
    for label, value in (("Date", date_text), ("Subject", parsed.subject)):
        if value:
            begin, end = writer.write(f"{label}: {value}")
            writer.write("\n")
            spans.append(builder.add_span_range(begin, end, kind=f"header:{label.lower()}"))
    if writer.position > start:
        spans.insert(0, builder.add_span_range(start, writer.position - 1, kind="headers"))
    return spans, occurrences


def _message_properties(parsed: ParsedMessage, normalized_id: str | None) -> dict[str, Any]:
    senders = [normalize_address(m.address) for m in parsed.senders]
    # Distinct addresses over To, Cc and Bcc (one person in To and Cc counts once), plus
    # the ones past the cap, which were not read and so cannot be told apart.
    recipients = len(
        {normalize_address(m.address) for m in (*parsed.to, *parsed.cc, *parsed.bcc)} - {None}
    )
    properties: dict[str, Any] = {
        "message_id": normalized_id,
        "subject": parsed.subject,
        "subject_normalized": subject_normalized(parsed.subject),
        "date": parsed.date.isoformat() if parsed.date else None,
        "date_source": parsed.date_source if parsed.date else None,
        "sender": next((s for s in senders if s), None),
        "recipient_count": recipients + parsed.recipients_dropped,
        "attachment_count": len(parsed.attachments),
        "body_source": parsed.body_source,
        "defects": list(parsed.defects),
    }
    if parsed.recipients_dropped:
        properties["recipients_dropped"] = parsed.recipients_dropped
    return properties


def project(
    parsed: ParsedMessage, settings: ProjectionSettings, options: Mapping[str, Any]
) -> bytes:
    """The submission for one parsed message."""
    builder = IngestionResultBuilder(options=options)
    writer = Writer(builder)
    header_spans, occurrences = _write_headers(writer, parsed)
    body = BodyText(normalize_canonical(parsed.body).strip("\n"), start=0)
    message_spans = list(header_spans)
    quotes: list[tuple[int, int]] = []
    if body.text.strip():
        if writer.position:
            writer.write("\n")
        body_start, body_end = writer.write(body.text)
        body = BodyText(body.text, start=body_start)
        message_spans.append(builder.add_span_range(body_start, body_end, kind="body"))
        quotes = quote_ranges(body.text)
        offsets = byte_offsets(body.text, [p for q in quotes for p in q])
        for begin, end in quotes:
            if end > begin:
                message_spans.append(
                    builder.add_span_range(
                        body_start + offsets[begin], body_start + offsets[end], kind="quote"
                    )
                )

    reports = write_reports(writer, parsed)
    message_spans += reports.message_spans
    events = write_events(writer, parsed.events)

    normalized_id = normalize_message_id(parsed.message_id or "")
    own_id = message_node_id_of(parsed)
    message = builder.add_node(
        ["MESSAGE"],
        _message_properties(parsed, normalized_id),
        spans=message_spans,
        valid_time=ValidTime.from_datetimes(parsed.date) if parsed.date else None,
        id=own_id,
    )
    people = People(builder)
    _project_people(builder, message, occurrences, people)
    project_reports(builder, message, own_id, reports, people)
    project_events(builder, message, events, people)
    _project_threading(builder, message, parsed, own_id)
    children = _project_attachments(builder, message, parsed, own_id, settings)
    references = project_temporal(builder, message, parsed, body, quotes)
    builder.set_stats(
        {
            "source_format": parsed.source_format,
            "recipients": len(parsed.to) + len(parsed.cc) + len(parsed.bcc),
            "recipients_dropped": parsed.recipients_dropped,
            "people": len({normalize_address(m.address) for _, m, _ in occurrences} - {None}),
            "attachments": len(parsed.attachments),
            "child_jobs": children,
            "quotes": len(quotes),
            "date_references": references,
            "defects": len(parsed.defects),
            **({"events": len(parsed.events)} if parsed.events else {}),
        }
    )
    return builder.to_json()


def _project_people(
    builder: IngestionResultBuilder,
    message: NodeRef,
    occurrences: Sequence[tuple[str, Mailbox, SpanRef]],
    people: People,
) -> None:
    seen: set[tuple[str, str]] = set()
    for role, mailbox, span in occurrences:
        address = normalize_address(mailbox.address)
        if address is None:
            continue
        person = people.node(address, mailbox.name, span)
        if (role, address) in seen:
            continue  # the same person twice in one header is one edge
        seen.add((role, address))
        properties = {"name": mailbox.name} if mailbox.name else {}
        builder.add_relationship(role, from_ref=message, to_ref=person, properties=properties)


def _project_threading(
    builder: IngestionResultBuilder, message: NodeRef, parsed: ParsedMessage, own_id: str
) -> None:
    for parent in parsed.in_reply_to:
        target = message_node_id(parent)
        if target != own_id:
            builder.add_relationship("IN_REPLY_TO", from_ref=message, to_id=target)
    for position, ancestor in enumerate(parsed.references):
        target = message_node_id(ancestor)
        if target != own_id:
            builder.add_relationship(
                "REFERENCES", from_ref=message, to_id=target, properties={"position": position}
            )


def _route(attachment: ParsedAttachment, settings: ProjectionSettings) -> Route:
    if not attachment.data:
        return Route(None, "empty")
    if attachment.truncated:
        return Route(None, "the MIME part is truncated: its bytes may be incomplete")
    if attachment.inline and attachment.content_type.startswith("image/"):
        return Route(None, "inline image of the HTML body")
    if attachment.enclosed is not None:
        route = Route(
            "msg" if attachment.content_type.endswith("outlook") else "eml", "enclosed message"
        )
        if settings.depth + 1 > MAX_EMAIL_DEPTH:
            return Route(None, f"enclosed more than {MAX_EMAIL_DEPTH} messages deep")
    else:
        route = detect_format(attachment.filename, attachment.content_type, attachment.data)
    if route.format is not None and route.format not in settings.routed_formats:
        return Route(None, f"format {route.format} is not routed by this pool")
    return route


def _project_attachments(
    builder: IngestionResultBuilder,
    message: NodeRef,
    parsed: ParsedMessage,
    own_id: str,
    settings: ProjectionSettings,
) -> int:
    """ATTACHMENT nodes, edges and child jobs; returns how many child jobs were added."""
    names: set[str] = set()
    inline_bytes = 0
    for index, attachment in enumerate(parsed.attachments):
        route = _route(attachment, settings)
        name = attachment_name(attachment.data)
        size = len(attachment.data)
        too_large = route.format is not None and (
            size > settings.max_attachment_bytes or inline_bytes + size > INLINE_BUDGET_BYTES
        )
        properties: dict[str, Any] = {
            "filename": attachment.filename,
            "content_type": attachment.content_type,
            "size": size,
            "blake3": name.removeprefix("attachment:"),
            "format": route.format,
            "route": route.reason,
            "child_job": name if route.format is not None else None,
            "inline": attachment.inline,
            "truncated": attachment.truncated,
            "too_large": too_large,
        }
        enclosed_id = message_node_id_of(attachment.enclosed) if attachment.enclosed else None
        if enclosed_id is not None:
            properties["message_node_id"] = enclosed_id
        node = builder.add_node(["ATTACHMENT"], properties, id=f"{own_id}#attachment-{index}")
        builder.add_relationship(
            "HAS_ATTACHMENT", from_ref=message, to_ref=node, properties={"position": index}
        )
        if enclosed_id is not None and enclosed_id != own_id:
            builder.add_relationship("ENCLOSES", from_ref=message, to_id=enclosed_id)
        if route.format is None or name in names:
            continue  # not routed, or the same bytes twice in this message: one child
        names.add(name)
        options = dict(settings.child_options)
        if route.format in {"eml", "msg"}:
            options["email_depth"] = settings.depth + 1
        if too_large:
            limit = settings.max_attachment_bytes
            options["oversize"] = {
                "bytes": size,
                "limit": limit if size > limit else INLINE_BUDGET_BYTES - inline_bytes,
                "what": f"attachment {attachment.filename or name} of message {own_id}",
            }
            builder.add_child_job(route.format, name, options=options)
        else:
            inline_bytes += size
            builder.add_child_job(route.format, name, options=options, content=attachment.data)
    return len(names)
