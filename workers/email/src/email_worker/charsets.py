"""Turning bytes and half-decoded header strings into clean text, even when a charset lies.

Mail declares charsets that are wrong surprisingly often: UTF-8 labelled us-ascii,
Windows-1252 labelled utf-8 or iso-8859-1, GBK labelled gb2312, made-up names. The rules,
in a fixed order so the result is deterministic, and every repair reported so the
MESSAGE records that its text was not read as declared:

1. The declared charset, when it decodes the bytes without error, is used as it stands
   (iso-8859-1 only when no byte is in 0x80-0x9F: those are Windows-1252's quotes and
   dashes, never C1 controls in real mail).
2. Else its known superset, the one mail clients really write when they say the smaller
   name (the WHATWG encoding standard's mapping): gb2312/gbk -> gb18030, iso-8859-1 ->
   windows-1252, iso-8859-9 -> windows-1254, tis-620/iso-8859-11 -> windows-874,
   euc-kr -> cp949, shift_jis -> cp932, big5 -> big5hkscs. Defect
   `charset:<declared>-><superset>`.
3. Else the declared charset (or its superset) with each bad byte sequence replaced by
   U+FFFD, as the standard library decodes, when the bad sequences are few (at most a
   quarter of the non-ASCII bytes): a Cyrillic or Chinese body with one broken byte stays
   Cyrillic or Chinese. Defect `charset:<declared>:replaced:<n>` (or
   `charset:<declared>-><superset>:replaced:<n>`).
4. Else (it fails badly, or is unknown, or is us-ascii with 8-bit bytes): UTF-8; then,
   for text with enough 8-bit bytes to tell (`_DETECT_MIN` or more), the encoding
   workers_common.text detects, when it decodes them without error (a Russian body in
   Windows-1251 under no charset or a us-ascii label came out as Windows-1252 mojibake);
   then Windows-1252 (which maps every byte but five), then Latin-1 (which maps every
   byte). Defect `charset:<declared>-><used>`; none when nothing was declared, since a
   plain UTF-8 or 1252 body without a declaration is common enough not to be called a
   defect (a detected other encoding is: `charset:none-><used>`).
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Iterator

from workers_common.text import legacy_encoding

__all__ = ["clean_text", "decode_bytes"]

# The last resorts, tried in this order.
_FALLBACKS = ("utf-8", "cp1252")

# Labels mail uses that Python's codec registry does not know (WHATWG names).
_ALIASES = {
    "x-gbk": "gb18030",
    "gb_2312-80": "gb18030",
    "windows-874": "cp874",
    "x-sjis": "cp932",
    "ks_c_5601-1989": "cp949",
    "x-euc-jp": "euc_jp",
    "unicode-1-1-utf-8": "utf-8",
    "x-unicode20utf8": "utf-8",
}
# Declared codec (Python's canonical name) -> the superset mail clients really write.
_SUPERSETS = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
}
_C1 = re.compile(rb"[\x80-\x9f]")
_ASCII = bytes(range(128))
_DETECT_MIN = 16
"""8-bit bytes a text needs before its encoding is detected (a header's few are not enough
to tell one code page from another: Windows-1252 reads them)."""
_BAD_SHARE = 0.25
"""Replacing is right while bad sequences are at most this share of the non-ASCII bytes."""

# Decoding with replacement counts the replaced sequences. Codec error handlers are
# registered by name, globally, so the count lives in a thread-local reset per call.
_COUNTING = "telha-email-count"
_bad = threading.local()


def _count_and_replace(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err
    _bad.count = getattr(_bad, "count", 0) + 1
    return ("\ufffd", err.end)


codecs.register_error(_COUNTING, _count_and_replace)


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    label = name.strip().strip('"').lower()
    try:
        return codecs.lookup(_ALIASES.get(label, label)).name
    except LookupError:
        return None


def _strict(data: bytes, codec: str) -> str | None:
    if codec == "iso8859-1" and _C1.search(data):
        return None  # 1252 punctuation labelled latin-1: let the superset read it
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def _replacing(data: bytes, codec: str) -> tuple[str, int] | None:
    """The bytes decoded with bad sequences replaced, when they are few; else None."""
    _bad.count = 0
    text = data.decode(codec, _COUNTING)
    bad: int = _bad.count
    non_ascii = len(data.translate(None, _ASCII))
    return (text, bad) if bad <= _BAD_SHARE * non_ascii else None


def decode_bytes(data: bytes, declared: str | None) -> tuple[str, str | None]:
    """Decodes `data`; returns the text and, when the declared charset was not used as it
    stands, a defect string saying what was used instead (rules in the module docstring)."""
    codec = _codec(declared)
    if codec is not None and codec != "ascii":
        text = _strict(data, codec)
        if text is not None:
            return text, None
        superset = _SUPERSETS.get(codec)
        if superset is not None:
            text = _strict(data, superset)
            if text is not None:
                return text, f"charset:{_label(declared)}->{superset}"
            if codec == "iso8859-1":
                # Latin-1 maps every byte: the five 1252 leaves undefined were meant so.
                return data.decode(codec), None
        replaced = _replacing(data, superset or codec)
        if replaced is not None:
            text, bad = replaced
            used = f"->{superset}" if superset else ""
            return text, f"charset:{_label(declared)}{used}:replaced:{bad}"
    elif codec == "ascii":
        try:
            return data.decode("ascii"), None
        except UnicodeDecodeError:
            pass  # 8-bit bytes under a 7-bit label: the label says nothing about them
    return _fallback(data, declared, codec)


def _fallback(data: bytes, declared: str | None, codec: str | None) -> tuple[str, str | None]:
    undeclared = declared is None or (codec is None and not declared.strip())
    for fallback in _candidates(data):
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError:
            continue
        if undeclared and fallback in _FALLBACKS:
            return text, None
        return text, f"charset:{_label(declared)}->{fallback}"
    # cp1252 leaves 0x81 0x8d 0x8f 0x90 0x9d undefined; latin-1 maps every byte.
    return data.decode("latin-1"), f"charset:{_label(declared)}->latin-1"


def _candidates(data: bytes) -> Iterator[str]:
    """UTF-8, then the detected encoding (when there are enough 8-bit bytes to tell), then
    Windows-1252. Lazily: the detection runs only once UTF-8 has failed."""
    yield "utf-8"
    if len(data.translate(None, _ASCII)) >= _DETECT_MIN:
        detected = legacy_encoding(data) or "cp1252"
        if detected not in _FALLBACKS and not detected.startswith(("utf-16", "utf-32")):
            yield detected
    yield "cp1252"


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
