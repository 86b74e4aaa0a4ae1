"""Decoding a page's bytes: the HTTP header's charset, then a BOM, then `<meta>`, then detection.

Labels go through Python's codec registry; one that names no codec is skipped, as a
browser ignores an unknown label. Detection is workers_common.text's (charset-normalizer
over a 64 KiB prefix, windows-1252 when nearly as good). Bytes that do not decode become
U+FFFD: a page with a few broken bytes is still a page.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from workers_common.text import codec_name, detect_encoding, meta_charset

__all__ = ["Decoded", "decode_html", "header_charset"]

_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
"""The marks a browser honours (WHATWG: no UTF-32)."""


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str
    """The codec's canonical name (`iso8859-1`, `utf-8`, …)."""
    source: str
    """Where the encoding came from: header, bom, meta, detected or default."""


def header_charset(content_type: str) -> str | None:
    """The codec a `Content-Type` header's charset names, if it names a known one."""
    match = _HEADER_CHARSET.search(content_type)
    return codec_name(match.group(1)) if match else None


def _bom(body: bytes) -> tuple[str, int] | None:
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, len(bom)
    return None


def decode_html(body: bytes, content_type: str = "") -> Decoded:
    """The page's text and how its encoding was chosen."""
    encoding = header_charset(content_type)
    if encoding is not None:
        bom = _bom(body)
        skip = bom[1] if bom is not None and codec_name(bom[0]) == encoding else 0
        return Decoded(body[skip:].decode(encoding, "replace"), encoding, "header")
    bom = _bom(body)
    if bom is not None:
        return Decoded(body[bom[1] :].decode(bom[0], "replace"), bom[0], "bom")
    for source, found in (
        ("meta", codec_name(meta_charset(body))),
        ("detected", detect_encoding(body)),
    ):
        if found is not None:
            return Decoded(body.decode(found, "replace"), found, source)
    return Decoded(body.decode("utf-8", "replace"), "utf-8", "default")
