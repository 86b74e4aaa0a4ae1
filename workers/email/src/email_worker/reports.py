"""Parts whose body is itself header fields: delivery status notifications (RFC 3464,
RFC 6533) and the returned message's headers (RFC 6522 text/rfc822-headers), plus the
decoding every message/* body needs when a sender transfer-encoded it.

The standard library parses a message/* part's body as a message (or a list of them),
whatever its Content-Transfer-Encoding says: a base64-encoded enclosed message comes out
as one header-less message whose body is the base64 text. `message_body_bytes` puts the
part's body back together and decodes the transfer encoding, so the caller can parse
what the sender meant.
"""

from __future__ import annotations

import binascii
import quopri
import re
from email import policy
from email.message import Message
from email.parser import HeaderParser

from .charsets import clean_text, decode_bytes
from .model import DeliveryRecipient, DeliveryReport

__all__ = [
    "DELIVERY_STATUS_TYPES",
    "MAX_REPORT_RECIPIENTS",
    "RETURNED_HEADERS_TYPES",
    "message_body_bytes",
    "parse_delivery_status",
    "transfer_encoded",
]

DELIVERY_STATUS_TYPES = frozenset({"message/delivery-status", "message/global-delivery-status"})
RETURNED_HEADERS_TYPES = frozenset(
    {"text/rfc822-headers", "message/rfc822-headers", "message/global-headers"}
)
MAX_REPORT_RECIPIENTS = 1_000
"""Per-recipient blocks projected per report; a longer report is cut (defect)."""

_BLOCKS = re.compile(r"\n(?:[ \t]*\n)+")
_COMMENT = re.compile(r"\s*\(.*\)\s*$")
_COMPAT = policy.compat32.clone(linesep="\r\n")


def transfer_encoded(part: Message) -> str | None:
    """'base64' or 'quoted-printable' when the part's body is so encoded, else None."""
    cte = str(part.get("content-transfer-encoding", "")).strip().lower()
    return cte if cte in ("base64", "quoted-printable") else None


def message_body_bytes(part: Message) -> bytes:
    """The body of a message/* part as the sender wrote it, transfer encoding decoded."""
    payload = part.get_payload()
    if isinstance(payload, list):
        raw = b"\n".join(
            sub.as_bytes(policy=_COMPAT) for sub in payload if isinstance(sub, Message)
        )
    elif isinstance(payload, str):
        raw = payload.encode("utf-8", "surrogateescape")
    else:
        raw = b""
    encoding = transfer_encoded(part)
    if encoding == "base64":
        try:
            return binascii.a2b_base64(raw)  # ignores line breaks and stray characters
        except binascii.Error:
            return raw
    if encoding == "quoted-printable":
        return quopri.decodestring(raw)
    return raw


def _fields(block: str) -> tuple[tuple[str, str], ...]:
    parsed = HeaderParser(policy=policy.default).parsestr(block)
    out = []
    for name, value in parsed.items():
        text = " ".join(clean_text(str(value)).split())
        out.append((name, text))
    return tuple(out)


def _field(fields: tuple[tuple[str, str], ...], name: str) -> str | None:
    for key, value in fields:
        if key.lower() == name:
            return value or None
    return None


def _address(value: str | None) -> str | None:
    """`rfc822; bob@example.com` -> `bob@example.com`; other address types kept whole."""
    if value is None:
        return None
    kind, semicolon, address = value.partition(";")
    if semicolon and kind.strip().lower() in ("rfc822", "utf-8"):
        return address.strip().strip("<>") or None
    return value


def _recipient(fields: tuple[tuple[str, str], ...]) -> DeliveryRecipient:
    status = _field(fields, "status")
    action = _field(fields, "action")
    return DeliveryRecipient(
        fields=fields,
        final_recipient=_address(_field(fields, "final-recipient")),
        original_recipient=_address(_field(fields, "original-recipient")),
        action=action.lower() if action else None,
        status=_COMMENT.sub("", status) or None if status else None,
        diagnostic=_field(fields, "diagnostic-code"),
        remote_mta=_field(fields, "remote-mta"),
    )


def parse_delivery_status(part: Message, defects: list[str]) -> DeliveryReport:
    """A message/delivery-status part as a DeliveryReport (the first block is the
    per-message one; each following block with fields is a recipient)."""
    text, defect = decode_bytes(message_body_bytes(part), "utf-8")
    if defect:
        defects.append(defect)
    text = text.replace("\r\n", "\n")
    blocks = [
        fields
        for fields in (_fields(block.lstrip("\n") + "\n") for block in _BLOCKS.split(text))
        if fields
    ]
    head = blocks[0] if blocks and _field(blocks[0], "final-recipient") is None else ()
    rest = blocks[1:] if head else blocks
    if len(rest) > MAX_REPORT_RECIPIENTS:
        defects.append("dsn:recipients_capped")
        rest = rest[:MAX_REPORT_RECIPIENTS]
    return DeliveryReport(
        fields=head,
        reporting_mta=_field(head, "reporting-mta"),
        recipients=tuple(_recipient(fields) for fields in rest),
    )
