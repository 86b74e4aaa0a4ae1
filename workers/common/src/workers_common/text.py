"""Decoding text whose encoding nothing declares: a byte-order mark says it, else UTF-8
when the bytes are UTF-8, else a guess.

The guess is charset-normalizer's over a 64 KiB prefix (enough to decide, and fast:
~1,500 documents/s on these machines). Latin text fits several single-byte code pages
almost equally well, so windows-1252, the commonest legacy encoding of Western text (and
the web's default, WHATWG), wins when it is nearly as good as the best. Bytes that do not
decode in the chosen encoding become U+FFFD and are counted: a file with a few broken
bytes is still text.
"""

from __future__ import annotations

import codecs
import threading
from dataclasses import dataclass

from charset_normalizer import from_bytes

from .failures import InvalidInput

__all__ = ["DecodedText", "decode_text", "detect_encoding", "encoding_from_bom", "guess_encoding"]

DETECTION_PREFIX = 64 * 1024
"""Bytes the guess looks at."""
_SNIFF_BYTES = 8 * 1024
"""Bytes a NUL is looked for in: one there (without a UTF-16/32 mark) means binary data."""
_BOMS = (
    # UTF-32 first: its little-endian mark starts with UTF-16's.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_WESTERN = frozenset({"cp1252", "latin_1", "iso8859_15"})
_EAST_ASIAN = frozenset(
    codecs.lookup(name).name
    for name in (
        "big5",
        "big5hkscs",
        "cp932",
        "cp949",
        "cp950",
        "euc_jis_2004",
        "euc_jp",
        "euc_kr",
        "gb18030",
        "gb2312",
        "gbk",
        "hz",
        "johab",
        "shift_jis",
        "shift_jis_2004",
    )
)
"""Double-byte code pages (canonical names), which a short Latin text can pass for."""
_TIE = 0.15
"""How much worse (charset-normalizer's chaos) a Western code page may be and still win."""


@dataclass(frozen=True, slots=True)
class DecodedText:
    text: str
    encoding: str
    """The codec's canonical name (`utf-8`, `cp1252`, `utf-16-le`, ...)."""
    source: str
    """How it was chosen: `bom`, `utf-8` (the bytes are UTF-8) or `detected`."""
    replaced: int
    """Byte sequences that did not decode, each now one U+FFFD."""


def encoding_from_bom(data: bytes) -> tuple[str, int] | None:
    """(codec, mark length) of the byte-order mark `data` starts with, if any."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    return None


def detect_encoding(data: bytes) -> str | None:
    """UTF-8 when the prefix is UTF-8 (a character cut by the prefix's end allowed), else
    charset-normalizer's best guess (a Western code page when nearly as good); None when
    nothing decodes it."""
    prefix = data[:DETECTION_PREFIX]
    try:
        prefix.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as err:
        if err.start >= len(prefix) - 3:  # only a character cut short at the end
            return "utf-8"
    return guess_encoding(prefix)


def guess_encoding(data: bytes) -> str | None:
    """charset-normalizer's best guess over the first 64 KiB of `data` (a Western code
    page when nearly as good); None when nothing decodes it."""
    matches = list(from_bytes(data[:DETECTION_PREFIX]))
    if not matches:
        return None
    best = matches[0]
    for match in matches:
        if match.encoding in _WESTERN and match.chaos <= best.chaos + _TIE:
            return "cp1252"
    try:
        return codecs.lookup(best.encoding).name
    except LookupError:
        return None


def decode_text(data: bytes) -> DecodedText:
    """`data` as text: by its byte-order mark, else as UTF-8 (a few broken sequences
    allowed), else in the guessed encoding; undecodable bytes replaced and counted.
    Binary data (a NUL in the first 8 KiB without a UTF-16/32 mark, or nothing a guess
    decodes) → invalid_input."""
    bom = encoding_from_bom(data)
    if bom is not None:
        encoding, skip = bom
        text, replaced = _decode_counting(data[skip:], encoding)
        return DecodedText(text, encoding, "bom", replaced)
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise InvalidInput("binary data, not text (a NUL byte in its first 8 KiB)")
    text, replaced = _decode_counting(data, "utf-8")
    # UTF-8 with a few broken sequences is still UTF-8 (a guess would turn every other
    # accented letter into mojibake): as many valid multi-byte characters as broken
    # sequences keep it UTF-8. A legacy code page's accented letters are all broken.
    if replaced == 0 or _non_ascii(text) - replaced >= replaced:
        return DecodedText(text, "utf-8", "utf-8", replaced)
    guessed = guess_encoding(data)
    if guessed is None:
        raise InvalidInput("binary data, not text in any known encoding")
    if guessed.startswith(("utf-16", "utf-32")):  # without a mark or a NUL: a misguess
        return DecodedText(text, "utf-8", "utf-8", replaced)
    if guessed in _EAST_ASIAN and _reads_as_western(data):
        guessed = "cp1252"
    text, replaced = _decode_counting(data, guessed)
    return DecodedText(text, guessed, "detected", replaced)


class _Replaced(threading.local):
    count = 0


_REPLACED = _Replaced()
_COUNTING = "workers_common.text.count_replaced"


def _count_replaced(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err
    _REPLACED.count += 1
    return "\ufffd", err.end


codecs.register_error(_COUNTING, _count_replaced)


def _reads_as_western(data: bytes) -> bool:
    """Whether windows-1252 reads `data` as Western text: it decodes, and its non-ASCII
    characters are letters (é, ß, ñ), nine in ten at least. A short Latin text is often
    guessed a double-byte East Asian code page (a French sentence: Big5), in which its
    accented letters pair up; East Asian text read this way is symbols (¤, ±, ³) and
    bytes windows-1252 leaves undefined about as often as letters."""
    try:
        text = data[:DETECTION_PREFIX].decode("cp1252")
    except UnicodeDecodeError:
        return False
    others = [c for c in text if not c.isascii()]
    return bool(others) and sum(c.isalpha() for c in others) >= 0.9 * len(others)


def _non_ascii(text: str) -> int:
    return len(text) - len(text.encode("ascii", "ignore"))


def _decode_counting(data: bytes, encoding: str) -> tuple[str, int]:
    _REPLACED.count = 0
    text = data.decode(encoding, errors=_COUNTING)
    return text, _REPLACED.count
