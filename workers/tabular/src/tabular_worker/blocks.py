"""csv/tsv text read in blocks of whole records: memory bounded whatever the file's size.

The UTF-8 file (sniff.py) is read `block_bytes` at a time; each block is cut after its
last record boundary — an LF outside quotes — and the rest is carried into the next one.
Quote state is the parity of `"` bytes since the start of the run (a run always starts at
a record boundary, outside quotes): a doubled quote `""` flips it twice, and the LF of a
CRLF ends the record with its CR. That is how polars splits csv text itself (a stray
quote inside an unquoted field fails its parse either way). A record still unfinished past
`max_record_bytes` — a 1 GB line, or one quoted field spanning many short lines — is
too_large before more of it is buffered. Text without quoting (sniff.py) is cut at its
last LF, every `"` in it being a literal character. Each run is parsed by `pl.read_csv` on
its bytes, with the schema fixed from the head of the file, so no block is ever mapped or
read ahead.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from pathlib import Path

from workers_common import TooLarge

__all__ = ["last_boundary", "record_runs"]

_QUOTE = b'"'
_LF = b"\n"
_BOM = b"\xef\xbb\xbf"


def last_boundary(data: bytes) -> int:
    """The index just after the last LF of `data` outside quotes (parity counted from
    `data`'s start), or -1 when there is none."""
    parity = data.count(_QUOTE) & 1  # of the quotes before `end`
    end = len(data)
    while True:
        quote = data.rfind(_QUOTE, 0, end)
        if parity == 0:  # between `quote` and `end` lies text outside quotes
            lf = data.rfind(_LF, quote + 1, end)
            if lf >= 0:
                return lf + 1
        if quote < 0:
            return -1
        end, parity = quote, parity ^ 1


def _last_lf(data: bytes) -> int:
    lf = data.rfind(_LF)
    return lf + 1 if lf >= 0 else -1


def record_runs(
    path: Path, *, block_bytes: int, max_record_bytes: int, quoted: bool = True
) -> Iterator[bytes]:
    """Successive runs of whole records of the file at `path` (the last one may lack its
    final LF), a UTF-8 byte-order mark dropped; raises TooLarge as the module says."""
    boundary = last_boundary if quoted else _last_lf
    carry = b""
    offset = 0  # of `carry`'s first byte in the file
    with path.open("rb") as handle:
        head = handle.read(max(block_bytes, len(_BOM)))
        if head.startswith(_BOM):
            head, offset = head[len(_BOM) :], len(_BOM)
        for block in chain([head], iter(lambda: handle.read(block_bytes), b"")):
            data = carry + block if carry else block
            cut = boundary(data)
            if cut > 0:
                yield data[:cut]
                offset += cut
                carry = data[cut:]
            else:
                carry = data
            if len(carry) > max_record_bytes:
                raise TooLarge(
                    f"a record of more than {max_record_bytes} bytes (max_line_bytes) starts "
                    f"at byte {offset}; records that long are refused before parsing"
                )
    if carry:
        yield carry
