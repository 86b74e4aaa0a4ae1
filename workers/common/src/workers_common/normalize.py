"""Canonical text normalization: the one place that decides what canonical text looks like.

Every byte offset a worker reports points into normalized text, so the normalization must be
the same everywhere: Unicode NFC (so "é" is one code point whichever way the source spelled
it) and LF-only line endings (CRLF and lone CR both become LF), whatever OS produced the
source. IngestionResultBuilder applies it exactly once, to every piece of text it receives.
"""

from __future__ import annotations

import unicodedata

__all__ = ["normalize_canonical"]


def normalize_canonical(text: str) -> str:
    """Returns `text` in NFC with every CRLF and lone CR turned into LF.

    Line endings are folded first: NFC never creates or removes CR or LF, so the order
    does not change the result, but folding first keeps NFC from seeing the CRs at all.
    """
    if not isinstance(text, str):
        raise TypeError(f"canonical text must be str, not {type(text).__name__}")
    folded = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", folded)
