"""Turning bytes and half-decoded header strings into clean text, even when a charset lies.

Mail declares charsets that are wrong surprisingly often: UTF-8 labelled us-ascii or
iso-8859-1, Windows-1252 labelled utf-8, made-up names. The standard library then
substitutes U+FFFD for every byte it cannot map, silently. Here a declared charset is
used only when it decodes the bytes without error; otherwise UTF-8, then Windows-1252
(which maps every byte but five, like every browser's "latin-1"), then the declared
one with replacement, in that fixed order so the result is deterministic. Every repair
is reported, so the MESSAGE records that its text was guessed.
"""

from __future__ import annotations

import codecs

__all__ = ["clean_text", "decode_bytes"]

# The last resorts, tried in this order after the declared charset.
_FALLBACKS = ("utf-8", "cp1252")


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip('"').lower()).name
    except LookupError:
        return None


def decode_bytes(data: bytes, declared: str | None) -> tuple[str, str | None]:
    """Decodes `data`; returns the text and, when the declared charset was not used as it
    stands, a defect string saying what was used instead."""
    codec = _codec(declared)
    if codec is not None:
        try:
            return data.decode(codec), None
        except UnicodeDecodeError:
            pass
    # us-ascii is the MIME default when nothing is declared; a plain UTF-8 or 1252 body
    # without a declaration is common enough that it is not called a defect.
    for fallback in _FALLBACKS:
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError:
            continue
        if declared is None or (codec is None and not declared.strip()):
            return text, None
        return text, f"charset:{_label(declared)}->{fallback}"
    # cp1252 leaves 0x81 0x8d 0x8f 0x90 0x9d undefined; latin-1 maps every byte.
    return data.decode("latin-1"), f"charset:{_label(declared)}->latin-1"


def _label(declared: str | None) -> str:
    if declared is None:
        return "none"
    # A defect string must stay short and printable whatever the header held.
    label = "".join(ch for ch in declared.strip().lower() if ch.isprintable())[:40]
    return label or "none"


def clean_text(value: str) -> str:
    """Returns `value` with a UTF-8 form: lone surrogates (raw 8-bit bytes the email
    package smuggled through with surrogateescape) are re-read as UTF-8 or Windows-1252;
    NUL and other C0 controls except tab and newline are dropped."""
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        try:
            value, _ = decode_bytes(value.encode("utf-8", "surrogateescape"), None)
        except UnicodeEncodeError:
            # A surrogate outside U+DC80..U+DCFF was not a smuggled byte: not text at all.
            value = value.encode("utf-8", "replace").decode("utf-8")
    return "".join(ch for ch in value if ch >= " " or ch in "\t\n" or ch == "\r")
