"""A source file's bytes as canonical text: binary refused, undecodable bytes counted.

The encoding, in this order:
- a byte-order mark: UTF-8, UTF-16 or UTF-32 (Windows tools write UTF-16 sources with a
  BOM; without this they would look binary for their NUL bytes);
- Python only: the PEP 263 coding declaration on the first two lines (`# -*- coding:
  latin-1 -*-`), read by the standard library's own `tokenize.detect_encoding`, when it
  names a codec that spells ASCII as ASCII (the declaration itself is ASCII, so one that
  does not cannot be what the file is in);
- else UTF-8.
Bytes the chosen encoding cannot decode are replaced by U+FFFD and counted.
"""

from __future__ import annotations

import codecs
import io
import threading
import tokenize
from dataclasses import dataclass
from functools import cache

from workers_common import Unsupported, normalize_canonical

__all__ = ["Source", "decode_source"]

_SNIFF = 8192
_REPLACEMENT = "\ufffd"
_BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ASCII_PROBE = "".join(chr(c) for c in range(128))


@dataclass(frozen=True, slots=True)
class Source:
    text: str
    """Canonical text (NFC, LF): what spans point into and what tree-sitter parses."""
    encoded: bytes
    replaced: int
    """Undecodable byte sequences replaced by U+FFFD."""
    lines: int
    encoding: str = "utf-8"
    """The encoding the bytes were read in (a codec name as Python spells it)."""


@cache
def _ascii_compatible(encoding: str) -> bool:
    try:
        return _ASCII_PROBE.encode(encoding) == _ASCII_PROBE.encode("ascii")
    except (LookupError, UnicodeError):
        return False


def _declared(data: bytes) -> str | None:
    """The codec a PEP 263 declaration names, when it is one to honour (else None)."""
    if b"coding" not in data[:1024]:  # the declaration sits on the first two lines
        return None
    try:
        encoding, _lines = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:  # an unknown codec or a contradiction: read as UTF-8, count
        return None
    name = codecs.lookup(encoding).name
    return name if name != "utf-8" and _ascii_compatible(name) else None


def _encoding(data: bytes, python: bool) -> tuple[str, bytes]:
    """(codec, the bytes to decode with it): a BOM is dropped."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, data[len(bom) :]
    declared = _declared(data) if python else None
    return declared or "utf-8", data


def decode_source(data: bytes, *, python: bool = False) -> Source:
    """The file's canonical text (`python`: a coding declaration counts). A NUL byte in
    the first 8 KiB of a file without a UTF-16/32 BOM means binary → unsupported."""
    encoding, body = _encoding(data, python)
    if not encoding.startswith(("utf-16", "utf-32")) and b"\x00" in data[:_SNIFF]:
        raise Unsupported("binary file (a NUL byte in its first 8 KiB), not source code")
    try:
        text = body.decode(encoding)
        replaced = 0
    except UnicodeDecodeError:
        text, replaced = _decode_counting(body, encoding)
    canonical = normalize_canonical(text)
    lines = canonical.count("\n") + (1 if canonical and not canonical.endswith("\n") else 0)
    return Source(canonical, canonical.encode("utf-8"), replaced, lines, encoding)


def _decode_counting(body: bytes, encoding: str) -> tuple[str, int]:
    """The text with each undecodable sequence replaced by U+FFFD (as errors="replace"
    does), and how many there were."""
    _REPLACED.count = 0
    text = body.decode(encoding, errors=_COUNTING)
    return text, _REPLACED.count


class _Replaced(threading.local):
    count = 0


_REPLACED = _Replaced()
_COUNTING = "code_worker.count_replaced"


def _replace_counting(err: UnicodeError) -> tuple[str, int]:
    assert isinstance(err, UnicodeDecodeError)  # registered for decoding only
    _REPLACED.count += 1
    return _REPLACEMENT, err.end


codecs.register_error(_COUNTING, _replace_counting)
