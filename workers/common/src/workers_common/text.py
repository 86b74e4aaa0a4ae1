"""Decoding text whose encoding nothing declares: a byte-order mark says it, else UTF-8
when the bytes are UTF-8, else a guess.

Seven-bit text with ISO-2022 escape sequences (`ESC $ B`: ISO-2022-JP, the encoding of
Japanese mail and of many older Japanese text files; `ESC $ ) C`: ISO-2022-KR) is that
encoding, not ASCII with control characters: the escapes say so, as every browser's
detector reads them. UTF-16 without a byte-order mark (some Windows tools write it) has a
NUL in every other byte and almost none in the others: it is read as such, where any other
NUL in the first 8 KiB means binary data (no false reading among the 21,109 files with NULs
under /usr/share and /usr/lib on these machines).

The guess is charset-normalizer's over a 64 KiB prefix (enough to decide, and fast:
~1,500 documents/s on these machines). Latin text fits several single-byte code pages
almost equally well, so windows-1252, the commonest legacy encoding of Western text (and
the web's default, WHATWG), wins when it is nearly as good as the best. When
charset-normalizer finds nothing (text it judges too chaotic: CPython's cp949 and johab
test files), the East Asian double-byte code pages are tried in turn, strictly: random or
binary bytes fail all of them within a few characters. Bytes that do not decode in the
chosen encoding become U+FFFD and are counted: a file with a few broken bytes is still
text.
"""

from __future__ import annotations

import codecs
import re
import threading
from dataclasses import dataclass

from charset_normalizer import CharsetMatch, from_bytes

from .failures import InvalidInput

__all__ = [
    "DecodedText",
    "codec_name",
    "decode_text",
    "detect_encoding",
    "encoding_from_bom",
    "guess_encoding",
    "iso2022_encoding",
    "legacy_encoding",
    "meta_charset",
]

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
_ISO2022 = (
    # (escape sequences that announce it, codecs tried in turn: the plain one first)
    (
        (b"\x1b$B", b"\x1b$@", b"\x1b$(D", b"\x1b(J", b"\x1b(I"),
        ("iso2022_jp", "iso2022_jp_1", "iso2022_jp_2", "iso2022_jp_ext", "iso2022_jp_2004"),
    ),
    ((b"\x1b$)C",), ("iso2022_kr",)),
)
_STRICT_FALLBACK = ("cp949", "cp932", "big5hkscs", "johab", "gb18030")
"""Tried in turn, strictly, when charset-normalizer finds nothing: the double-byte code
pages, whose pairs reject stray bytes (GB 18030 last: its four-byte forms accept most)."""
_JAPANESE_LABELS = frozenset(
    {"cp932", "shift_jis", "shift_jis_2004", "shift_jisx0213", "euc_jp", "euc_jis_2004"}
    | {"euc_jisx0213"}
)
"""charset-normalizer's names of the Japanese double-byte code pages."""
_JAPANESE = frozenset(codecs.lookup(name).name for name in _JAPANESE_LABELS)
_TIE = 0.05
"""How much more chaotic (charset-normalizer's measure) than the least a candidate may be
and still be weighed by its coherence."""
_TIE_WESTERN = 0.15
"""The same for windows-1252 (French text with its accents reads as cp1257 at 0.06 less)."""
_COMMON = frozenset(
    {
        *("cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257"),
        *("iso8859_2", "iso8859_5", "iso8859_7", "iso8859_8", "iso8859_9", "iso8859_15"),
        *("latin_1", "koi8_r", "koi8_u", "cp866", "cp874", "tis_620"),
        *("big5", "big5hkscs", "cp932", "cp949", "cp950", "euc_jis_2004", "euc_jisx0213"),
        *("euc_jp", "euc_kr", "gb18030", "gb2312", "gbk", "hz", "johab", "shift_jis"),
        *("shift_jis_2004", "shift_jisx0213"),
        *("utf_16", "utf_16_be", "utf_16_le", "utf_32", "utf_32_be", "utf_32_le", "utf_8"),
    }
)
"""The encodings text is actually written in (charset-normalizer's names), preferred to the
rare ones it finds as plausible."""


@dataclass(frozen=True, slots=True)
class DecodedText:
    text: str
    encoding: str
    """The codec's canonical name (`utf-8`, `cp1252`, `utf-16-le`, ...)."""
    source: str
    """How it was chosen: `bom`, `escapes` (ISO-2022's), `utf-8` (the bytes are UTF-8) or
    `detected`."""
    replaced: int
    """Byte sequences that did not decode, each now one U+FFFD."""


def encoding_from_bom(data: bytes) -> tuple[str, int] | None:
    """(codec, mark length) of the byte-order mark `data` starts with, if any."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    return None


_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE | re.DOTALL
)
_META_WINDOW = 4096
"""Bytes of an HTML page its `<meta charset>` is looked for in (WHATWG's prescan reads
1,024; pages with long heads put it later)."""


def codec_name(label: str | None) -> str | None:
    """The canonical codec name an encoding label stands for (`ISO-8859-1` → `iso8859-1`),
    or None when it names none: a browser ignores an unknown label."""
    if not label:
        return None
    try:
        return codecs.lookup(label.strip().lower()).name
    except LookupError:
        return None


def meta_charset(page: bytes) -> str | None:
    """The charset label an HTML page's `<meta charset>` or `<meta http-equiv
    content="...; charset=...">` declares near its start, lower-cased as written."""
    match = _META_CHARSET.search(page, 0, _META_WINDOW)
    return match.group(1).decode("ascii", "replace").lower() if match else None


def iso2022_encoding(data: bytes) -> str | None:
    """The ISO-2022 codec of seven-bit `data` whose escape sequences announce one and
    that decodes in it (the first 64 KiB, a sequence cut at their end allowed)."""
    prefix = data[:DETECTION_PREFIX]
    if b"\x1b" not in prefix or not prefix.isascii():
        return None
    for escapes, codecs_tried in _ISO2022:
        if not any(escape in prefix for escape in escapes):
            continue
        for name in codecs_tried:
            if _strictly(prefix, name, complete=len(prefix) == len(data)) is not None:
                return name
    return None


def _strictly(prefix: bytes, name: str, *, complete: bool) -> str | None:
    """`prefix` decoded in `name` without an error (a character cut at its end allowed
    unless it is all the data), or None."""
    try:
        return codecs.getincrementaldecoder(name)("strict").decode(prefix, final=complete)
    except UnicodeDecodeError:
        return None


def detect_encoding(data: bytes) -> str | None:
    """An announced ISO-2022 encoding; else UTF-8 when the prefix is UTF-8 (a character
    cut by the prefix's end allowed); else the guess (`guess_encoding`); None when nothing
    decodes it."""
    prefix = data[:DETECTION_PREFIX]
    announced = iso2022_encoding(prefix)
    if announced is not None:
        return announced
    try:
        prefix.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as err:
        if err.start >= len(prefix) - 3:  # only a character cut short at the end
            return "utf-8"
    return guess_encoding(prefix)


def guess_encoding(data: bytes) -> str | None:
    """charset-normalizer's guess over the first 64 KiB of `data`, else the first East
    Asian code page that decodes them strictly; None when nothing decodes them.

    Of charset-normalizer's candidates, the encodings in common use are weighed (it
    offers hp-roman8, mac-iceland or cp775 about as readily), the rare ones only when no
    common one is near, by coherence (its language model): windows-1252 when it is as
    coherent as any within `_TIE_WESTERN` of the least chaos (the commonest legacy
    encoding, and the web's default), else the most coherent within `_TIE`. Measured by
    bench/encoding_check.py on translations from /usr/share/locale (29 languages, 1,167
    samples of 150 to 8,000 characters in their legacy code pages): 87-90 % decoded
    exactly, against 73-77 % when windows-1252 won every near tie (Czech, Hungarian,
    Turkish and Lithuanian all read as it).

    A Japanese guess that reads the bytes as mostly half-width katakana (rare in real
    Japanese text, where kana are full-width) is taken back and the guess made again
    without the Japanese code pages: a short KOI8-R text is exactly that in Shift_JIS."""
    prefix = data[:DETECTION_PREFIX]
    matches = list(from_bytes(prefix))
    if not matches:
        return _strict_fallback(prefix, complete=len(prefix) == len(data))
    name = _pick(prefix, matches)
    if name in _JAPANESE and _mostly_halfwidth_kana(prefix, name):
        others = list(from_bytes(prefix, cp_exclusion=sorted(_JAPANESE_LABELS)))
        return (_pick(prefix, others) if others else None) or name
    return name


def _mostly_halfwidth_kana(prefix: bytes, name: str) -> bool:
    text = prefix.decode(name, errors="ignore")
    others = [c for c in text if not c.isascii()]
    return sum("\uff61" <= c <= "\uff9f" for c in others) * 2 > len(others)


def _pick(prefix: bytes, matches: list[CharsetMatch]) -> str | None:
    """The candidate `guess_encoding` takes among charset-normalizer's `matches`."""
    least = min(match.chaos for match in matches)

    def weighed(tie: float) -> tuple[list[CharsetMatch], float]:
        near = [match for match in matches if match.chaos <= least + tie]
        near = [match for match in near if match.encoding in _COMMON] or near
        return near, max(match.coherence for match in near)

    near, top = weighed(_TIE_WESTERN)
    if any(match.encoding in _WESTERN and match.coherence >= top for match in near):
        return "cp1252"
    near, top = weighed(_TIE)
    pick = next(match for match in near if match.coherence >= top)
    try:
        name = codecs.lookup(pick.encoding).name
    except LookupError:
        return None
    return "cp1252" if _same_as_western(prefix, name) else name


def _same_as_western(prefix: bytes, name: str) -> bool:
    """Whether windows-1252 reads `prefix` exactly as the single-byte `name` does (German
    text comes back as cp1250, whose letters it shares): then the commoner name."""
    if name in _EAST_ASIAN or name.startswith(("utf-", "iso2022")):
        return False
    try:
        return prefix.decode("cp1252") == prefix.decode(name)
    except UnicodeDecodeError:
        return False


def legacy_encoding(data: bytes) -> str | None:
    """The encoding of bytes that are not UTF-8, as text without a declaration
    is read: `guess_encoding`'s, except that a UTF-16/32 guess without a NUL (the form
    needs them) is taken back to UTF-8, and an East Asian one for text that windows-1252 reads as
    Western letters is windows-1252. None: nothing decodes them (binary)."""
    guessed = guess_encoding(data)
    if guessed is None:
        return None
    wide = guessed.startswith(("utf-16", "utf-32"))
    if wide and b"\x00" not in data[:DETECTION_PREFIX]:  # no mark, no NUL: a misguess
        return "utf-8"
    if guessed in _EAST_ASIAN and _reads_as_western(data):
        return "cp1252"
    return guessed


def _utf16_without_mark(head: bytes) -> str | None:
    """UTF-16 written without a byte-order mark (some Windows tools): text in a Latin
    script puts a NUL in every other byte, the high half of each character, and almost
    never in the other half. Binary data has NULs in both."""
    if len(head) < 16:
        return None
    even, odd = head[0::2], head[1::2]
    for nuls, others, name in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if nuls.count(0) >= 0.9 * len(nuls) and others.count(0) <= 0.01 * len(others):
            return name
    return None


def _strict_fallback(prefix: bytes, *, complete: bool) -> str | None:
    for name in _STRICT_FALLBACK:
        text = _strictly(prefix, name, complete=complete)
        if text is not None and not any(c < " " and c not in "\t\n\r\f\v" for c in text):
            return name
    return None


def decode_text(data: bytes) -> DecodedText:
    """`data` as text: by its byte-order mark, else as UTF-8 (a few broken sequences
    allowed), else in the guessed encoding; undecodable bytes replaced and counted.
    Binary data (a NUL in the first 8 KiB without a UTF-16/32 mark, unless every other
    byte is one: UTF-16 without its mark; or nothing a guess decodes) → invalid_input."""
    bom = encoding_from_bom(data)
    if bom is not None:
        encoding, skip = bom
        text, replaced = _decode_counting(data[skip:], encoding)
        return DecodedText(text, encoding, "bom", replaced)
    if b"\x00" in data[:_SNIFF_BYTES]:
        wide = _utf16_without_mark(data[:_SNIFF_BYTES])
        if wide is None:
            raise InvalidInput("binary data, not text (a NUL byte in its first 8 KiB)")
        text, replaced = _decode_counting(data, wide)
        return DecodedText(text, wide, "detected", replaced)
    announced = iso2022_encoding(data)
    if announced is not None:
        text, replaced = _decode_counting(data, announced)
        return DecodedText(text, announced, "escapes", replaced)
    text, replaced = _decode_counting(data, "utf-8")
    # UTF-8 with a few broken sequences is still UTF-8 (a guess would turn every other
    # accented letter into mojibake): as many valid multi-byte characters as broken
    # sequences keep it UTF-8. A legacy code page's accented letters are all broken.
    if replaced == 0 or _non_ascii(text) - replaced >= replaced:
        return DecodedText(text, "utf-8", "utf-8", replaced)
    guessed = legacy_encoding(data)
    if guessed is None:
        raise InvalidInput("binary data, not text in any known encoding")
    if guessed == "utf-8":
        return DecodedText(text, "utf-8", "utf-8", replaced)
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
