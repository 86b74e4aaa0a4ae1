"""Formats to tables: each job's content becomes one or more TableSources (a csv/tsv/parquet
file is one table, an xlsx workbook one per sheet, in workbook order).

A TableSource gives the header and a LazyFrame of the data rows with positional column
names `c0, c1, …`: Strings for csv, tsv and xlsx (typed by profile.py), native dtypes for
parquet. csv/tsv frames carry spare columns past the header, so a ragged row's extra
fields are kept instead of failing the read or being dropped. Reading is lazy: csv and
parquet are scanned in batches, never loaded whole; an xlsx sheet is loaded one at a time
(calamine has no streaming reader) after the bomb guard has bounded its size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fastexcel
import polars as pl

from workers_common import InvalidInput
from workers_common.wire import JsonValue

from .options import TabularOptions
from .sniff import prepare_text
from .xlsx_guard import check_xlsx

__all__ = ["FORMATS", "TableSource", "open_tables", "positional"]

FORMATS = ("csv", "tsv", "xlsx", "parquet")

# Spare columns past the widest record seen at the head of a csv: rows with more fields
# than the header keep them (up to this) instead of failing the read.
_MIN_SPARE = 16


def positional(index: int) -> str:
    """The frame column name of the `index`-th field."""
    return f"c{index}"


@dataclass(frozen=True, slots=True)
class TableSource:
    """One table of a job's content."""

    sheet: str | None
    """The xlsx sheet's name; None for single-table formats."""
    header: list[str]
    """The header fields as the source spells them ([] for a table with nothing in it)."""
    frame: pl.LazyFrame
    """Data rows (header excluded), columns c0.. (header width + spare for csv)."""
    facts: dict[str, JsonValue] = field(default_factory=dict)
    """What reading found out (encoding, delimiter, replacements) for the TABLE node."""


def open_tables(
    fmt: str, path: Path, options: TabularOptions, workdir: Path
) -> Iterator[TableSource]:
    """The tables of a file of format `fmt`; malformed content raises invalid_input."""
    if fmt in ("csv", "tsv"):
        yield _text_table(fmt, path, options, workdir)
    elif fmt == "xlsx":
        yield from _xlsx_tables(path, options)
    elif fmt == "parquet":
        yield _parquet_table(path)
    else:
        raise InvalidInput(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


def _text_table(fmt: str, path: Path, options: TabularOptions, workdir: Path) -> TableSource:
    text = prepare_text(
        path, fmt, workdir, max_line_bytes=options.max_line_bytes, delimiter=options.delimiter
    )
    facts: dict[str, JsonValue] = {
        "encoding": text.encoding,
        "delimiter": text.delimiter,
        "replaced_sequences": text.replaced,
    }
    if text.header_width == 0:
        return TableSource(None, [], pl.LazyFrame(), facts)
    width = max(text.width, text.header_width) + max(_MIN_SPARE, text.header_width)
    schema = {positional(i): pl.String for i in range(width)}
    scan = pl.scan_csv(
        text.path,
        has_header=False,
        separator=text.delimiter,
        quote_char='"',
        schema=schema,
        missing_columns="insert",
        empty_string_is_null=False,
        raise_if_empty=False,
    )
    try:
        first = scan.head(1).collect()
    except pl.exceptions.PolarsError as err:
        raise InvalidInput(f"{fmt}: {err}") from err
    if first.height == 0:
        return TableSource(None, [], pl.LazyFrame(), facts)
    header = [value or "" for value in first.row(0)[: text.header_width]]
    return TableSource(None, header, scan.slice(1), facts)


def _xlsx_tables(path: Path, options: TabularOptions) -> Iterator[TableSource]:
    check_xlsx(path, max_bytes=options.max_xlsx_bytes, max_ratio=options.max_xlsx_ratio)
    try:
        reader = fastexcel.read_excel(path)
        names = reader.sheet_names
    except Exception as err:  # fastexcel raises its own hierarchy, and CalamineError
        raise InvalidInput(f"xlsx: cannot open the workbook: {err}") from err
    for index, name in enumerate(names):
        try:
            # All cells as text: calamine renders dates as ISO and formulas as their cached
            # values; typing happens afterwards, the same way as for csv.
            sheet = reader.load_sheet(index, header_row=None, dtypes="string").to_polars()
        except Exception as err:
            raise InvalidInput(f"xlsx: sheet {name!r} cannot be read: {err}") from err
        sheet = sheet.rename({old: positional(i) for i, old in enumerate(sheet.columns)})
        if sheet.height == 0:
            yield TableSource(name, [], pl.LazyFrame())
            continue
        header = [value or "" for value in sheet.row(0)]
        data = sheet.slice(1).with_columns(pl.all().fill_null(""))
        yield TableSource(name, header, data.lazy())


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
