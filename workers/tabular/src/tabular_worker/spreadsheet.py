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
and the read retried; any other failure) the text is used as it stands. The typed read
alone would not do: it turns a text cell in a number column (`n/a`) into a null, so the
text read stays the truth and the typed one only refines the cells it has a value for.
Each read parses the whole sheet (calamine has no partial one): two reads per sheet, a
third for the few sheets with numbers inside text columns. The sheet's rows are then
handed out in slices of 100,000, as a csv's blocks are.

An xlsx sheet is first offered to the native scanner (native_xlsx.py): it gives the typed
read of a sheet whose every column holds one kind of cell, or numbers and text (~3x faster
than calamine), with the numbers whose text rendering lost precision, and declines the rest,
which then take the reads above.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import fastexcel
import polars as pl

from workers_common import InvalidInput, Unsupported

from .durations import iso_duration, since_epoch
from .native_xlsx import native_sheets
from .opc import xlsb_chart_sheets
from .tables import TableSource, positional

__all__ = ["exact_number_text", "sheet_tables"]

_MAX_EXACT_INT = float(2**53)
_UNNAMED = re.compile(r"__UNNAMED__(\d+)")
_DEDUPED = re.compile(r"_\d+$")
_EARLY = r"^(1899-12-3[01]|190[04]-0[12]-\d\d) \d\d:\d\d:\d\d"
"""calamine's text of a date-time on the first days of either epoch."""
_MAX_RETRIES = 256
"""Typed reads retried with one more column read as text (bounds a pathological sheet)."""
_BLOCK_ROWS = 100_000
"""Rows per slice handed to the profile and row passes (as a csv block would hold)."""
_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


def exact_number_text(value: pl.Expr) -> pl.Expr:
    """A Float64 as the shortest text that reads back as the same double; an integral
    value up to 2^53 without a fraction, as spreadsheets show it."""
    integral = (value == value.round(0)) & (value.abs() <= _MAX_EXACT_INT)
    return (
        pl.when(value.is_null() | ~value.is_finite())
        .then(None)
        .when(integral)
        # Not strict: polars casts every row, not only the integral ones, and a value past
        # i64 (1e20) would fail the whole column (a text column's numbers did).
        .then(value.cast(pl.Int64, strict=False).cast(pl.String))
        .otherwise(value.cast(pl.String))
    )


def sheet_tables(
    fmt: str,
    path: Path,
    *,
    date1904: bool,
    checked: Callable[[], None] = lambda: None,
    limits: tuple[int, int] = (256 << 20, 200),
) -> Iterator[TableSource]:
    """The workbook's sheets as TableSources (typed failures for what cannot be read).

    `checked` returns once the bomb guard passed the package (raising what it found): the
    native scanner reads the first sheet meanwhile, within `limits` (max bytes, max
    ratio), and nothing else reads the package before it."""
    native = native_sheets(path, date1904=date1904, limits=limits) if fmt == "xlsx" else None
    first = native.typed(native.names[0]) if native is not None and native.names else None
    checked()
    try:
        reader = fastexcel.read_excel(path)
        names = reader.sheet_names
    except Exception as err:  # fastexcel raises its own hierarchy, and CalamineError
        raise _open_failure(fmt, err) from err
    if native is not None and native.names != names:
        native, first = None, None  # the two see other sheets: fastexcel's are the truth
    # An xlsb chart sheet is an empty table, as calamine reads an xlsx one (it fails on
    # the xlsb one's part, and took the whole workbook down with it).
    charts = xlsb_chart_sheets(path) if fmt == "xlsb" else frozenset()
    for index, name in enumerate(names):
        if name in charts:
            yield TableSource(name, [], pl.LazyFrame())
            continue
        scanned = first if index == 0 else None
        if index and native is not None:
            scanned = native.typed(name)
        if scanned is not None:
            yield _typed_table(
                name,
                scanned.header,
                scanned.typed,
                date1904,
                exact_mixed=_lost_rewritten(scanned.lost) if scanned.lost else None,
            )
            continue
        table = _one_read(reader, index, name, date1904)
        yield table if table is not None else _two_reads(fmt, path, reader, index, name, date1904)


def _one_read(
    reader: fastexcel.ExcelReader, index: int, name: str, date1904: bool
) -> TableSource | None:
    """The sheet from its typed read alone, the header row as column names, when that
    says everything the text read would (None otherwise: then `_two_reads`).

    A typed column without nulls hides no text cell (calamine nulls a text cell in a
    number column): its text is written from the values. The columns with nulls are read
    once more as text, only they, and keep the text where the value is null. The header
    is taken from fastexcel's column names unless one was made up (a blank, boolean or
    date header cell) or may be a renamed duplicate (`a_1`)."""
    try:
        sheet = reader.load_sheet(index, schema_sample_rows=None)
        typed = sheet.to_polars()
        columns = sheet.available_columns()
    except Exception:  # kinds calamine cannot coerce, or any other trouble
        return None
    if not columns:
        return TableSource(name, [], pl.LazyFrame())
    header = [column.name for column in columns]
    if _names_unreliable(header, [str(column.column_name_from) for column in columns]):
        return None
    typed = typed.rename({old: f"t{i}" for i, old in enumerate(typed.columns)})
    hidden = [
        i
        for i, dtype in enumerate(typed.schema.values())
        if dtype not in (pl.String, pl.Null) and typed[f"t{i}"].null_count()
    ]
    shown = None
    if hidden:
        try:
            shown = reader.load_sheet(
                index,
                use_columns=[columns[i].absolute_index for i in hidden],
                dtypes="string",
                schema_sample_rows=None,
            ).to_polars()
        except Exception:
            return None
        if shown.shape != (typed.height, len(hidden)):
            return None
    return _typed_table(
        name,
        header,
        typed,
        date1904,
        hidden=(hidden, shown) if shown is not None else None,
        exact_mixed=lambda data, mixed: _exact_mixed(
            reader, index, data, mixed, [column.absolute_index for column in columns]
        ),
    )


def _typed_table(
    name: str,
    header: list[str],
    typed: pl.DataFrame,
    date1904: bool,
    *,
    hidden: tuple[list[int], pl.DataFrame] | None = None,
    exact_mixed: Callable[[pl.DataFrame, list[int]], pl.DataFrame] | None = None,
) -> TableSource:
    """A sheet's table from its typed columns (t0, t1, ...): `hidden` is the text read of
    the typed columns with nulls (a null may hide a text cell), `exact_mixed` rewrites the
    numbers a text column's rendering rounded. The native scanner needs no `hidden`: it
    types a column only when every cell of it is of that kind or empty (numbers and text
    together as text), and its `exact_mixed` is `_lost_rewritten`."""
    if not header:
        return TableSource(name, [], pl.LazyFrame())
    dtypes = list(typed.schema.values())
    plain = _plain_datetimes(typed, dtypes, date1904)
    data = typed.select(
        _as_text(f"t{i}", dtype, date1904, plain=i in plain).alias(positional(i))
        for i, dtype in enumerate(dtypes)
    )
    texts: list[int] = []
    if hidden is not None:
        columns, shown = hidden
        # Columns where a text cell fills a cell the values left empty (a text cell in a
        # number column, an infinity): their text is not the values' alone.
        filled = shown.select(
            (data[positional(i)].is_null() & (pl.col(c).fill_null("") != "")).any()
            for i, c in zip(columns, shown.columns, strict=True)
        ).row(0)
        texts = [i for i, text in zip(columns, filled, strict=True) if text]
        data = data.with_columns(
            pl.coalesce(pl.col(positional(i)), shown.to_series(at)).alias(positional(i))
            for at, i in enumerate(columns)
        )
    mixed = [i for i, dtype in enumerate(dtypes) if dtype == pl.String]
    if exact_mixed is not None:
        data = exact_mixed(data, mixed)
    data = _early_dates(data, mixed, date1904)
    known = _known_counts(typed, dtypes, texts, date1904)
    return _table(name, header, data.with_columns(pl.all().fill_null("")), known)


def _lost_rewritten(
    lost: dict[int, pl.Series],
) -> Callable[[pl.DataFrame, list[int]], pl.DataFrame]:
    """`_exact_mixed` for the scanner's text columns: it already knows which numbers'
    renderings read back as another double (`lost`, null elsewhere)."""

    def rewrite(data: pl.DataFrame, mixed: list[int]) -> pl.DataFrame:
        del mixed  # the columns are lost's keys
        return data.with_columns(
            pl.coalesce(exact_number_text(pl.lit(numbers)), pl.col(positional(i))).alias(
                positional(i)
            )
            for i, numbers in lost.items()
        )

    return rewrite


def _count_exprs(value: pl.Expr, dtype: pl.DataType, date1904: bool) -> dict[str, pl.Expr]:
    """Per count of `_known_counts`, the cells it counts ({} for a dtype it cannot)."""
    present = value.is_not_null()
    if dtype == pl.Float64:
        finite = value.is_finite().fill_null(False)
        integral = finite & (value == value.round(0)) & (value.abs() <= _MAX_EXACT_INT)
        return {"present": finite, "integer": integral, "float": finite}
    if dtype == pl.Boolean:
        return {"present": present, "boolean": present}
    if isinstance(dtype, pl.Datetime):
        early = since_epoch(value, date1904).is_not_null()
        year = value.dt.year()
        return {
            "present": present,
            "datetime": present & ~early,
            "duration": early,
            "odd_year": present & ((year < 1000) | (year > 9999)),
        }
    if isinstance(dtype, pl.Duration):
        return {"present": present, "duration": present}
    return {}


_KINDS = ("boolean", "integer", "float", "date", "datetime", "duration")
"""The inferred types' names (celltypes.INFERRED_ORDER), each a count the profile needs."""


def _known_counts(
    typed: pl.DataFrame, dtypes: list[pl.DataType], texts: list[int], date1904: bool
) -> dict[int, dict[str, int]]:
    """The profile's counts of the typed columns whose text `_as_text` writes from the
    values alone (every cell a value or empty), computed from the values: what the
    pattern and parse passes would count over that text, without the regexes.

    - a number: present when finite; `integer` (and integer-valid) when integral up to
      2^53 (written without a fraction), every one `float` and float-valid (the shortest
      round-trip text always reads back); never a leading zero (`0.5`, `0`);
    - a boolean (`true`/`false`): `boolean`;
    - a date-time: `datetime` (`yyyy-mm-dd hh:mm:ss[.mmm]`, parseable), or `duration` for
      one in the epoch's first days (written as ISO 8601); only when every year has four
      digits, as the datetime pattern wants (else the passes count the text);
    - a duration: `duration`.
    """
    exprs = {
        i: counts
        for i, dtype in enumerate(dtypes)
        if i not in texts and (counts := _count_exprs(pl.col(f"t{i}"), dtype, date1904))
    }
    if not exprs:
        return {}
    sums = typed.select(
        expr.sum().alias(f"{i}:{key}")
        for i, counts in exprs.items()
        for key, expr in counts.items()
    ).row(0, named=True)
    known: dict[int, dict[str, int]] = {}
    for i, counts in exprs.items():
        found = {key: int(sums[f"{i}:{key}"] or 0) for key in counts}
        if found.pop("odd_year", 0):
            continue
        column = {"zeros": 0, **{kind: found.get(kind, 0) for kind in _KINDS}}
        column["present"] = found["present"]
        column.update({f"valid:{kind}": found.get(kind, 0) for kind in _KINDS if kind != "date"})
        known[i] = column
    return known


def _names_unreliable(names: list[str], origins: list[str]) -> bool:
    if any("generated" in origin.lower() for origin in origins):
        return True
    taken = set(names)
    return any(_DEDUPED.sub("", name) in taken - {name} for name in names)


def _plain_datetimes(typed: pl.DataFrame, dtypes: list[pl.DataType], date1904: bool) -> set[int]:
    """The date-time columns with no millisecond and no cell in the epoch's first days:
    their text is the date-time alone, without the fraction and duration expressions."""
    moments = [i for i, dtype in enumerate(dtypes) if isinstance(dtype, pl.Datetime)]
    if not moments:
        return set()
    found = typed.select(
        (
            (pl.col(f"t{i}").dt.millisecond() > 0)
            | since_epoch(pl.col(f"t{i}"), date1904).is_not_null()
        )
        .any()
        .alias(str(i))
        for i in moments
    ).row(0)
    return {i for i, fancy in zip(moments, found, strict=True) if not fancy}


def _as_text(column: str, dtype: pl.DataType, date1904: bool, *, plain: bool = False) -> pl.Expr:
    """A typed column as its cells' text: calamine's rendering (dates as
    `yyyy-mm-dd hh:mm:ss[.mmm]`, booleans `true`/`false`), numbers and durations exact.
    `plain`: a date-time column known to hold neither milliseconds nor early days."""
    value = pl.col(column)
    if dtype == pl.Float64:
        return exact_number_text(value)
    if isinstance(dtype, pl.Duration):
        return iso_duration(value)
    if isinstance(dtype, pl.Datetime) and plain:
        return value.dt.to_string("%Y-%m-%d %H:%M:%S")
    if isinstance(dtype, pl.Datetime):
        millis = value.dt.millisecond()
        fraction = pl.when(millis > 0).then(
            pl.concat_str(pl.lit("."), millis.cast(pl.String).str.zfill(3))
        )
        shown = pl.concat_str(value.dt.to_string("%Y-%m-%d %H:%M:%S"), fraction.fill_null(""))
        return pl.coalesce(iso_duration(since_epoch(value, date1904)), shown)
    if dtype == pl.Date:
        return value.dt.to_string("%Y-%m-%d")
    if dtype == pl.Boolean:
        return pl.when(value).then(pl.lit("true")).when(~value).then(pl.lit("false"))
    return value.cast(pl.String)


def _two_reads(
    fmt: str, path: Path, reader: fastexcel.ExcelReader, index: int, name: str, date1904: bool
) -> TableSource:
    """The sheet from its text read, refined by a typed read run beside it (a second
    reader: one cannot serve two reads at once, and calamine parses without the GIL)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="typed-read") as pool:
        typed = pool.submit(_typed, fastexcel.read_excel(path), index)
        return _sheet(fmt, reader, index, name, typed, date1904)


def _open_failure(fmt: str, err: Exception) -> Exception:
    if "password" in str(err).lower() or "encrypt" in str(err).lower():
        return Unsupported(f"password-protected: {fmt} workbook is encrypted ({err})")
    return InvalidInput(f"{fmt}: cannot open the workbook: {err}")


def _table(
    name: str,
    header: list[str],
    data: pl.DataFrame,
    known: dict[int, dict[str, int]] | None = None,
) -> TableSource:
    """A sheet's table: its rows held once, handed out in slices like a csv's blocks."""

    def blocks() -> Iterator[pl.DataFrame]:
        yield from data.iter_slices(_BLOCK_ROWS)

    return TableSource(
        name, header, pl.LazyFrame(schema=data.schema), blocks=blocks, known=known or {}
    )


def _sheet(
    fmt: str,
    reader: fastexcel.ExcelReader,
    index: int,
    name: str,
    typed: Future[pl.DataFrame | None],
    date1904: bool,
) -> TableSource:
    try:
        # All cells as text: calamine renders dates as ISO and formulas as their cached
        # values; typing happens afterwards, the same way as for csv.
        sheet = reader.load_sheet(index, header_row=None, dtypes="string")
        text = sheet.to_polars()
        absolute = [column.absolute_index for column in sheet.available_columns()]
    except Exception as err:
        raise InvalidInput(f"{fmt}: sheet {name!r} cannot be read: {err}") from err
    text = text.rename({old: positional(i) for i, old in enumerate(text.columns)})
    if text.height == 0:
        return TableSource(name, [], pl.LazyFrame())
    header = [value or "" for value in text.row(0)]
    data = text.slice(1)
    if data.height:
        data = _exact(reader, index, data, typed.result(), date1904, absolute)
    return _table(name, header, data.with_columns(pl.all().fill_null("")))


def _typed(reader: fastexcel.ExcelReader, index: int) -> pl.DataFrame | None:
    """The data rows read with calamine's own types (None when that read fails)."""
    as_text: dict[int, str] = {}
    for _ in range(_MAX_RETRIES):
        try:
            sheet = reader.load_sheet(
                index,
                header_row=None,
                skip_rows=1,
                schema_sample_rows=None,
                dtypes=dict(as_text) or None,  # type: ignore[arg-type]
            )
            return sheet.to_polars()
        except fastexcel.UnsupportedColumnTypeCombinationError as err:
            found = _UNNAMED.search(str(err))
            column = int(found.group(1)) if found else -1
            if column < 0 or column in as_text:
                return None
            as_text[column] = "string"  # kinds calamine cannot coerce: read as text
        except Exception:
            return None
    return None


def _exact(
    reader: fastexcel.ExcelReader,
    index: int,
    data: pl.DataFrame,
    typed: pl.DataFrame | None,
    date1904: bool,
    absolute: list[int],
) -> pl.DataFrame:
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
    return _early_dates(_exact_mixed(reader, index, out, mixed, absolute), mixed, date1904)


def _early_dates(data: pl.DataFrame, columns: list[int], date1904: bool) -> pl.DataFrame:
    """Text columns' cells that calamine rendered as a date-time in the first days of the
    epoch (a duration in a column that also holds text), as the durations they are."""
    fixes = []
    for i in columns:
        text = pl.col(positional(i))
        if not data.select(text.str.contains(_EARLY).any()).item():
            continue
        moment = text.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False)
        fixes.append(
            pl.coalesce(iso_duration(since_epoch(moment, date1904)), text).alias(positional(i))
        )
    return data.with_columns(fixes) if fixes else data


def _exact_mixed(
    reader: fastexcel.ExcelReader,
    index: int,
    data: pl.DataFrame,
    columns: list[int],
    absolute: list[int],
) -> pl.DataFrame:
    """Text columns' numeric cells whose rendering lost precision, rewritten exactly.
    `absolute`: each column's index in the sheet (fastexcel's `use_columns` counts from
    column A, not from the first used column)."""
    suspects = [
        i for i in columns if data[positional(i)].str.contains(_NUMBER).fill_null(False).any()
    ]
    if not suspects:
        return data
    try:
        numbers = reader.load_sheet(
            index,
            header_row=None,
            skip_rows=1,
            use_columns=[absolute[i] for i in suspects],
            dtypes="float",
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
