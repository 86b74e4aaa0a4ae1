"""Formats to tables: each job's content becomes one or more TableSources (a csv/tsv/parquet
file is one table, a workbook (xlsx, xlsb, xls, ods) one per sheet, in workbook order).

A TableSource gives the header and a LazyFrame of the data rows with positional column
names `c0, c1, …`: Strings for csv, tsv and xlsx (typed by profile.py), native dtypes for
parquet. csv/tsv frames carry spare columns past the header, so a ragged row's extra
fields are kept instead of failing the read or being dropped. Nothing is loaded whole:
csv/tsv are read in blocks of whole records (blocks.py), each parsed on its own, every
time the rows are wanted; parquet is scanned in batches; a workbook's sheet is loaded one
at a time (calamine has no streaming reader) after the bomb guard has bounded its size.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from workers_common import InvalidInput
from workers_common.wire import JsonValue

from .blocks import record_runs
from .compressed import compression_of, inflated
from .options import TabularOptions
from .sniff import TextFile, prepare_text
from .spreadsheet import sheet_tables
from .tables import TableSource, positional
from .xlsx_guard import prepare_workbook

__all__ = [
    "FORMATS",
    "WORKBOOK_FORMATS",
    "TableSource",
    "open_tables",
    "polars_reason",
    "positional",
]

WORKBOOK_FORMATS = ("xlsx", "xlsb", "xls", "ods")
"""Read by calamine (spreadsheet.py); the bytes decide which reader (xlsx_guard.py)."""
FORMATS = ("csv", "tsv", *WORKBOOK_FORMATS, "parquet")

# Spare columns past the widest record seen at the head of a csv: rows with more fields
# than the header keep them (up to this) instead of failing the read.
_MIN_SPARE = 16


def open_tables(
    fmt: str, path: Path, options: TabularOptions, workdir: Path
) -> Iterator[TableSource]:
    """The tables of a file of format `fmt`; malformed content raises invalid_input."""
    if fmt in ("csv", "tsv"):
        yield _text_table(fmt, path, options, workdir)
    elif fmt in WORKBOOK_FORMATS:
        yield from _workbook_tables(fmt, path, options, workdir)
    elif fmt == "parquet":
        yield _parquet_table(path)
    else:
        raise InvalidInput(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


def _text_table(fmt: str, path: Path, options: TabularOptions, workdir: Path) -> TableSource:
    compression = compression_of(path)
    if compression is not None:
        path = inflated(
            path,
            compression,
            workdir / f"source.{fmt}",
            max_ratio=options.max_compression_ratio,
            max_bytes=options.max_decompressed_bytes,
        )
    text = prepare_text(
        path,
        fmt,
        workdir,
        max_line_bytes=options.max_line_bytes,
        delimiter=options.delimiter,
        quoting=options.quoting,
        skip_rows=options.skip_rows,
    )
    facts: dict[str, JsonValue] = {
        **({"compression": compression} if compression else {}),
        "encoding": text.encoding,
        "delimiter": text.delimiter,
        **({} if text.quoted else {"quoting": "none"}),
        **({"preamble": list(text.preamble)} if text.preamble else {}),
        "replaced_sequences": text.replaced,
    }
    if text.header_width == 0:
        return TableSource(None, [], pl.LazyFrame(), facts)
    width = max(text.width, text.header_width) + max(_MIN_SPARE, text.header_width)
    schema = pl.Schema({positional(i): pl.String for i in range(width)})

    def frames() -> Iterator[pl.DataFrame]:
        """Every record of the file from the header on, block by block."""
        skip = text.skip
        for run in record_runs(
            text.path,
            block_bytes=options.block_bytes,
            max_record_bytes=options.max_line_bytes,
            quoted=text.quoted,
        ):
            frame = _parse(fmt, run, text, schema)
            if skip:
                dropped = min(skip, frame.height)
                frame, skip = frame.slice(dropped), skip - dropped
            if frame.height:
                yield frame

    first = next(frames(), None)
    if first is None:
        return TableSource(None, [], pl.LazyFrame(), facts)
    header = [value or "" for value in first.row(0)[: text.header_width]]
    del first

    def data() -> Iterator[pl.DataFrame]:
        records = frames()
        head = next(records, None)
        if head is not None and head.height > 1:
            yield head.slice(1)
        del head
        yield from records

    return TableSource(None, header, pl.LazyFrame(schema=schema), facts, blocks=data)


def _parse(fmt: str, run: bytes, text: TextFile, schema: pl.Schema) -> pl.DataFrame:
    try:
        return pl.read_csv(
            run,
            has_header=False,
            separator=text.delimiter,
            quote_char='"' if text.quoted else None,
            schema=schema,
            missing_columns="insert",
            empty_string_is_null=False,
            raise_if_empty=False,
        )
    except pl.exceptions.PolarsError as err:
        reason = polars_reason(fmt, err)
        if text.quoted and b'"' in run:
            reason += (
                ' (read with RFC 4180 quoting; if `"` is a plain character in this file, '
                "set option quoting=none)"
            )
        raise InvalidInput(reason) from err


def polars_reason(fmt: str, err: Exception) -> str:
    """A polars error as an invalid_input reason."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    if "more fields than defined" in text:
        return (
            f"{fmt}: inconsistent columns: a record has far more fields than the header "
            "(more than the spare columns the worker keeps for ragged rows)"
        )
    return f"{fmt}: {text}"


def _workbook_tables(
    fmt: str, path: Path, options: TabularOptions, workdir: Path
) -> Iterator[TableSource]:
    workbook = prepare_workbook(
        fmt,
        path,
        workdir,
        max_bytes=options.max_xlsx_bytes,
        max_ratio=options.max_xlsx_ratio,
        overlap=True,
    )
    yield from sheet_tables(
        workbook.kind,
        workbook.path,
        date1904=workbook.date1904,
        checked=workbook.wait,
        limits=(options.max_xlsx_bytes, options.max_xlsx_ratio),
    )


def _parquet_table(path: Path) -> TableSource:
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"PAR1":
        raise InvalidInput("content is not a parquet file (no PAR1 magic number)")
    try:
        schema = pl.read_parquet_schema(path)
    except Exception as err:
        raise InvalidInput(f"parquet: cannot read the schema: {err}") from err
    header = list(schema)
    renames = {name: positional(i) for i, name in enumerate(header)}
    return TableSource(None, header, pl.scan_parquet(path).rename(renames))
