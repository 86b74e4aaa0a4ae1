"""csv/tsv bytes to a UTF-8 file polars can read: binary refusal, encoding, line guard, delimiter.

Polars reads UTF-8 only, so the source is checked in one streaming pass (1 MiB at a time,
memory flat whatever the size) and rewritten only when it must be: another encoding, a
byte-order mark of UTF-16/32, invalid UTF-8 (each bad sequence becomes U+FFFD and is
counted), or old Mac CR-only line endings. The same pass enforces `max_line_bytes`: a
physical line longer than that is refused as too_large before polars would have to hold
it in memory. (A record whose *quoted* field spans many short lines is not caught here
but by the block reader, blocks.py, with the same limit.)

The delimiter is chosen from the decoded head of the file: among `, \\t ; |` the one that
splits the first records into the most consistent number of fields.

So is the quoting. RFC 4180 quotes a field that holds a delimiter, a line break or a quote,
and doubles the quotes inside it; IANA's text/tab-separated-values has no quoting at all,
and most programs that write TSV (database dumps, package indexes, scientific tables) put
`"` in fields literally. The two read the same text differently, so the head of the file
is searched for evidence of each: a quote inside an unquoted field, or a quoted field
closed by anything but a delimiter or line end, is text its writer did not quote; a
quoted field holding a delimiter, a line break or a doubled quote is text that was. The
larger count wins; without either (no quotes, or only `"plain"` fields) the file is read
as RFC 4180. Option `quoting` overrides.

And where the table starts. Excel's `sep=;` first line names the delimiter and is no
record. Exports often open with a preamble before the header: a title, `# comment`
lines, `Key: value` lines, blank lines (World Bank downloads, bank statements, instrument
logs). Up to `_MAX_PREAMBLE` leading records are read as one when every one of them is
at most half as wide as the table (whose width is the most common one, at least 3) and
at least 90 % of the records from the first one that wide on have that width: the header
is that record; for a table two columns wide, only when the preamble's lines are `#`
comments (else a one-field title could as well be a narrow header). The preamble's lines
are kept on the TABLE (`preamble`). Option `skip_rows` sets the count instead.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from workers_common import InvalidInput, TooLarge
from workers_common.text import iso2022_encoding, legacy_encoding

from .options import Quoting

__all__ = ["TextFile", "prepare_text"]

_CHUNK = 1 << 20
_SAMPLE = 1 << 20
_SNIFF_RECORDS = 200
_DELIMITERS = (",", "\t", ";", "|")

# Magic numbers of formats people save with a .csv name by mistake: say what it is.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive (an xlsx workbook?)"),
    (b"PAR1", "a parquet file"),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an OLE compound file (a legacy .xls or an encrypted xlsx)",
    ),
    (b"%PDF-", "a PDF document"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\x89PNG", "a PNG image"),
    (b"\x7fELF", "an executable"),
)
_BOMS: tuple[tuple[bytes, str], ...] = (
    # Longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# Text has few control characters besides tab, LF, CR and form feed; binary data has many.
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f]")
_MAX_CONTROL_SHARE = 0.01

# Invalid byte sequences are replaced with U+FFFD, one per sequence as errors="replace"
# does, and counted. Codec error handlers are registered globally by name, so the count
# lives in a thread-local that prepare_text resets.
_ERRORS = "telha-tabular-replace"
_replaced = threading.local()


def _count_and_replace(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err
    _replaced.count = getattr(_replaced, "count", 0) + 1
    return ("\ufffd", err.end)


codecs.register_error(_ERRORS, _count_and_replace)


@dataclass(frozen=True, slots=True)
class TextFile:
    """A csv/tsv source ready for polars."""

    path: Path
    """UTF-8 text (the source itself when it already was)."""
    encoding: str
    """What the source was decoded from: utf-8, utf-8-sig, utf-16-le, cp1252, …"""
    replaced: int
    """Invalid byte sequences replaced with U+FFFD."""
    delimiter: str
    width: int
    """The widest record among the first ones (at least the header's field count)."""
    header_width: int
    """Fields in the first record; 0 for a file without any (empty, blank)."""
    quoted: bool
    """Fields may be quoted as RFC 4180 says; False: every `"` is a literal character."""
    skip: int
    """Records before the header (a `sep=` line, a preamble), as polars counts records:
    blank lines too."""
    preamble: tuple[str, ...]
    """The preamble's non-blank lines, as written (each at most `_PREAMBLE_CHARS`)."""


def prepare_text(
    source: Path,
    fmt: str,
    workdir: Path,
    *,
    max_line_bytes: int,
    delimiter: str | None = None,
    quoting: Quoting = "auto",
    skip_rows: int | None = None,
) -> TextFile:
    """Checks and, when needed, rewrites `source` as UTF-8 under `workdir`; finds its
    delimiter, quoting and first record (`skip_rows`: that many records before the
    header, instead of looking for a preamble)."""
    with source.open("rb") as handle:
        head = handle.read(_SAMPLE)
    _refuse_binary_magic(head, fmt)
    encoding = _detect_encoding(head)
    cr_only = b"\r" in head and b"\n" not in head
    rewrite = cr_only or encoding not in ("utf-8", "utf-8-sig")
    if not rewrite:
        # Already what polars wants (it drops a UTF-8 BOM itself), unless a bad sequence
        # turns up somewhere: then rewrite after all, with replacements.
        rewrite = not _valid_utf8(source, max_line_bytes)
    target, replaced = source, 0
    if rewrite:
        target = workdir / "source.utf8"
        replaced = _transcode(
            source, target, encoding, cr_only=cr_only, max_line_bytes=max_line_bytes
        )
    sample, complete = _decoded_head(target)
    _refuse_binary_text(sample, fmt)
    directive = _SEP_LINE.match(sample)
    if directive is not None:
        sample = sample[directive.end() :]
        delimiter = delimiter or directive.group(1)
    chosen = delimiter or ("\t" if fmt == "tsv" else _sniff_delimiter(sample))
    quoted = quoting == "csv" or (
        quoting == "auto" and _writer_quoted(sample, chosen, complete=complete)
    )
    records = _records(sample, chosen, quoted=quoted)
    skip = _preamble_records(records, sample) if skip_rows is None else skip_rows
    lines = _lines(sample, records[min(skip, len(records)) - 1] if skip and records else None)
    widths = [r.width for r in records[skip:] if r.width]
    return TextFile(
        path=target,
        encoding=encoding,
        replaced=replaced,
        delimiter=chosen,
        width=max(widths, default=0),
        header_width=widths[0] if widths else 0,
        quoted=quoted,
        skip=skip + (directive is not None),
        preamble=tuple(line[:_PREAMBLE_CHARS] for line in lines if line.strip()),
    )


# -- bytes -----------------------------------------------------------------------------------


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            yield chunk


def _refuse_binary_magic(head: bytes, fmt: str) -> None:
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise InvalidInput(f"content is {what}, not {fmt} text")


def _detect_encoding(head: bytes) -> str:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    announced = iso2022_encoding(head)  # seven bits with ISO-2022-JP/KR escapes
    if announced is not None:
        return announced
    text = head.decode("utf-8", errors="replace")
    # A sample cut inside a character ends in a replacement that is no error.
    bad = text.rstrip("\ufffd").count("\ufffd") - head.count(b"\xef\xbf\xbd")
    # Bytes beyond one per character: at least one per valid multi-byte character (each
    # U+FFFD counts two, so discount the bad sequences), counted in C, not per character.
    multibyte = len(text.encode("utf-8")) - len(text) - 2 * text.count("\ufffd")
    # Valid multi-byte characters outnumbering bad sequences: UTF-8 with some damage, kept
    # as UTF-8 (and the damage counted). Otherwise a legacy single-byte encoding, or
    # UTF-16 without a BOM, as charset-normalizer guesses it.
    if bad <= 0 or multibyte > bad:
        return "utf-8"
    # A legacy encoding (or UTF-16 without a BOM), chosen as for any undeclared text
    # (workers_common.text): short samples decode about as cleanly in several code
    # pages (ã is ă in cp1250), and the Western European one wins when nearly as good.
    encoding = legacy_encoding(head)
    if encoding is None:
        raise InvalidInput("content is binary data, not text in any known encoding")
    return encoding


def _valid_utf8(path: Path, max_line_bytes: int) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    guard = _LineGuard(max_line_bytes)
    try:
        for chunk in _chunks(path):
            guard.feed(chunk)
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _transcode(
    source: Path, target: Path, encoding: str, *, cr_only: bool, max_line_bytes: int
) -> int:
    decoder = codecs.getincrementaldecoder(encoding)(_ERRORS)
    guard = _LineGuard(max_line_bytes)
    _replaced.count = 0
    with target.open("wb") as out:
        for chunk in [*_chunks(source), b""]:
            text = decoder.decode(chunk, final=not chunk)
            if cr_only:
                text = text.replace("\r", "\n")
            data = text.encode("utf-8")
            guard.feed(data)
            out.write(data)
    replaced: int = _replaced.count
    return replaced


class _LineGuard:
    """Fails as too_large when a physical line (bytes between LFs) passes `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._run = 0  # bytes since the last LF, carried across chunks
        self._offset = 0

    def feed(self, chunk: bytes) -> None:
        first = chunk.find(b"\n")
        if first < 0:
            self._run += len(chunk)
        else:
            self._check(self._run + first)
            if len(chunk) > self._limit:  # a whole line can fit inside this chunk
                for line in chunk[first + 1 :].split(b"\n")[:-1]:
                    self._check(len(line))
            self._run = len(chunk) - chunk.rfind(b"\n") - 1
        self._offset += len(chunk)
        self._check(self._run)

    def _check(self, length: int) -> None:
        if length > self._limit:
            raise TooLarge(
                f"a line of more than {self._limit} bytes (max_line_bytes) ends by byte "
                f"{self._offset + length}; lines that long are refused before parsing"
            )


# -- text ------------------------------------------------------------------------------------


def _decoded_head(path: Path) -> tuple[str, bool]:
    """The file's first MiB of whole lines, and whether that is the whole file (then a
    quote left open at its end is never closed)."""
    with path.open("rb") as handle:
        head = handle.read(_SAMPLE + 1)
    complete = len(head) <= _SAMPLE
    text = head[:_SAMPLE].decode("utf-8", errors="replace").removeprefix("\ufeff")
    if not complete and "\n" in text:
        text = text[: text.rindex("\n") + 1]  # whole lines only
    return text, complete


def _refuse_binary_text(sample: str, fmt: str) -> None:
    if not sample:
        return
    controls = len(_CONTROL.findall(sample))
    if "\x00" in sample or controls / len(sample) > _MAX_CONTROL_SHARE:
        raise InvalidInput(
            f"content is binary data, not {fmt} text ({controls} control characters in "
            f"the first {len(sample)})"
        )


@dataclass(frozen=True, slots=True)
class _Record:
    width: int
    """Fields; 0 for a blank line."""
    lines: int
    """Physical lines of the sample read by the end of this record."""


def _records(sample: str, delimiter: str, *, quoted: bool = True) -> list[_Record]:
    """The first records of the sample (up to `_SNIFF_RECORDS` non-blank ones), blank
    lines included: polars reads those as (empty) records too."""
    records: list[_Record] = []
    lines = io.StringIO(sample, newline="")
    reader = (
        csv.reader(lines, delimiter=delimiter)
        if quoted
        else csv.reader(lines, delimiter=delimiter, quoting=csv.QUOTE_NONE)
    )
    filled = 0
    try:
        for record in reader:
            records.append(_Record(len(record), reader.line_num))
            filled += bool(record)
            if filled >= _SNIFF_RECORDS:
                break
    except csv.Error:
        pass  # a malformed tail of the sample: judge on what parsed
    return records


def _field_counts(sample: str, delimiter: str) -> list[int]:
    return [r.width for r in _records(sample, delimiter) if r.width]


def _preamble_records(records: list[_Record], sample: str) -> int:
    """How many leading records are a preamble, by the module's rule; 0 when none."""
    widths = [r.width for r in records if r.width]
    if not widths:
        return 0
    mode = max(set(widths), key=lambda n: (widths.count(n), n))
    header = next(i for i, r in enumerate(records) if r.width == mode)
    if not 0 < header <= _MAX_PREAMBLE or any(r.width > mode // 2 for r in records[:header]):
        return 0
    if mode < 3 and not all(
        line.startswith("#") or not line.strip() for line in _lines(sample, records[header - 1])
    ):
        return 0  # two columns: only `#` comments, a title may be a narrow header
    table = [r.width for r in records[header:] if r.width]
    return header if table.count(mode) >= 0.9 * len(table) else 0


def _lines(sample: str, last: _Record | None) -> list[str]:
    """The sample's physical lines up to the end of record `last` (none for None)."""
    read = 0 if last is None else last.lines
    return [line.rstrip("\r\n") for line in islice(io.StringIO(sample, newline=""), read)]


def _sniff_delimiter(sample: str) -> str:
    best, best_score = ",", (0.0, 0)
    for candidate in _DELIMITERS:
        counts = _field_counts(sample, candidate)
        if not counts:
            continue
        mode = max(set(counts), key=lambda n: (counts.count(n), n))
        if mode < 2:
            continue
        score = (counts.count(mode) / len(counts), mode)
        if score > best_score:  # ties keep the earlier candidate: deterministic
            best, best_score = candidate, score
    return best


def _writer_quoted(sample: str, delimiter: str, *, complete: bool) -> bool:
    """Whether the head of the file reads as RFC 4180 quoting rather than literal quotes
    (the module's rule). Only the quotes are visited, at most `_QUOTE_EVENTS` of them."""
    ends = (delimiter, "\r", "\n")
    quoting = literal = 0
    opened = -1  # where the open quoted field began, or -1 outside quotes
    escaped = False  # the open field holds a doubled quote
    skip = -1  # the second quote of a doubled pair
    for events, match in enumerate(_QUOTE.finditer(sample)):
        if events >= _QUOTE_EVENTS:
            break
        at = match.start()
        if at == skip:
            continue
        if opened < 0:
            if at == 0 or sample[at - 1] in ends:
                opened, escaped = at, False
            else:
                literal += 1  # `5" pipe`: a quote inside an unquoted field
            continue
        after = sample[at + 1 : at + 2]
        if after == '"':
            escaped, skip = True, at + 1
        elif after == "" or after in ends:
            inside = sample[opened + 1 : at]
            if escaped or delimiter in inside or "\n" in inside:
                quoting += 1
            opened = -1
        else:
            literal += 1  # `"AGENT" K is`: closed by neither a delimiter nor a line end
            opened = -1
    if opened >= 0 and complete:
        literal += 1  # a quote never closed
    return quoting >= literal


_QUOTE = re.compile('"')
_SEP_LINE = re.compile(r"sep=([^\r\n\"])\r?\n")
"""Excel's delimiter directive, the file's whole first line."""
_MAX_PREAMBLE = 20
_PREAMBLE_CHARS = 1000
_QUOTE_EVENTS = 20_000
