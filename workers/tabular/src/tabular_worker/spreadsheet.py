"""Workbooks (xlsx, xlsb, xls, ods) to tables, through fastexcel (calamine), one table per
sheet in workbook order, with the cells' text exact.

Each sheet is read as text, the way calamine renders every cell (dates as ISO date-times,
formulas as their cached values): that gives the header row and most cells. calamine's
text of a number is rounded to 9 decimals, though (0.3010299956639812 -> 0.301029996,
1e-20 -> 0), and durations come out as date-times in 1899/1900. So the data rows are
also read typed, and where the types say more than the text the text is rewritten:

- a number column: each number as the shortest text that reads back as the same double
  (`0.3010299956639812`; an integral value below 2^53 as an integer, `5`);
- a text column holding some numbers (mixed cells): those columns are read once more as
  numbers, and a cell whose rendering reads back as another double than the one stored is
  rewritten the same way (a text cell `0.3` reads as 0.3 and keeps its text);
- a duration column (`[h]:mm:ss`): ISO 8601 (`P10DT15H10M10S`, durations.py);
- a date-time in the first days of the workbook's epoch (a time of day or a day count
  shown through a date format): the duration it stands for. calamine applies the 1904
  date system itself, so real dates are the ones the file means either way.

When the typed read fails (a column mixing kinds calamine cannot coerce is read as text
and the read retried; any other failure) the text is used as it stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import fastexcel
import polars as pl

from workers_common import InvalidInput, Unsupported

from .durations import iso_duration, since_epoch
from .tables import TableSource, positional

__all__ = ["exact_number_text", "sheet_tables"]

_MAX_EXACT_INT = float(2**53)
_UNNAMED = re.compile(r"__UNNAMED__(\d+)")
_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


def exact_number_text(value: pl.Expr) -> pl.Expr:
    """A Float64 as the shortest text that reads back as the same double; an integral
    value up to 2^53 without a fraction, as spreadsheets show it."""
    integral = (value == value.round(0)) & (value.abs() <= _MAX_EXACT_INT)
    return (
        pl.when(value.is_null() | ~value.is_finite())
        .then(None)
        .when(integral)
        .then(value.cast(pl.Int64).cast(pl.String))
        .otherwise(value.cast(pl.String))
    )


def sheet_tables(fmt: str, path: Path, *, date1904: bool) -> Iterator[TableSource]:
    """The workbook's sheets as TableSources (typed failures for what cannot be read)."""
    try:
        reader = fastexcel.read_excel(path)
        names = reader.sheet_names
    except Exception as err:  # fastexcel raises its own hierarchy, and CalamineError
        raise _open_failure(fmt, err) from err
    for index, name in enumerate(names):
        yield _sheet(fmt, reader, index, name, date1904)


def _open_failure(fmt: str, err: Exception) -> Exception:
    if "password" in str(err).lower() or "encrypt" in str(err).lower():
        return Unsupported(f"password-protected: {fmt} workbook is encrypted ({err})")
    return InvalidInput(f"{fmt}: cannot open the workbook: {err}")


def _sheet(
    fmt: str, reader: fastexcel.ExcelReader, index: int, name: str, date1904: bool
) -> TableSource:
    try:
        # All cells as text: calamine renders dates as ISO and formulas as their cached
        # values; typing happens afterwards, the same way as for csv.
        text = reader.load_sheet(index, header_row=None, dtypes="string").to_polars()
    except Exception as err:
        raise InvalidInput(f"{fmt}: sheet {name!r} cannot be read: {err}") from err
    text = text.rename({old: positional(i) for i, old in enumerate(text.columns)})
    if text.height == 0:
        return TableSource(name, [], pl.LazyFrame())
    header = [value or "" for value in text.row(0)]
    data = text.slice(1)
    if data.height:
        data = _exact(reader, index, data, date1904)
    return TableSource(name, header, data.with_columns(pl.all().fill_null("")).lazy())


def _typed(reader: fastexcel.ExcelReader, index: int, width: int) -> pl.DataFrame | None:
    """The data rows read with calamine's own types (None when that read fails)."""
    as_text: dict[int, str] = {}
    for _ in range(width + 1):
        try:
            sheet = reader.load_sheet(
                index,
                header_row=None,
                skip_rows=1,
                dtypes=dict(as_text) or None,  # type: ignore[arg-type]
            )
            return sheet.to_polars()
        except fastexcel.UnsupportedColumnTypeCombinationError as err:
            found = _UNNAMED.search(str(err))
            column = int(found.group(1)) if found else -1
            if not 0 <= column < width or column in as_text:
                return None
            as_text[column] = "string"  # kinds calamine cannot coerce: read as text
        except Exception:
            return None
    return None


def _exact(
    reader: fastexcel.ExcelReader, index: int, data: pl.DataFrame, date1904: bool
) -> pl.DataFrame:
    typed = _typed(reader, index, data.width)
    if typed is None or typed.shape != data.shape:
        return data
    typed = typed.rename({old: positional(i) for i, old in enumerate(typed.columns)})
    rewritten: list[pl.Expr] = []
    mixed: list[int] = []
    for i, dtype in enumerate(typed.schema.values()):
        value = pl.col(f"t{i}")
        if dtype == pl.Float64:
            rewritten.append(exact_number_text(value))
        elif dtype.is_integer():
            rewritten.append(value.cast(pl.String))
        elif isinstance(dtype, pl.Duration):
            rewritten.append(iso_duration(value))
        elif isinstance(dtype, pl.Datetime):
            rewritten.append(iso_duration(since_epoch(value, date1904)))
        else:
            if dtype == pl.String:
                mixed.append(i)
            rewritten.append(pl.lit(None, pl.String))
    both = pl.concat(
        [data, typed.rename({positional(i): f"t{i}" for i in range(typed.width)})],
        how="horizontal",
    )
    out = both.select(
        pl.coalesce(expr, pl.col(positional(i))).alias(positional(i))
        for i, expr in enumerate(rewritten)
    )
    return _exact_mixed(reader, index, out, mixed)


def _exact_mixed(
    reader: fastexcel.ExcelReader, index: int, data: pl.DataFrame, columns: list[int]
) -> pl.DataFrame:
    """Text columns' numeric cells whose rendering lost precision, rewritten exactly."""
    suspects = [
        i for i in columns if data[positional(i)].str.contains(_NUMBER).fill_null(False).any()
    ]
    if not suspects:
        return data
    try:
        numbers = reader.load_sheet(
            index, header_row=None, skip_rows=1, use_columns=suspects, dtypes="float"
        ).to_polars()
    except Exception:
        return data
    if numbers.shape != (data.height, len(suspects)):
        return data
    fixes = []
    for at, i in enumerate(suspects):
        stored = numbers.to_series(at)
        text = data[positional(i)]
        shown = text.cast(pl.Float64, strict=False)
        lost = stored.is_not_null() & shown.is_not_null() & (stored != shown)
        exact = pl.select(exact_number_text(pl.lit(stored))).to_series()
        fixes.append(pl.Series(positional(i), exact).zip_with(lost.fill_null(False), text))
    return data.with_columns(fixes)
