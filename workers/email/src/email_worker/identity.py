"""Deterministic identities: the ids that let separate jobs meet on the same node.

The scheme (documented in workers/email/README.md; the core scopes every id by tenant):

- MESSAGE  `email:msg:<id-left>@<id-right>` from the normalized Message-ID: angle
  brackets, whitespace and comments dropped, the right-hand side lower-cased (it is a
  domain by convention; the left-hand side is case-sensitive by RFC 5322 and kept).
  An id longer than 200 bytes is hashed: `email:msg:b3:<blake3 hex of the id>`.
  Without a Message-ID: `email:msg:nomid:<blake3 hex>` of the identifying headers
  (From, To, Cc, Date, Subject) and the body text, so a re-ingest still upserts.
- PERSON   `email:person:<local>@<domain>`, all lower-case, the domain in its IDNA
  (punycode) form so `bob@bücher.example` and `bob@xn--bcher-kva.example` are one node.
  The local part is the parsed addr-spec's exactly: whitespace inside a quoted local part
  (`"Big Bug bb"@bug.com`, what the standard library makes of `Big Bug bb@bug.com`) is
  kept, whitespace outside quotes is folding and dropped. An Exchange-only mailbox (a
  .msg sender or recipient with an X.500 address and no SMTP one) is
  `email:person:x500:<distinguished name, lower-case, blanks folded>`.
- ATTACHMENT `<message id>#attachment-<n>`, n counting the message's attachments from 0.

A parent's IN_REPLY_TO / REFERENCES edges name `message_node_id(<the id it quotes>)`,
exactly the id the parent's own job gives its MESSAGE node, so the edge dangles until
the parent arrives and then resolves (the core heals it).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import blake3
import idna

from .model import ParsedMessage

__all__ = [
    "EVENT_PREFIX",
    "MESSAGE_PREFIX",
    "PERSON_PREFIX",
    "X500_PREFIX",
    "event_node_id",
    "fallback_message_node_id",
    "is_x500",
    "message_ids_in",
    "message_node_id",
    "message_node_id_of",
    "normalize_address",
    "normalize_message_id",
    "person_node_id",
    "subject_normalized",
]

MESSAGE_PREFIX = "email:msg:"
PERSON_PREFIX = "email:person:"
_MAX_ID_BYTES = 200

# RFC 5322 comments may appear in msg-id headers: "<a@b> (added by gateway)".
_COMMENT = re.compile(r"\([^()]*\)")
_ANGLE = re.compile(r"<([^<>]*)>")
_SPACE = re.compile(r"\s+")


def normalize_message_id(raw: str) -> str | None:
    """The canonical form of one message id, or None when nothing id-like is there."""
    text = _SPACE.sub("", _COMMENT.sub("", raw))
    match = _ANGLE.search(text)
    core = match.group(1) if match else text.strip("<>")
    if not core or any(not ch.isprintable() for ch in core):
        return None
    left, at, right = core.rpartition("@")
    return f"{left}@{right.lower()}" if at and left else core


def message_ids_in(raw: str) -> list[str]:
    """Every message id in an In-Reply-To / References value, normalized, in order,
    duplicates dropped. Bare tokens are accepted only when there are no <…> at all."""
    text = _COMMENT.sub("", raw)
    found = [m.group(1) for m in _ANGLE.finditer(text)] or [
        token for token in _SPACE.split(text) if "@" in token
    ]
    out: list[str] = []
    for item in found:
        normalized = normalize_message_id(f"<{item}>")
        if normalized is not None and normalized not in out:
            out.append(normalized)
    return out


EVENT_PREFIX = "email:event:"


def event_node_id(uid: str, occurrence: str | None = None) -> str:
    """The EVENT node id for an iCalendar UID (the same in an invitation, its updates, its
    cancellation and the replies), `#<original start>` for one occurrence of a series. A UID
    with white space or control characters, or over 200 bytes, is hashed (`b3:`)."""
    key = uid + (f"#{occurrence}" if occurrence else "")
    clean = key.isprintable() and not any(ch.isspace() for ch in key)
    if not clean or len(key.encode("utf-8")) > _MAX_ID_BYTES:
        return f"{EVENT_PREFIX}b3:{blake3.blake3(key.encode('utf-8')).hexdigest()}"
    return EVENT_PREFIX + key


def message_node_id(normalized_id: str) -> str:
    """The MESSAGE node id for a normalized Message-ID."""
    if len(normalized_id.encode("utf-8")) > _MAX_ID_BYTES:
        return f"{MESSAGE_PREFIX}b3:{blake3.blake3(normalized_id.encode('utf-8')).hexdigest()}"
    return MESSAGE_PREFIX + normalized_id


def fallback_message_node_id(parts: Iterable[str]) -> str:
    """The MESSAGE node id of a message without a Message-ID: a hash of what identifies it.

    Each part is length-prefixed, so no two different lists hash the same input."""
    hasher = blake3.blake3()
    for part in parts:
        encoded = part.encode("utf-8")
        hasher.update(len(encoded).to_bytes(8, "big"))
        hasher.update(encoded)
    return f"{MESSAGE_PREFIX}nomid:{hasher.hexdigest()}"


def _idna_domain(domain: str) -> str:
    domain = unicodedata.normalize("NFC", domain.strip().rstrip(".")).lower()
    if domain.isascii():
        return domain
    try:
        return idna.encode(domain, uts46=True).decode("ascii")
    except idna.IDNAError:
        # Not a valid IDN (a typo, a made-up name): keep the lower-cased Unicode form,
        # still one node for every spelling that normalizes to it.
        return domain


X500_PREFIX = "x500:"


def _unfolded(address: str) -> str:
    """Whitespace dropped outside double quotes, runs of it folded to one space inside."""
    pieces = address.split('"')
    return '"'.join(
        _SPACE.sub(" ", piece) if index % 2 else _SPACE.sub("", piece)
        for index, piece in enumerate(pieces)
    )


def is_x500(address: str) -> bool:
    """Whether `address` is an Exchange X.500 distinguished name (`/o=Org/ou=.../cn=bob`)."""
    return address.lstrip().lower().startswith("/o=")


def normalize_address(address: str) -> str | None:
    """`local@domain` lower-cased with an IDNA domain; None when there is no address."""
    if is_x500(address):
        return X500_PREFIX + " ".join(address.split()).lower()
    text = _unfolded(address.strip()).strip("<>")
    if not text or any(not ch.isprintable() for ch in text):
        return None
    local, at, domain = text.rpartition("@")
    if not at:
        return unicodedata.normalize("NFC", text).lower()
    if not local or not domain:
        return None
    return f"{unicodedata.normalize('NFC', local).lower()}@{_idna_domain(domain)}"


def person_node_id(normalized_address: str) -> str:
    """The PERSON node id for a normalized address."""
    if len(normalized_address.encode("utf-8")) > _MAX_ID_BYTES:
        digest = blake3.blake3(normalized_address.encode("utf-8")).hexdigest()
        return f"{PERSON_PREFIX}b3:{digest}"
    return PERSON_PREFIX + normalized_address


# Reply and forward markers in the languages mail clients write them in: Re, Fwd/Fw,
# AW/WG (German), SV/VS (Nordic), Antw/Doorst (Dutch), TR/RE (French), RIF/I (Italian),
# Odp/PD (Polish), VS, RES/ENC (Portuguese), YNT/ILT (Turkish), ΑΠ/ΣΧΕΤ/ΠΡΘ (Greek),
# 回复/转发 (Chinese). Optional counters ("Re[2]:", "Re^3:") and full-width colons too.
_PREFIX = re.compile(
    r"^\s*(?:(?:re|fwd?|aw|wg|sv|vs|antw|doorst|tr|rif|odp|pd|res|enc|ynt|ilt|"
    r"απ|σχετ|πρθ|回复|回覆|转发|轉寄)(?:\s*[\[(]\d+[\])]|\^\d+)?\s*[:\uff1a]\s*)+",
    re.IGNORECASE,
)


def subject_normalized(subject: str) -> str:
    """The subject without reply/forward prefixes (repeated, any case) and with runs of
    whitespace folded: the key a future core-side threading pass can match on."""
    folded = _SPACE.sub(" ", subject).strip()
    previous = None
    # Prefixes can hide behind a mailing-list tag: "[list] Re: AW: x" -> "[list] x".
    while previous != folded:
        previous = folded
        folded = _PREFIX.sub("", folded)
        tag = re.match(r"^(\[[^\]]{1,40}\]\s*)", folded)
        if tag:
            rest = _PREFIX.sub("", folded[tag.end() :])
            folded = tag.group(1) + rest
    return folded.strip()


def message_node_id_of(parsed: ParsedMessage) -> str:
    """The MESSAGE node id of a parsed message: from its Message-ID, else the fallback."""
    normalized = normalize_message_id(parsed.message_id or "")
    if normalized is not None:
        return message_node_id(normalized)
    addresses = [
        ",".join(sorted(filter(None, (normalize_address(m.address) for m in mailboxes))))
        for mailboxes in (parsed.senders, parsed.to, parsed.cc)
    ]
    return fallback_message_node_id(
        [*addresses, parsed.date_raw or "", parsed.subject, parsed.body]
    )
