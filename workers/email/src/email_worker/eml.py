"""RFC 5322 / MIME messages (.eml) into a ParsedMessage, with the standard library's
`email` package and its modern policy (`policy.default`).

The walk over the MIME tree is bounded: parts nested deeper than `MAX_DEPTH` are skipped
(and counted as a defect) rather than followed, and a tree so deep that the parser
itself recurses out falls back to the headers alone. multipart/alternative contributes
one body (plain text preferred, HTML rendered to text otherwise); text parts that are
not attachments make up the body (a part with a file name only when it is the first
text part, which is the one `get_body()` would return); everything else is an
attachment; an enclosed message/rfc822 is an attachment that is also parsed, for its
MESSAGE id (decoded first when it was base64 or quoted-printable encoded). A
message/delivery-status part is a report (reports.py), a text/rfc822-headers part the
returned message's headers: neither is an attachment.

The body is bounded too: text parts are read into it only while their decoded bytes
stay within `BODY_BUDGET_BYTES` (half a submission's canonical-text cap). A text part
past it (a 90 MB log pasted into a message) becomes an attachment like any other, so it
is a child job of its own (too_large over `max_attachment_bytes`) and the message keeps
its headers, people and other parts; defect `body:over_budget`. Decoding it into the
body would run the worker out of memory long before the submission cap refused it.
"""

from __future__ import annotations

from email import policy
from email.errors import CloseBoundaryNotFoundDefect, MessageDefect
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser, BytesParser

from workers_common import SUBMISSION_CAPS, InvalidInput

from .charsets import clean_text, decode_bytes
from .dates import parse_date_header, received_dates
from .headers import MAX_RECIPIENTS, all_headers, first_header, mailboxes
from .html_text import html_to_text
from .identity import message_ids_in
from .invitations import MAX_EVENTS, event_key, read_calendar
from .model import CalendarEvent, DeliveryReport, ParsedAttachment, ParsedMessage
from .reports import (
    DELIVERY_STATUS_TYPES,
    RETURNED_HEADERS_TYPES,
    message_body_bytes,
    parse_delivery_status,
    transfer_encoded,
)
from .tnef import is_tnef, read_tnef

__all__ = [
    "BODY_BUDGET_BYTES",
    "IDENTIFYING_HEADERS",
    "MAX_DEPTH",
    "MIME_HEADERS",
    "parse_eml",
    "read_message",
]

MAX_DEPTH = 32
"""Deepest MIME nesting followed; real mail rarely passes 5."""
IDENTIFYING_HEADERS = ("from", "sender", "to", "cc", "date", "subject", "message-id")
"""Without at least one of these (or of MIME_HEADERS) the bytes are not a message."""
MIME_HEADERS = ("mime-version", "content-type")
"""A MIME entity without identifying headers is read as a message, with a defect."""
BODY_BUDGET_BYTES = SUBMISSION_CAPS["max_text_bytes"] // 2
"""Most decoded bytes of text parts read into one message's body (16 MiB)."""

_BODY_TYPES = frozenset({"text/plain", "text/html"})
_CALENDAR_TYPES = frozenset({"text/calendar", "application/ics"})
_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global"})


def parse_eml(data: bytes) -> ParsedMessage:
    """Parses the bytes of one .eml; raises InvalidInput when they are not a message."""
    defects: list[str] = []
    try:
        message: Message = BytesParser(policy=policy.default).parsebytes(data)
        walk_body = True
    except RecursionError:
        # Thousands of nested multiparts: the parser recursed out. The headers still
        # identify the message; its body and attachments are not read.
        message = BytesHeaderParser(policy=policy.default).parsebytes(data)
        defects.append("mime:nesting_too_deep")
        walk_body = False
    names = {name.lower() for name in message}
    if names.isdisjoint(IDENTIFYING_HEADERS):
        if names.isdisjoint(MIME_HEADERS):
            raise InvalidInput(
                "not an email message: no From, To, Cc, Date, Subject or Message-ID header "
                f"(nor a MIME entity's MIME-Version or Content-Type) in {len(data)} bytes"
            )
        # A MIME entity without the envelope (a part saved on its own, a message whose
        # headers a tool stripped): its body and attachments are still the message's.
        defects.append("message:no_identifying_headers")
    return read_message(message, depth=0, walk_body=walk_body, defects=defects)


def read_message(
    message: Message, *, depth: int, walk_body: bool = True, defects: list[str] | None = None
) -> ParsedMessage:
    """A parsed email.message.Message (top-level or enclosed) as a ParsedMessage."""
    parsed = ParsedMessage(source_format="eml", defects=list(defects or []))
    parsed.message_id = first_header(message, "message-id")
    parsed.in_reply_to = message_ids_in(first_header(message, "in-reply-to") or "")
    parsed.references = message_ids_in(" ".join(all_headers(message, "references")))
    parsed.subject = first_header(message, "subject") or ""
    parsed.date_raw = first_header(message, "date")
    if parsed.date_raw is not None:
        parsed.date, defect = parse_date_header(parsed.date_raw)
        if defect:
            parsed.defects.append(defect)
    parsed.fallback_dates = received_dates(all_headers(message, "received"))
    budget = [MAX_RECIPIENTS]
    parsed.senders = mailboxes(message, "from", budget) or mailboxes(message, "sender", budget)
    parsed.to = mailboxes(message, "to", budget)
    parsed.cc = mailboxes(message, "cc", budget)
    parsed.bcc = mailboxes(message, "bcc", budget)
    parsed.recipients_dropped = -budget[0] if budget[0] < 0 else 0
    if walk_body:
        walker = _Walker()
        walker.walk(message, depth, truncated=False)
        parsed.body = "\n\n".join(text for _, text in walker.body if text.strip())
        sources = sorted({source for source, text in walker.body if text.strip()})
        parsed.body_source = "+".join(sources) if sources else "none"
        if not parsed.body and walker.tnef_body:
            # Only a winmail.dat: its own body is what the sender wrote.
            parsed.body, source = walker.tnef_body
            parsed.body_source = f"application/ms-tnef:{source}"
            parsed.defects += walker.tnef_defects
        parsed.attachments = walker.attachments
        parsed.delivery_reports = walker.reports
        parsed.events = walker.events
        parsed.returned = walker.returned
        parsed.defects += walker.defects
    parsed.defects = sorted(set(parsed.defects))
    return parsed


class _Walker:
    """Collects body text and attachments from a MIME tree, depth-capped."""

    def __init__(self) -> None:
        self.body: list[tuple[str, str]] = []
        self.attachments: list[ParsedAttachment] = []
        self.reports: list[DeliveryReport] = []
        self.returned: list[ParsedMessage] = []
        self.defects: list[str] = []
        self.body_bytes = 0
        self.events: list[CalendarEvent] = []
        self.tnef_body: tuple[str, str] | None = None
        """The first winmail.dat's own body (text, source), for a message without one."""
        self.tnef_defects: list[str] = []

    def _note(self, defects: list[MessageDefect]) -> None:
        self.defects.extend(f"mime:{type(defect).__name__}" for defect in defects)

    def walk(self, part: Message, depth: int, *, truncated: bool) -> None:
        if depth > MAX_DEPTH:  # counted from the outermost message, enclosed ones too
            self.defects.append("mime:depth_cap")
            return
        self._note(part.defects)
        content_type = part.get_content_type()
        if content_type in _MESSAGE_TYPES:
            self._enclosed(part, depth, truncated)
            return
        if content_type in DELIVERY_STATUS_TYPES:
            self.reports.append(parse_delivery_status(part, self.defects))
            return
        if content_type in RETURNED_HEADERS_TYPES:
            self._returned_headers(part, depth)
            return
        if part.is_multipart():
            children = [child for child in part.get_payload() if isinstance(child, Message)]
            # Without its closing boundary the last part may end mid-way: flag it.
            cut = any(isinstance(d, CloseBoundaryNotFoundDefect) for d in part.defects)
            if content_type == "multipart/alternative":
                # An invitation's text/calendar alternative is not a body: it is read
                # for its events before one body alternative is chosen.
                for child in children:
                    if child.get_content_type() in _CALENDAR_TYPES:
                        self._calendar(child)
                children = _best_alternative(children)
            for index, child in enumerate(children):
                last = index == len(children) - 1
                self.walk(child, depth + 1, truncated=truncated or (cut and last))
            return
        self._leaf(part, content_type, truncated)

    def _calendar(self, part: Message) -> None:
        """The events of a calendar part, each (UID, occurrence) once per message: an
        invitation's alternative and its invite.ics attachment hold the same event."""
        payload = part.get_payload(decode=True)
        read = read_calendar(payload if isinstance(payload, bytes) else b"")
        self.defects += read.defects
        seen = {event_key(e) for e in self.events}
        for event in read.events:
            if len(self.events) >= MAX_EVENTS:
                self.defects.append("calendar:events_capped")
                break
            if event_key(event) not in seen:
                seen.add(event_key(event))
                self.events.append(event)

    def _leaf(self, part: Message, content_type: str, truncated: bool) -> None:
        filename = clean_text(part.get_filename() or "")
        disposition = part.get_content_disposition()
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        if content_type in _CALENDAR_TYPES or filename.lower().endswith(".ics"):
            self._calendar(part)  # and kept as the file it is, below
        # get_body() ignores file names: a named inline (or undispositioned) text part is
        # the body when no text came before it; later named ones stay files.
        body_like = content_type in _BODY_TYPES and disposition != "attachment"
        if body_like and self.body_bytes + len(data) > BODY_BUDGET_BYTES:
            self.defects.append("body:over_budget")
            body_like = False
        if body_like and (not filename or not any(t.strip() for _, t in self.body)):
            self.body_bytes += len(data)
            text, defect = decode_bytes(data, part.get_content_charset())
            if defect:
                self.defects.append(defect)
            text = clean_text(text)
            self.body.append(
                (content_type, html_to_text(text) if content_type == "text/html" else text)
            )
            return
        if is_tnef(filename, content_type, data):
            container = read_tnef(data)
            if container is not None and container.body.strip() and not self.tnef_body:
                self.tnef_body = (container.body, container.body_source)
                self.tnef_defects = list(container.body_defects)
            if container is not None and container.files:
                self.defects.append(f"tnef:{len(container.files)}_files_read_out")
                self.attachments.extend(
                    ParsedAttachment(f.filename, f.content_type, f.data, truncated=truncated)
                    for f in container.files
                )
                return
            self.defects.append("tnef:unreadable" if container is None else "tnef:no_files")
        self.attachments.append(
            ParsedAttachment(
                filename=filename,
                content_type=content_type,
                data=data,
                inline=disposition == "inline",
                truncated=truncated,
            )
        )

    def _returned_headers(self, part: Message, depth: int) -> None:
        headers = BytesHeaderParser(policy=policy.default).parsebytes(message_body_bytes(part))
        self.returned.append(read_message(headers, depth=depth + 1, walk_body=False))

    def _enclosed(self, part: Message, depth: int, truncated: bool) -> None:
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        if not isinstance(inner, Message):
            self.defects.append("mime:empty_enclosed_message")
            return
        if transfer_encoded(part):
            # Parsed as the encoded text: decode it and parse the message it holds.
            data = message_body_bytes(part)
            inner = BytesParser(policy=policy.default).parsebytes(data)
        else:
            data = inner.as_bytes(policy=policy.default) if isinstance(inner, EmailMessage) else b""
        enclosed = read_message(inner, depth=depth + 1)
        subject = enclosed.subject or "message"
        self.attachments.append(
            ParsedAttachment(
                filename=clean_text(part.get_filename() or "") or f"{subject[:80]}.eml",
                content_type="message/rfc822",
                data=data,
                inline=part.get_content_disposition() == "inline",
                truncated=truncated,
                enclosed=enclosed,
            )
        )


def _best_alternative(children: list[Message]) -> list[Message]:
    """The one alternative to read: plain text with content, else a nested multipart
    (related HTML with its images), else HTML, else the last one (RFC 2046: richest)."""

    def rank(child: Message) -> int:
        kind = child.get_content_type()
        if kind == "text/plain":
            payload = child.get_payload(decode=True)
            return 3 if isinstance(payload, bytes) and payload.strip() else 0
        return 2 if child.is_multipart() else 1 if kind == "text/html" else 0

    if not children:
        return []
    best = max(range(len(children)), key=lambda i: (rank(children[i]), i))
    return [children[best]]
