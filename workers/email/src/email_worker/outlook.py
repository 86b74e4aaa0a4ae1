"""Outlook .msg files (OLE compound documents) into a ParsedMessage, with extract-msg.

What Outlook keeps is read in this order of trust: the transport headers
(PR_TRANSPORT_MESSAGE_HEADERS, the message as it crossed the wire) for ids, threading
headers and the Date; MAPI properties where those are missing (PR_INTERNET_MESSAGE_ID,
PR_IN_REPLY_TO_ID, PR_INTERNET_REFERENCES, PR_CLIENT_SUBMIT_TIME); the recipient table
for To/Cc/Bcc, since Bcc exists only there. Dates are taken from the raw properties
(FILETIME, UTC), never from extract-msg's convenience properties, which convert to the
machine's local zone.

Bytes that are not an OLE compound file are `invalid_input` before extract-msg sees them;
an OLE file that is not a message (a .doc renamed) is `invalid_input` too; a message
class extract-msg does not support is `unsupported`.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from email import policy
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import extract_msg
from extract_msg.enums import AttachmentType, RecipientType
from extract_msg.exceptions import (
    ExMsgBaseException,
    InvalidFileFormatError,
    UnrecognizedMSGTypeError,
    UnsupportedMSGTypeError,
)
from extract_msg.msg_classes import MessageBase

from workers_common import InvalidInput, Unsupported
from workers_common.formats import OLE_SIGNATURE

from .charsets import clean_text, decode_bytes
from .dates import parse_date_header, received_dates
from .eml import BODY_BUDGET_BYTES
from .headers import MAX_RECIPIENTS, all_headers, first_header, mailboxes
from .html_text import html_to_text
from .identity import is_x500, message_ids_in
from .model import DeliveryRecipient, DeliveryReport, Mailbox, ParsedAttachment, ParsedMessage
from .outlook_meeting import meeting_event
from .reports import MAX_REPORT_RECIPIENTS
from .rtf import rtf_body

__all__ = ["OLE_SIGNATURE", "parse_msg"]

MAX_EMBED_DEPTH = 8
"""Embedded .msg attachments are parsed (for their ids) this many levels deep."""

# extract-msg logs every oddity of a file at WARNING and above; the defects it implies
# are recorded on the MESSAGE instead, so its chatter stays out of the worker's log.
logging.getLogger("extract_msg").setLevel(logging.CRITICAL)

_RECIPIENT_KIND = {RecipientType.TO: "to", RecipientType.CC: "cc", RecipientType.BCC: "bcc"}


def parse_msg(path: Path) -> ParsedMessage:
    """Parses the .msg file at `path` (typed failures for what is not a message)."""
    with path.open("rb") as handle:
        head = handle.read(len(OLE_SIGNATURE))
    if head != OLE_SIGNATURE:
        raise InvalidInput(
            f"not an Outlook .msg: the file does not start with the OLE2 signature "
            f"(first bytes {head.hex() or 'none'}, expected {OLE_SIGNATURE.hex()})"
        )
    try:
        opened = extract_msg.openMsg(str(path), strict=True)
    except (UnsupportedMSGTypeError, UnrecognizedMSGTypeError) as err:
        raise Unsupported(f"Outlook item of a type this worker does not read: {err}") from err
    except (InvalidFileFormatError, ExMsgBaseException, OSError, ValueError) as err:
        raise InvalidInput(f"not a readable Outlook .msg: {type(err).__name__}: {err}") from err
    try:
        if not isinstance(opened, MessageBase):
            raise Unsupported(f"Outlook item {type(opened).__name__} is not a message")
        return read_msg(opened, depth=0)
    finally:
        opened.close()


def _string(msg: Any, prop: str) -> str | None:
    try:
        value = msg.getStringStream(f"__substg1.0_{prop}")
    except Exception:  # a damaged stream reads as absent
        return None
    return clean_text(value) if isinstance(value, str) and value.strip() else None


def _filetime(msg: Any, prop: str) -> datetime | None:
    try:
        entry = msg.props.get(prop)
        value = getattr(entry, "value", None)
    except Exception:
        return None
    if not isinstance(value, datetime):
        return None
    # FILETIME is UTC by definition; a naive value from the library is UTC, never local.
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _headers(msg: Any) -> Message:
    text = _string(msg, "007D") or ""
    return HeaderParser(policy=policy.default).parsestr(text)


def read_msg(msg: Any, *, depth: int) -> ParsedMessage:
    """An opened extract-msg message as a ParsedMessage."""
    parsed = ParsedMessage(source_format="msg")
    headers = _headers(msg)
    parsed.message_id = first_header(headers, "message-id") or _string(msg, "1035")
    parsed.in_reply_to = message_ids_in(
        first_header(headers, "in-reply-to") or _string(msg, "1042") or ""
    )
    parsed.references = message_ids_in(
        " ".join(all_headers(headers, "references")) or _string(msg, "1039") or ""
    )
    parsed.subject = " ".join(
        (_string(msg, "0037") or first_header(headers, "subject") or "").split()
    )
    parsed.date_raw = first_header(headers, "date")
    if parsed.date_raw is not None:
        parsed.date, defect = parse_date_header(parsed.date_raw)
        if defect:
            parsed.defects.append(defect)
    submitted = _filetime(msg, "00390040")
    delivered = _filetime(msg, "0E060040")
    parsed.fallback_dates = [
        *(("PR_CLIENT_SUBMIT_TIME", moment) for moment in [submitted] if moment),
        *(("PR_MESSAGE_DELIVERY_TIME", moment) for moment in [delivered] if moment),
        *received_dates(all_headers(headers, "received")),
    ]
    if parsed.date is None and submitted is not None and parsed.date_raw is None:
        # Outlook writes no Date for a message it composed: its submit time is the Date.
        parsed.date, parsed.date_source = submitted, "PR_CLIENT_SUBMIT_TIME"
    budget = [MAX_RECIPIENTS]
    parsed.senders = mailboxes(headers, "from", budget) or _sender(msg, budget)
    report = _delivery_report(msg)
    # A report's recipient table lists the recipients it reports on, not its addressees.
    table = _recipient_table(msg, budget) if report is None else {}
    if report is not None:
        parsed.delivery_reports.append(report)
        if len(msg.recipients) > MAX_REPORT_RECIPIENTS:
            parsed.defects.append("dsn:recipients_capped")
    if table:
        parsed.to, parsed.cc, parsed.bcc = (table.get(kind, []) for kind in ("to", "cc", "bcc"))
    else:  # no recipient table (a damaged file): the transport headers still list them
        parsed.to, parsed.cc, parsed.bcc = (
            mailboxes(headers, kind, budget) for kind in ("to", "cc", "bcc")
        )
    parsed.recipients_dropped = -budget[0] if budget[0] < 0 else 0
    _body(msg, parsed)
    _attachments(msg, parsed, depth)
    meeting = meeting_event(msg, _string(msg, "001A") or "", parsed)
    if meeting is not None:
        parsed.events.append(meeting)
    parsed.defects = sorted(set(parsed.defects))
    return parsed


# Sender addresses in order of trust: PR_SENDER_SMTP_ADDRESS, PR_SENT_REPRESENTING_SMTP_
# ADDRESS, PR_SENDER_EMAIL_ADDRESS, PR_SENT_REPRESENTING_EMAIL_ADDRESS. The last two are
# X.500 distinguished names for an Exchange-only sender (address type EX).
_SENDER_ADDRESSES = ("5D01", "5D02", "0C1F", "0065")


def _sender(msg: Any, budget: list[int]) -> list[Mailbox]:
    found = [a.strip() for a in (_string(msg, p) for p in _SENDER_ADDRESSES) if a]
    address = next((a for a in found if "@" in a), None)
    # An Exchange-only sender has no SMTP address: its X.500 name still identifies it.
    address = address or next((a for a in found if is_x500(a)), None)
    if not address:
        return []
    budget[0] -= 1
    return [Mailbox(address=address, name=_string(msg, "0C1A") or _string(msg, "0042") or "")]


def _recipient_table(msg: Any, budget: list[int]) -> dict[str, list[Mailbox]]:
    table: dict[str, list[Mailbox]] = {}
    for recipient in msg.recipients:
        recipient_type = getattr(recipient, "type", None)
        kind = _RECIPIENT_KIND.get(recipient_type) if recipient_type is not None else None
        address = clean_text(recipient.email or "").strip()
        if kind is None or not address:
            continue
        budget[0] -= 1
        if budget[0] >= 0:
            name = " ".join(clean_text(recipient.name or "").split())
            table.setdefault(kind, []).append(Mailbox(address=address, name=name))
    return table


# A report's message class ends in what happened to the message (MS-OXCMAIL 2.1.3.6.1.1:
# the action its DSN writes); read receipts (IPNRN, IPNNRN) are not delivery reports.
_REPORT_ACTIONS = (
    (".delayed.dr", "delayed"),
    (".relayed.dr", "relayed"),
    (".expanded.dr", "expanded"),
    (".ndr", "failed"),
    (".dr", "delivered"),
)
_SUPPLEMENTARY_STATUS = re.compile(r"#\s*([245]\.\d{1,3}\.\d{1,3})\b")


def _report_action(msg: Any) -> str | None:
    """The action a REPORT.* message class stands for, None for any other class."""
    kind = (_string(msg, "001A") or "").strip().lower()
    if not kind.startswith("report."):
        return None
    return next((action for suffix, action in _REPORT_ACTIONS if kind.endswith(suffix)), None)


def _recipient_string(recipient: Any, prop: str) -> str | None:
    try:
        value = recipient.getStringStream(f"__substg1.0_{prop}")
    except Exception:  # a damaged stream reads as absent
        return None
    return " ".join(clean_text(value).split()) or None if isinstance(value, str) else None


def _recipient_int(recipient: Any, prop: str) -> int | None:
    try:
        value = recipient.props.getValue(prop)
    except Exception:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _report_status(supplementary: str | None, code: int | None) -> str | None:
    """The enhanced status code: the `#5.1.1` of PR_SUPPLEMENTARY_INFO (MS-OXCMAIL's
    `<remote-mta #status diagnostic>`), else PR_NDR_STATUS_CODE's three digits (class,
    subject, detail: 511 -> 5.1.1; a longer code is ambiguous and left out)."""
    found = _SUPPLEMENTARY_STATUS.search(supplementary or "")
    if found:
        return found.group(1)
    if code is not None and 200 <= code <= 599:
        digits = str(code)
        return f"{digits[0]}.{digits[1]}.{digits[2]}"
    return None


def _delivery_report(msg: Any) -> DeliveryReport | None:
    """An Outlook delivery or non-delivery report (REPORT.IPM.Note.NDR, .DR, ...) as the
    DeliveryReport its DSN would give: PidTagReportingMessageTransferAgent (0x6820) as the
    reporting MTA; per recipient of its table, the address as Final-Recipient, the action
    its class stands for, the status, PidTagSupplementaryInfo (0x0C1B) as the diagnostic
    and PidTagRemoteMessageTransferAgent (0x0C21). None for a message that is no report."""
    action = _report_action(msg)
    if action is None:
        return None
    mta = _string(msg, "6820")
    recipients = []
    for recipient in list(msg.recipients)[:MAX_REPORT_RECIPIENTS]:
        address = clean_text(recipient.smtpAddress or recipient.email or "").strip() or None
        diagnostic = _recipient_string(recipient, "0C1B")
        status = _report_status(diagnostic, _recipient_int(recipient, "0C200003"))
        remote = _recipient_string(recipient, "0C21")
        fields = tuple(
            (name, value)
            for name, value in (
                ("Final-Recipient", f"rfc822; {address}" if address else None),
                ("Action", action),
                ("Status", status),
                ("Remote-MTA", remote),
                ("Diagnostic-Code", diagnostic),
            )
            if value
        )
        recipients.append(
            DeliveryRecipient(
                fields=fields,
                final_recipient=address,
                action=action,
                status=status,
                diagnostic=diagnostic,
                remote_mta=remote,
            )
        )
    fields = (("Reporting-MTA", " ".join(mta.split())),) if mta else ()
    return DeliveryReport(fields=fields, reporting_mta=fields[0][1] if fields else None,
                          recipients=tuple(recipients))  # fmt: skip


def _body(msg: Any, parsed: ParsedMessage) -> None:
    """The plain body, else the HTML one as text, else the RTF one (PR_RTF_COMPRESSED: a
    wrapped HTML or plain body, or native rich text). A body past BODY_BUDGET_BYTES is an
    attachment instead (`body.txt` / `body.html` / `body.rtf`, defect `body:over_budget`),
    as in an .eml: the message keeps everything else, the body becomes a child job of its
    own."""
    body = _plain(msg)
    if body is not None:
        # A character is at most 4 bytes: a shorter body is within the budget unencoded.
        encoded = body.encode() if len(body) > BODY_BUDGET_BYTES // 4 else b""
        if len(encoded) > BODY_BUDGET_BYTES:
            _over_budget(parsed, "body.txt", "text/plain", encoded)
            return
        parsed.body, parsed.body_source = clean_text(body).strip("\n"), "text/plain"
        return
    html = _raw_html(msg)
    if html is not None and len(html) > BODY_BUDGET_BYTES:
        _over_budget(parsed, "body.html", "text/html", html)
    elif html is not None:
        text, defect = decode_bytes(html, _html_charset(msg, html))
        if defect:
            parsed.defects.append(defect)
        parsed.body, parsed.body_source = html_to_text(clean_text(text)), "text/html"
    else:
        _rtf(msg, parsed)


def _plain(msg: Any) -> str | None:
    """PR_BODY when it holds more than white space. Read as a stream, not through
    extract-msg's `body`, which falls back to unwrapping the RTF body at any size."""
    try:
        body = msg.getStringStream("__substg1.0_1000")
    except Exception:  # a damaged property stream reads as absent
        return None
    return body if isinstance(body, str) and body.strip() else None


def _rtf(msg: Any, parsed: ParsedMessage) -> None:
    try:
        rtf = msg.rtfBody  # PR_RTF_COMPRESSED, decompressed
    except Exception as err:  # a damaged compressed stream: the message has no body
        parsed.defects.append(f"rtf:undecompressable:{type(err).__name__}")
        return
    if not isinstance(rtf, bytes) or not rtf.strip():
        return
    if len(rtf) > BODY_BUDGET_BYTES:
        _over_budget(parsed, "body.rtf", "application/rtf", rtf)
        return
    text, source, defects = rtf_body(rtf)
    parsed.defects.extend(defects)
    if text:
        parsed.body, parsed.body_source = text, source


def _over_budget(parsed: ParsedMessage, name: str, content_type: str, data: bytes) -> None:
    parsed.defects.append("body:over_budget")
    parsed.attachments.append(ParsedAttachment(filename=name, content_type=content_type, data=data))


# Windows code page numbers Python's codec registry does not know by `cp<N>`.
_CODE_PAGES = {
    1200: "utf-16-le", 1201: "utf-16-be", 20127: "ascii", 20866: "koi8-r", 21866: "koi8-u",
    50220: "iso2022_jp", 51932: "euc_jp", 51949: "euc_kr", 52936: "hz", 54936: "gb18030",
    **{28590 + n: f"iso8859-{n}" for n in range(1, 16)},
}  # fmt: skip
_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I
)


def _html_charset(msg: Any, html: bytes) -> str | None:
    """The HTML body's charset: PR_INTERNET_CPID (the code page Outlook wrote it in),
    else the document's own <meta charset>; None leaves the choice to decode_bytes."""
    try:
        entry = msg.props.get("3FDE0003")
        page = getattr(entry, "value", None)
    except Exception:  # a damaged property stream reads as absent
        page = None
    if isinstance(page, int) and page > 0:
        return _CODE_PAGES.get(page, f"cp{page}")
    found = _META_CHARSET.search(html[:4096])
    return found.group(1).decode("ascii") if found else None


def _raw_html(msg: Any) -> bytes | None:
    try:
        value = msg.getStream("__substg1.0_10130102")
    except Exception:
        return None
    return value if isinstance(value, bytes) and value.strip() else None


def _attachments(msg: Any, parsed: ParsedMessage, depth: int) -> None:
    for attachment in msg.attachments:
        kind = getattr(attachment, "type", None)
        filename = clean_text(attachment.longFilename or attachment.shortFilename or "")
        content_type = (getattr(attachment, "mimetype", None) or "").lower()
        if kind == AttachmentType.MSG:
            embedded = attachment.data
            if depth >= MAX_EMBED_DEPTH:
                parsed.defects.append("msg:embed_depth_cap")
                continue
            try:
                data = embedded.exportBytes(allowBadEmbed=True)
                enclosed = read_msg(embedded, depth=depth + 1)
            except Exception as err:  # a damaged embedded message: note it, keep the rest
                parsed.defects.append(f"msg:embedded_unreadable:{type(err).__name__}")
                continue
            parsed.attachments.append(
                ParsedAttachment(
                    filename=filename or f"{enclosed.subject[:80] or 'message'}.msg",
                    content_type="application/vnd.ms-outlook",
                    data=data,
                    enclosed=enclosed,
                )
            )
        elif kind == AttachmentType.DATA and isinstance(attachment.data, bytes):
            inline = bool(getattr(attachment, "hidden", False))
            parsed.attachments.append(
                ParsedAttachment(
                    filename=filename,
                    content_type=content_type,
                    data=attachment.data,
                    inline=inline,
                )
            )
        else:
            parsed.defects.append(f"msg:attachment_skipped:{getattr(kind, 'name', kind)}")
