"""TNEF (`winmail.dat`, `application/ms-tnef`): the container Outlook and Exchange wrap a
message's attachments in when they send to a recipient they take for another Outlook.
Every other reader sees one opaque `winmail.dat`; the files the sender attached are
inside it. They are read out with tnefparse and become the message's attachments (each
routed and made a child job as any attachment is).

tnefparse trusts its input: a damaged container raises whatever its parsing meets
(struct.error, IndexError, UnboundLocalError, UnicodeDecodeError...), so any failure
leaves the container as the one attachment it was, with defect `tnef:unreadable`.
A container whose attributes do not fill it exactly (cut short) is unreadable too: tnefparse
would hand out the front of a file as the file. One that holds no files (Outlook also sends
a winmail.dat that carries only the formatted body) stays as it is, with `tnef:no_files`.
The container's own body (plain, HTML, or compressed RTF: what Outlook sends when the
message has no MIME text part beside it, so the recipient sees only a winmail.dat) is read
too; the caller makes it the message's body when the MIME parts gave none. Embedded
messages (an Outlook item attached inside) are not read.
"""

from __future__ import annotations

import logging
import mimetypes
import struct
from dataclasses import dataclass

from tnefparse import TNEF

from .charsets import clean_text, decode_bytes
from .html_text import html_to_text
from .rtf import rtf_body

__all__ = ["Tnef", "TnefFile", "is_tnef", "read_tnef"]

_SIGNATURE = b"\x78\x9f\x3e\x22"
_CONTENT_TYPES = frozenset({"application/ms-tnef", "application/vnd.ms-tnef"})
_NAMES = frozenset({"winmail.dat", "win.dat"})

# tnefparse logs every attribute it does not know at debug level and bad checksums as
# warnings: the worker's log is not the place for a container's insides.
logging.getLogger("tnefparse").setLevel(logging.ERROR)


@dataclass(frozen=True, slots=True)
class TnefFile:
    filename: str
    content_type: str
    data: bytes


def is_tnef(filename: str, content_type: str, data: bytes) -> bool:
    """A TNEF container: its signature, under its content type or its usual names."""
    named = content_type in _CONTENT_TYPES or filename.strip().lower() in _NAMES
    return named and data.startswith(_SIGNATURE)


@dataclass(frozen=True, slots=True)
class Tnef:
    """What a container holds: its files, and its body as text with where it came from
    (`text/plain`, `text/html`, `text/rtf`; empty when it has none) and the defects
    reading it met."""

    files: list[TnefFile]
    body: str = ""
    body_source: str = "none"
    body_defects: tuple[str, ...] = ()


def read_tnef(data: bytes) -> Tnef | None:
    """The files in a TNEF container, in its order (those without bytes left out), and its
    body; None when it cannot be read."""
    if not _framed(data):
        return None
    try:
        container = TNEF(data, do_checksum=False)
        files = []
        for index, attachment in enumerate(container.attachments, start=1):
            if not attachment.data:
                continue
            name = _name(attachment) or f"attachment-{index}"
            kind = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"
            files.append(TnefFile(name, kind, bytes(attachment.data)))
        body = _body(container)
    except Exception:
        return None
    return Tnef(files, *body)


def _body(container: TNEF) -> tuple[str, str, tuple[str, ...]]:
    """The container's body: plain (attBody, PR_BODY), else HTML (PR_HTML), else the
    compressed RTF (PR_RTF_COMPRESSED), which may wrap either or be native rich text."""
    codepage = container.codepage or "cp1252"
    plain = _text(container.body, codepage)
    if plain.strip():
        return clean_text(plain).strip("\n"), "text/plain", ()
    html = _text(container.htmlbody, codepage)
    if html.strip():
        return html_to_text(clean_text(html)), "text/html", ()
    rtf = container.rtfbody  # decompressed (tnefparse calls compressed_rtf)
    if isinstance(rtf, bytes) and rtf.strip():
        text, source, defects = rtf_body(rtf)
        return text, source, tuple(defects)
    return "", "none", ()


def _text(value: object, codepage: str) -> str:
    """A body attribute: tnefparse hands out str when it decoded it, else the bytes."""
    if isinstance(value, str):
        return value.rstrip("\x00")
    if isinstance(value, bytes):
        return decode_bytes(value.rstrip(b"\x00"), codepage)[0]
    return ""


def _framed(data: bytes) -> bool:
    """Whether every attribute's declared length fits in the container: tnefparse cuts a
    truncated one short without a word, which would route the front of a file as the file."""
    offset = len(_SIGNATURE) + 2
    while offset < len(data):
        if offset + 9 > len(data):
            return False
        (length,) = struct.unpack_from("<I", data, offset + 5)
        offset += 9 + length + 2
    return offset == len(data)


def _name(attachment: object) -> str:
    """The long file name when the container has one, else the 8.3 title, cleaned."""
    for read in ("long_filename", "name"):
        try:
            value = getattr(attachment, read)
            value = value() if callable(value) else value
        except (UnicodeDecodeError, AttributeError, TypeError, ValueError):
            continue
        if isinstance(value, bytes):
            value = value.decode("cp1252", errors="replace")
        if isinstance(value, str):
            cleaned = value.strip("\x00").replace("\\", "/").rsplit("/", 1)[-1].strip()
            if cleaned:
                return cleaned
    return ""
