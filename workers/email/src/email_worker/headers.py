"""Reading header fields robustly: decoded, cleaned, never raising on a malformed value.

Shared by both containers: an .eml's headers and the transport headers an Outlook .msg
keeps (PR_TRANSPORT_MESSAGE_HEADERS) are read the same way. `policy.default` decodes
encoded words and parses address lists; when its parser gives up on a value, the
compat32 reading of the same text is used instead. An encoded word whose declared
charset fails on some bytes (GBK text labelled gb2312, the commonest case) comes out of
the policy with U+FFFD in it: such a value is decoded again from its raw text, each
encoded word by the same rules as a body part (charsets.decode_bytes).
"""

from __future__ import annotations

from email.header import decode_header
from email.headerregistry import Group
from email.message import Message
from email.utils import getaddresses

from .charsets import clean_text, decode_bytes
from .model import Mailbox

__all__ = ["MAX_RECIPIENTS", "all_headers", "first_header", "mailboxes"]

MAX_RECIPIENTS = 50_000
"""Most mailboxes projected per message (From/To/Cc/Bcc together); the rest are counted."""


def all_headers(message: Message, name: str) -> list[str]:
    out = []
    for index, value in enumerate(message.get_all(name) or []):
        try:
            text = clean_text(str(value))
        except Exception:  # a header the policy cannot render: keep what the source said
            text = clean_text(getattr(value, "_raw", "") or "")
        if "\ufffd" in text:
            text = _redecoded(message, name, index) or text
        out.append(text)
    return out


def _redecoded(message: Message, name: str, index: int) -> str | None:
    """The `index`-th `name` header decoded again from its raw encoded words."""
    raws = [raw for key, raw in message.raw_items() if key.lower() == name.lower()]
    if index >= len(raws) or "=?" not in str(raws[index]):
        return None
    try:
        chunks = decode_header(str(raws[index]))
    except Exception:  # a malformed encoded word: keep the policy's reading
        return None
    text = "".join(
        chunk if isinstance(chunk, str) else decode_bytes(chunk, charset)[0]
        for chunk, charset in chunks
    )
    return " ".join(clean_text(text).split())


def first_header(message: Message, name: str) -> str | None:
    values = all_headers(message, name)
    return " ".join(values[0].split()) if values else None


def _mailbox(display: str, spec: str) -> Mailbox | None:
    address = clean_text(spec).strip()
    if not address or address == "<>":
        return None
    return Mailbox(address=address, name=" ".join(clean_text(display).split()))


def _parsed(value: object) -> list[tuple[str, str]]:
    """(display name, addr-spec) pairs of one header value."""
    groups: tuple[Group, ...] = getattr(value, "groups", ())
    if groups:
        try:
            return [
                (item.display_name, item.addr_spec if item.domain else item.username)
                for group in groups
                for item in group.addresses
            ]
        except Exception:  # the policy's parser gave up on this value
            pass
    # compat32's reading of the text; a spec with two @ is a parse accident, not an address.
    return [
        (display, spec)
        for display, spec in getaddresses([clean_text(str(value))])
        if spec and spec.count("@") <= 1
    ]


def mailboxes(message: Message, name: str, budget: list[int]) -> list[Mailbox]:
    """The mailboxes of every `name` header, groups flattened, within the recipient
    budget (a one-element list so the four headers share it)."""
    out: list[Mailbox] = []
    for value in message.get_all(name) or []:
        for display, spec in _parsed(value):
            mailbox = _mailbox(display, spec)
            if mailbox is None:
                continue
            budget[0] -= 1
            if budget[0] >= 0:
                out.append(mailbox)
    return out
