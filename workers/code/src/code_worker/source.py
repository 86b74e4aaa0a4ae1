"""A source file's bytes as canonical text: binary refused, undecodable bytes counted."""

from __future__ import annotations

from dataclasses import dataclass

from workers_common import Unsupported, normalize_canonical

__all__ = ["Source", "decode_source"]

_SNIFF = 8192
_REPLACEMENT = "\ufffd"


@dataclass(frozen=True, slots=True)
class Source:
    text: str
    """Canonical text (NFC, LF): what spans point into and what tree-sitter parses."""
    encoded: bytes
    replaced: int
    """Undecodable byte sequences replaced by U+FFFD."""
    lines: int


def decode_source(data: bytes) -> Source:
    """UTF-8 (a BOM dropped); a NUL byte in the first 8 KiB means binary → unsupported."""
    if b"\x00" in data[:_SNIFF]:
        raise Unsupported("binary file (a NUL byte in its first 8 KiB), not source code")
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        text = body.decode("utf-8")
        replaced = 0
    except UnicodeDecodeError:
        text = body.decode("utf-8", errors="replace")
        replaced = text.count(_REPLACEMENT) - body.count(_REPLACEMENT.encode())
    canonical = normalize_canonical(text)
    lines = canonical.count("\n") + (1 if canonical and not canonical.endswith("\n") else 0)
    return Source(canonical, canonical.encode("utf-8"), replaced, lines)
