"""The profile passes: streaming aggregations over a whole table before any row is sent.

They fix what partial 0 must already say about the table — the row count, each column's
type (inferred from every cell, not a head sample), null and dirty counts, date vote
totals. Pass 1 counts cheap pattern matches per type for every column and picks the
types; pass 2 (only when some column got a type other than string) parses the typed
columns once each, to count the cells that fit the pattern but not the type, and the
date votes. Both are polars queries of sums only, run by the streaming engine over a
scanned frame, or block by block over a block-read csv (blocks.py) and added up: memory
stays at a batch or a block whatever the table's size. Rows whose every field is empty
(blank lines, `,,,`) are not rows: `kept_rows` drops them when the rows are sent, and
they are counted here.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .celltypes import (
    DECIMAL_COMMA,
    DECIMAL_COMMA_NUMBER,
    INFERENCE_SHARE,
    INFERRED_ORDER,
    LEADING_ZERO,
    NUMERIC,
    PATTERNS,
    ColumnType,
    native_type,
    typed_value,
)
from .dates import DateReadings, with_readings
from .source import TableSource, positional

__all__ = ["ColumnProfile", "TableProfile", "column_names", "kept_rows", "profile_table"]


@dataclass(frozen=True, slots=True)
class ColumnProfile:
    """One column as the COLUMN node describes it."""

    index: int
    name: str
    type: ColumnType
    inferred: bool
    """Typed from its text (csv, tsv, xlsx, String parquet columns), not a native dtype."""
    null_count: int
    dirty_count: int
    type_share: float
    """Share of non-empty cells that parse as `type` (1.0 for native dtypes)."""
    day_first_votes: int = 0
    month_first_votes: int = 0
    ambiguous_cells: int = 0
    decimal_comma: bool = False
    """A float column written with a decimal comma (`1.234,56`): see celltypes.py."""


@dataclass(frozen=True, slots=True)
class TableProfile:
    """What is known of a table before its rows are sent."""

    columns: list[ColumnProfile]
    rows: int
    blank_rows: int
    ragged_rows: int
    """Rows with non-empty fields past the header's width (kept, see render.py)."""
    spare: list[str]
    """Frame columns past the header (csv/tsv spare fields)."""


def column_names(header: Sequence[str]) -> list[str]:
    """Header fields as unique, non-empty property names: NFC, blanks become column_N,
    repeats get _2, _3 (deterministic: left to right)."""
    names: list[str] = []
    seen: set[str] = set()
    for index, raw in enumerate(header):
        base = unicodedata.normalize("NFC", raw.strip()) or f"column_{index + 1}"
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}_{n}"
        seen.add(name)
        names.append(name)
    return names


def _filled(names: Sequence[str]) -> pl.Expr:
    """Whether a row has a cell among `names` that is not empty, null or whitespace only.

    One regex over the row's cells concatenated instead of a strip per cell: a row holds
    a non-whitespace character exactly when one of its cells does (`\\s` and strip_chars
    both mean Unicode White_Space), and a wide csv frame's many spare columns made the
    cell by cell check cost more than the parse."""
    cells = [pl.col(c).cast(pl.String, strict=False) for c in names]
    return pl.concat_str(cells, ignore_nulls=True).str.contains(r"\S")


def kept_rows(frame: pl.LazyFrame, textual: bool) -> pl.LazyFrame:
    """The frame without blank rows (text sources only: a parquet row is always a row)."""
    names = frame.collect_schema().names()
    if not textual or not names:
        return frame
    return frame.filter(_filled(names))


def _cell(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.String, strict=False).str.strip_chars()


def profile_table(source: TableSource, textual: bool) -> TableProfile:
    """Runs the profile passes over `source`."""
    names = column_names(source.header)
    if not names:
        return TableProfile([], 0, 0, 0, [])
    schema = source.frame.collect_schema()
    width = len(names)
    spare = [c for c in schema.names() if int(c[1:]) >= width]
    commas = _decimal_commas(source)
    first = _pass_one(source, schema, width, spare, textual, commas)
    blank = int(first["blank"]) if textual else 0
    rows = int(first["rows"]) - blank
    kinds = [_pick_type(positional(i), schema[positional(i)], first) for i in range(width)]
    second = _pass_two(source, kinds)
    columns = [
        _column_profile(index, name, kinds[index], schema[positional(index)], first, second, rows)
        for index, name in enumerate(names)
    ]
    return TableProfile(
        columns=columns,
        rows=rows,
        blank_rows=blank,
        ragged_rows=int(first.get("ragged", 0) or 0),
        spare=spare,
    )


def _summed(source: TableSource, query: Callable[[pl.LazyFrame], pl.LazyFrame]) -> dict[str, Any]:
    """The one-row result of `query` (sums only) over all of `source`'s rows."""
    if source.blocks is None:
        return query(source.frame).collect(engine="streaming").row(0, named=True)
    totals: dict[str, Any] = query(source.frame).collect().row(0, named=True)  # zeros
    for part in source.parts():
        for key, value in query(part).collect().row(0, named=True).items():
            totals[key] = (totals[key] or 0) + (value or 0)
    return totals


def _decimal_commas(source: TableSource) -> bool:
    """Whether a comma in a cell may be a decimal point: in a text table whose fields are
    not separated by commas (celltypes.py)."""
    delimiter = source.facts.get("delimiter")
    return isinstance(delimiter, str) and delimiter != ","


def _pass_one(
    source: TableSource,
    schema: pl.Schema,
    width: int,
    spare: list[str],
    textual: bool,
    commas: bool,
) -> dict[str, Any]:
    # The rules look at a cell stripped: stripped once, in its own step (`c3:cell`), rather
    # than once per rule (the optimizer does not share it: twice the time). Spare columns
    # are only ever blank or not: one regex over all of them (`spare:filled`).
    columns = [positional(i) for i in range(width)]
    known = {positional(i) for i in source.known if i < width}
    stripped = [c for c in columns if native_type(schema[c]) is None and c not in known]
    steps = [_cell(c).alias(f"{c}:cell") for c in stripped]
    aggregates = [pl.len().alias("rows")]
    if spare:
        steps.append(_filled(spare).alias("spare:filled"))
        aggregates.append(pl.col("spare:filled").sum().alias("ragged"))
    if textual:
        filled = [_filled_cell(c, stripped, known) for c in columns]
        if spare:
            filled.append(pl.col("spare:filled"))
        aggregates.append((~pl.any_horizontal(filled)).sum().alias("blank"))
    for column in columns:
        if column not in known:
            aggregates += _column_counts(column, schema[column], column in stripped, commas)
    first = _summed(source, lambda frame: frame.with_columns(steps).select(aggregates))
    for index, counts in source.known.items():
        if index < width:
            first.update({f"{positional(index)}:{key}": n for key, n in counts.items()})
    return first


def _column_counts(column: str, dtype: pl.DataType, stripped: bool, commas: bool) -> list[pl.Expr]:
    """Pass one's counts of a column: nulls (and non-finite floats) for a native dtype;
    else the non-empty cells, those with a leading zero, and each type's pattern matches
    (with `commas`, also the decimal-comma numbers and those written with the comma)."""
    if not stripped:
        counts = [pl.col(column).is_null().sum().alias(f"{column}:nulls")]
        if dtype.is_float():
            counts.append((~pl.col(column).is_finite()).sum().alias(f"{column}:dirty"))
        return counts
    cell = pl.col(f"{column}:cell")
    counts = [
        (cell != "").sum().alias(f"{column}:present"),
        cell.str.contains(LEADING_ZERO).sum().alias(f"{column}:zeros"),
        *(
            cell.str.contains(PATTERNS[kind]).sum().alias(f"{column}:{kind.value}")
            for kind in INFERRED_ORDER
        ),
    ]
    if commas:
        counts += [
            cell.str.contains(DECIMAL_COMMA_NUMBER).sum().alias(f"{column}:comma_numbers"),
            cell.str.contains(DECIMAL_COMMA).sum().alias(f"{column}:comma_decimals"),
        ]
    return counts


def _filled_cell(column: str, stripped: list[str], known: set[str]) -> pl.Expr:
    """Whether the row's cell in `column` is not blank, for pass one's blank rows."""
    if column in stripped:
        return (pl.col(f"{column}:cell") != "").fill_null(False)
    if column in known:  # text written from typed values: never blank but empty
        return (pl.col(column) != "").fill_null(False)
    return _filled([column])


_Kind = tuple[ColumnType, float, bool]
"""A column's type, the share of its cells that fit it, and whether it is decimal-comma."""


def _pick_type(column: str, dtype: pl.DataType, first: dict[str, Any]) -> _Kind:
    native = native_type(dtype)
    if native is not None:
        return native, 1.0, False
    present = int(first[f"{column}:present"] or 0)
    coded = bool(first[f"{column}:zeros"])  # leading zeros: codes, not numbers
    for kind in INFERRED_ORDER:
        if coded and kind.value in NUMERIC:
            continue
        share = int(first[f"{column}:{kind.value}"] or 0) / present if present else 0.0
        if present and share >= INFERENCE_SHARE:
            return kind, round(share, 4), False
        if kind is ColumnType.FLOAT and not coded and first.get(f"{column}:comma_decimals"):
            commas = int(first[f"{column}:comma_numbers"] or 0) / present
            if commas >= INFERENCE_SHARE:
                return ColumnType.FLOAT, round(commas, 4), True
    return ColumnType.STRING, 1.0, False


def _pass_two(source: TableSource, kinds: list[_Kind]) -> dict[str, Any]:
    stripped: list[str] = []
    dates: list[str] = []
    aggregates: list[pl.Expr] = []
    schema = source.frame.collect_schema()
    known: dict[str, Any] = {}
    for index, (kind, _, decimal_comma) in enumerate(kinds):
        column = positional(index)
        if native_type(schema[column]) is not None or kind is ColumnType.STRING:
            continue
        counted = source.known.get(index, {}).get(f"valid:{kind.value}")
        if counted is not None:
            known[f"{column}:valid"] = counted
            continue
        stripped.append(column)
        if kind is ColumnType.DATE:
            dates.append(column)
            r = DateReadings(f"{column}:")
            aggregates += [
                r.any_date.sum().alias(f"{column}:valid"),
                r.votes_day.sum().alias(f"{column}:day"),
                r.votes_month.sum().alias(f"{column}:month"),
                r.ambiguous.sum().alias(f"{column}:ambiguous"),
            ]
        else:
            cell = pl.col(f"{column}:cell")
            valid = typed_value(cell, kind, decimal_comma=decimal_comma).is_not_null().sum()
            aggregates.append(valid.alias(f"{column}:valid"))
    if not aggregates:
        return known

    def query(frame: pl.LazyFrame) -> pl.LazyFrame:
        frame = frame.with_columns(_cell(c).alias(f"{c}:cell") for c in stripped)
        for column in dates:
            frame = with_readings(frame, pl.col(f"{column}:cell"), f"{column}:")
        return frame.select(aggregates)

    return {**_summed(source, query), **known}


def _column_profile(
    index: int,
    name: str,
    kind: _Kind,
    dtype: pl.DataType,
    first: dict[str, Any],
    second: dict[str, Any],
    rows: int,
) -> ColumnProfile:
    column = positional(index)

    def count(stats: dict[str, Any], key: str) -> int:
        value = stats.get(f"{column}:{key}")
        return int(value) if isinstance(value, int) else 0

    ctype, share, decimal_comma = kind
    if native_type(dtype) is not None:
        return ColumnProfile(
            index, name, ctype, False, count(first, "nulls"), count(first, "dirty"), 1.0
        )
    present = count(first, "present")
    dirty = present - count(second, "valid") if ctype is not ColumnType.STRING else 0
    dates = ctype is ColumnType.DATE
    return ColumnProfile(
        index=index,
        name=name,
        type=ctype,
        inferred=True,
        null_count=rows - present,
        dirty_count=dirty,
        type_share=share,
        day_first_votes=count(second, "day") if dates else 0,
        month_first_votes=count(second, "month") if dates else 0,
        ambiguous_cells=count(second, "ambiguous") if dates else 0,
        decimal_comma=decimal_comma,
    )
