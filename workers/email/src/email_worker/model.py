"""What a parsed message is, whichever container it came in (.eml or .msg).

Both parsers (`eml`, `outlook`) produce a `ParsedMessage`; the projection reads only this,
so the two formats cannot drift apart in how they become graph nodes. Every string here
is already decoded and has a UTF-8 form (no surrogates): the parsers clean it up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["DeliveryRecipient", "DeliveryReport", "Mailbox", "ParsedAttachment", "ParsedMessage"]


@dataclass(frozen=True, slots=True)
class Mailbox:
    """One address as written in a header (or a .msg recipient row)."""

    address: str
    """The addr-spec as given (`local@domain`), not yet normalized."""
    name: str = ""
    """The display name, decoded; empty when there is none."""


@dataclass(slots=True)
class Attendee:
    mailbox: Mailbox
    role: str | None = None
    """REQ-PARTICIPANT, OPT-PARTICIPANT, CHAIR, NON-PARTICIPANT."""
    answer: str | None = None
    """PARTSTAT: NEEDS-ACTION, ACCEPTED, DECLINED, TENTATIVE, DELEGATED."""


@dataclass(slots=True)
class CalendarEvent:
    uid: str
    method: str | None
    """The calendar's METHOD: REQUEST (an invitation or update), CANCEL, REPLY, PUBLISH..."""
    summary: str | None = None
    start: str | None = None
    end: str | None = None
    all_day: bool = False
    location: str | None = None
    status: str | None = None
    sequence: int | None = None
    recurrence_id: str | None = None
    """Set on one occurrence of a recurring event (its original start)."""
    rule: str | None = None
    """The RRULE as written (FREQ=WEEKLY;BYDAY=MO)."""
    organizer: Mailbox | None = None
    attendees: list[Attendee] = field(default_factory=list)
    attendees_dropped: int = 0


@dataclass(frozen=True, slots=True)
class ParsedAttachment:
    """A part that is not body text: a file, an inline image, an enclosed message."""

    filename: str
    """As declared (may be empty); used for format routing by extension."""
    content_type: str
    """Lower-case `type/subtype` as declared, or as the container says."""
    data: bytes
    inline: bool = False
    """Disposition inline (an image the HTML body shows), not a file the sender attached."""
    truncated: bool = False
    """The part's MIME structure ended early (truncated input): its bytes may be partial."""
    enclosed: ParsedMessage | None = None
    """For an enclosed message (message/rfc822, an embedded .msg): the message itself,
    parsed, so the parent can point at its MESSAGE id."""


@dataclass(frozen=True, slots=True)
class DeliveryRecipient:
    """One per-recipient block of a delivery status notification (RFC 3464)."""

    fields: tuple[tuple[str, str], ...]
    """The block's fields as written (name, value), in order."""
    final_recipient: str | None = None
    """The Final-Recipient's address (its `rfc822;` type dropped), as given."""
    original_recipient: str | None = None
    action: str | None = None
    """failed / delayed / delivered / relayed / expanded, lower-cased."""
    status: str | None = None
    """The enhanced status code (5.1.1), a comment after it dropped."""
    diagnostic: str | None = None
    remote_mta: str | None = None


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    """A message/delivery-status part: who reports, then one block per recipient."""

    fields: tuple[tuple[str, str], ...]
    """The per-message block (Reporting-MTA, Arrival-Date, ...) as written."""
    reporting_mta: str | None
    recipients: tuple[DeliveryRecipient, ...]


@dataclass(slots=True)
class ParsedMessage:
    """One email, decoded."""

    source_format: str
    """'eml' or 'msg'."""
    message_id: str | None = None
    """The Message-ID header's raw value (normalized later), None when absent."""
    in_reply_to: list[str] = field(default_factory=list)
    """Message ids (raw) named by In-Reply-To, in order."""
    references: list[str] = field(default_factory=list)
    """Message ids (raw) named by References, oldest first, as the header lists them."""
    subject: str = ""
    date_raw: str | None = None
    """The Date header's text; None when there is none."""
    date: datetime | None = None
    """The Date header parsed, timezone-aware with the sender's own offset; None if missing
    or unparseable (see `date_raw`)."""
    date_source: str = "Date header"
    """Where `date` came from ("Date header", or "PR_CLIENT_SUBMIT_TIME" for a .msg that
    Outlook composed and never gave a Date header)."""
    fallback_dates: list[tuple[str, datetime]] = field(default_factory=list)
    """Other evidence of when the message was sent (label, moment): Received hops, the
    .msg submit time. Used as missing_date candidates and conflict checks."""
    senders: list[Mailbox] = field(default_factory=list)
    """From (usually one mailbox)."""
    to: list[Mailbox] = field(default_factory=list)
    cc: list[Mailbox] = field(default_factory=list)
    bcc: list[Mailbox] = field(default_factory=list)
    body: str = ""
    """The body text: text/plain parts, or HTML rendered to text when there is no plain part."""
    body_source: str = "none"
    """Where the body text came from: 'text/plain', 'text/html' or 'none'."""
    attachments: list[ParsedAttachment] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)
    """Problems met while parsing that did not stop it (truncated MIME, a charset that lied,
    the nesting depth cap, …), as short stable strings."""
    recipients_dropped: int = 0
    """Recipients beyond the per-message cap, counted but not projected."""
    delivery_reports: list[DeliveryReport] = field(default_factory=list)
    events: list[CalendarEvent] = field(default_factory=list)
    """Meeting invitations, updates, cancellations and replies (invitations.py)."""
    """message/delivery-status parts (a bounce or delay report), in MIME order."""
    returned: list[ParsedMessage] = field(default_factory=list)
    """text/rfc822-headers parts: the headers of the message a report returns, parsed as
    a message without a body."""
