"""Bounce and report messages in the projection: delivery status notifications and the
returned message's headers, written after the body and projected as nodes and edges.

- Each message/delivery-status part is written as its fields (`Name: value` lines, the
  per-message block, a blank line, then each recipient block): a `delivery_status` span
  per report on the MESSAGE. Each recipient block is a DELIVERY_STATUS node (id
  `<message id>#delivery-<n>`, span: its block) with the reporting MTA, final and
  original recipient, action, status, diagnostic and remote MTA; MESSAGE
  -HAS_DELIVERY_STATUS-> it (position), and it -FINAL_RECIPIENT-> the PERSON of the final
  recipient's address (an `address` span over it in the block).
- Each text/rfc822-headers part is written as "Returned message:" and the identifying
  headers of the returned message (From, To, Cc, Date, Subject, Message-ID): a
  `returned_headers` span on the MESSAGE; when it has a Message-ID, MESSAGE -RETURNS->
  that message's deterministic id (dangling until that message is ingested).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workers_common import IngestionResultBuilder, NodeRef, SpanRef

from .identity import message_node_id, normalize_address, normalize_message_id
from .layout import Writer
from .model import DeliveryRecipient, DeliveryReport, ParsedMessage
from .people import People, render_mailbox

__all__ = ["ReportLayout", "project_reports", "write_reports"]


@dataclass(slots=True)
class _RecipientText:
    recipient: DeliveryRecipient
    reporting_mta: str | None
    span: SpanRef
    address: tuple[str, SpanRef] | None
    """The final recipient's normalized address and its span."""


@dataclass(slots=True)
class ReportLayout:
    """What write_reports put into the text, for project_reports to point at."""

    message_spans: list[SpanRef] = field(default_factory=list)
    recipients: list[_RecipientText] = field(default_factory=list)
    returned_ids: list[str] = field(default_factory=list)
    """Normalized Message-IDs of returned messages, in order, duplicates dropped."""


def _write_field(writer: Writer, name: str, value: str, address: str | None) -> SpanRef | None:
    """Writes `Name: value\\n`; returns a span over `address` inside the value."""
    writer.write(f"{name}: ")
    at = value.find(address) if address else -1
    span = None
    if address and at >= 0:
        writer.write(value[:at])
        begin, end = writer.write(address)
        span = writer.builder.add_span_range(begin, end, kind="address")
        writer.write(value[at + len(address) :])
    else:
        writer.write(value)
    writer.write("\n")
    return span


def _write_report(writer: Writer, report: DeliveryReport, layout: ReportLayout) -> None:
    builder = writer.builder
    start = writer.position
    for name, value in report.fields:
        _write_field(writer, name, value, None)
    for recipient in report.recipients:
        if writer.position > start:
            writer.write("\n")
        begin = writer.position
        address_span = None
        for name, value in recipient.fields:
            is_final = name.lower() == "final-recipient"
            found = _write_field(
                writer, name, value, recipient.final_recipient if is_final else None
            )
            address_span = address_span or found
        span = builder.add_span_range(begin, writer.position - 1, kind="delivery_status")
        normalized = normalize_address(recipient.final_recipient or "")
        address = (normalized, address_span) if normalized and address_span else None
        layout.recipients.append(_RecipientText(recipient, report.reporting_mta, span, address))
    if writer.position > start:
        layout.message_spans.append(
            builder.add_span_range(start, writer.position - 1, kind="delivery_status")
        )


def _write_returned(writer: Writer, returned: ParsedMessage, layout: ReportLayout) -> None:
    lines = [("From", returned.senders), ("To", returned.to), ("Cc", returned.cc)]
    rendered = [
        (label, ", ".join(render_mailbox(m) for m in mailboxes))
        for label, mailboxes in lines
        if mailboxes
    ]
    normalized = normalize_message_id(returned.message_id or "")
    for label, value in (
        ("Date", returned.date_raw),
        ("Subject", returned.subject),
        ("Message-ID", f"<{normalized}>" if normalized else None),
    ):
        if value:
            rendered.append((label, value))
    if not rendered:
        return
    begin, _ = writer.write("Returned message:\n")
    for label, value in rendered:
        writer.write(f"{label}: {value}\n")
    layout.message_spans.append(
        writer.builder.add_span_range(begin, writer.position - 1, kind="returned_headers")
    )
    if normalized and normalized not in layout.returned_ids:
        layout.returned_ids.append(normalized)


def write_reports(writer: Writer, parsed: ParsedMessage) -> ReportLayout:
    """Appends the reports' text after what is written so far (a blank line between)."""
    layout = ReportLayout()
    for report in parsed.delivery_reports:
        if report.fields or report.recipients:
            _separate(writer)
            _write_report(writer, report, layout)
    for returned in parsed.returned:
        _separate(writer)
        _write_returned(writer, returned, layout)
    return layout


def _separate(writer: Writer) -> None:
    """A blank line before the next block (the text so far may end a line or not)."""
    if writer.position:
        writer.write("\n" if writer.builder.canonical_text.endswith("\n") else "\n\n")


def project_reports(
    builder: IngestionResultBuilder,
    message: NodeRef,
    own_id: str,
    layout: ReportLayout,
    people: People,
) -> None:
    """The DELIVERY_STATUS nodes and the report edges (see the module docstring)."""
    for position, item in enumerate(layout.recipients):
        recipient = item.recipient
        properties = {
            "reporting_mta": item.reporting_mta,
            "final_recipient": recipient.final_recipient,
            "original_recipient": recipient.original_recipient,
            "action": recipient.action,
            "status": recipient.status,
            "diagnostic": recipient.diagnostic,
            "remote_mta": recipient.remote_mta,
        }
        node = builder.add_node(
            ["DELIVERY_STATUS"],
            properties,
            spans=[item.span],
            id=f"{own_id}#delivery-{position}",
        )
        builder.add_relationship(
            "HAS_DELIVERY_STATUS", from_ref=message, to_ref=node, properties={"position": position}
        )
        if item.address is not None:
            address, span = item.address
            person = people.node(address, "", span)
            builder.add_relationship("FINAL_RECIPIENT", from_ref=node, to_ref=person)
    for returned in layout.returned_ids:
        target = message_node_id(returned)
        if target != own_id:
            builder.add_relationship("RETURNS", from_ref=message, to_id=target)
