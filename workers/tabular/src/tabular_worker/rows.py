"""One chunk of rows to what its ROW nodes say — canonical lines, typed values, valid times
and date ambiguities — computed as polars expressions over the whole chunk (RowCells).
rowjson.py then writes them as JSON text.

Canonical rendering (deterministic, one line per row, no line breaks inside): the fields
in column order separated by a tab, each written as its source text with `\\` → `\\\\`,
tab → `\\t`, and any line break (CRLF, CR, LF) → `\\n`, then Unicode NFC. Empty cells are
empty fields; the extra fields of a ragged row follow after the last column. Typed native
cells (parquet) are written as polars formats them. The header line is the column names
rendered the same way. Because every line is NFC and free of CR, the builder's own
normalization leaves it byte for byte as measured here, and row spans are exact.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass

import polars as pl

from .celltypes import ColumnType, typed_value
from .dates import DAY_MICROS, VoteCarry
from .options import DateOrder
from .profile import ColumnProfile, TableProfile
from .source import positional

__all__ = [
    "DateAmbiguity",
    "RowCells",
    "RowPreparer",
    "dirty_column",
    "escape",
    "nfc_lines",
    "value_column",
]


_ESCAPES = {"\\": "\\\\", "\r\n": "\\n", "\r": "\\n", "\n": "\\n", "\t": "\\t"}


def escape(cell: pl.Expr) -> pl.Expr:
    """A String cell as canonical text (see the module docstring)."""
    # One Aho-Corasick pass; leftmost so that CRLF is one line break, not two.
    return cell.fill_null("").str.replace_many(
        list(_ESCAPES), list(_ESCAPES.values()), leftmost=True
    )


def nfc_lines(lines: pl.Series) -> pl.Series:
    """NFC of each line; skipped when the chunk is in NFC already, as most text is.

    Python's quick check over the joined lines costs a tenth of polars' normalization,
    and LF neither composes nor reorders, so the joined text is NFC exactly when every
    line is."""
    if unicodedata.is_normalized("NFC", lines.str.join("\n").item()):
        return lines
    return lines.str.normalize("NFC")


def value_column(index: int) -> str:
    """The RowCells column of the `index`-th column's typed values."""
    return f"v{index}"


def dirty_column(index: int) -> str:
    """The RowCells column of the `index`-th column's dirty cells (raw text, else null)."""
    return f"d{index}"


@dataclass(frozen=True, slots=True)
class DateAmbiguity:
    """An ambiguous effective-date cell: the applied reading first."""

    applied_day: int
    """Days since 1970-01-01 of the applied reading."""
    other_day: int
    applied_iso: str
    """The applied reading as yyyy-mm-dd."""
    other_iso: str
    day_first: bool
    """Whether the applied reading is day-first."""
    confidence: float


@dataclass(frozen=True, slots=True)
class RowCells:
    """A chunk's rows as values, one frame row per ROW node.

    Columns: `line` (canonical, NFC); per table column, `v{i}` its typed value (null for
    an empty cell: no property) and, where the type can misfit, `d{i}` the raw text of a
    dirty cell (kept instead of the value, which is then null); `valid_from` and
    `valid_to` (Unix microseconds, null when there is none). Ragged rows' extra fields and
    the effective date's ambiguities are by row position: both are rare.
    """

    frame: pl.DataFrame
    plain: frozenset[str]
    """String columns of `frame` known to hold no character JSON escapes (checked per
    chunk: most columns of most chunks), which the writer need not escape."""
    extras: dict[int, list[str]]
    """Extra fields past the header, trailing empty ones dropped."""
    ambiguities: dict[int, DateAmbiguity]
    """Only when they are recorded (options.clarify and an effective date column)."""


def _to_text(value: object) -> str:
    # Nested or exotic parquet values (lists, structs, binary, durations) as JSON text.
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_json_default)


def _json_default(value: object) -> object:
    # polars hands list cells to Python as Series; anything else JSON lacks, as its str.
    return value.to_list() if isinstance(value, pl.Series) else str(value)


def _native_value(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.Date:
        return column.dt.to_string("%Y-%m-%d")
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is not None:
            column = column.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
            return column.dt.to_string("%Y-%m-%dT%H:%M:%S%.fZ")
        return column.dt.to_string("%Y-%m-%dT%H:%M:%S%.f")
    if dtype.is_float() or dtype.is_decimal():
        as_float = column.cast(pl.Float64)
        return pl.when(as_float.is_finite()).then(as_float)
    if dtype.is_integer() or dtype == pl.Boolean:
        return column
    return _native_text(column, dtype)


def _native_text(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype.is_nested() or dtype == pl.Binary or dtype == pl.Object:
        return column.map_elements(_to_text, return_dtype=pl.String)
    return column.cast(pl.String)


def _can_be_dirty(column: ColumnProfile) -> bool:
    return column.inferred and column.type is not ColumnType.STRING


class RowPreparer:
    """Turns successive chunks of one table into RowCells, carrying date votes."""

    def __init__(
        self,
        profile: TableProfile,
        schema: pl.Schema,
        effective: int | None,
        date_order: DateOrder,
        *,
        clarify: bool,
    ) -> None:
        self._profile = profile
        self._schema = schema
        self._effective = effective
        self._order = date_order
        self._clarify = clarify
        self._votes = {c.index: VoteCarry() for c in profile.columns if _voted(c)}

    def cells(self, chunk: pl.DataFrame) -> RowCells:
        dates = {
            index: carry.applied(chunk, positional(index), self._order)
            for index, carry in self._votes.items()
        }
        inferred = [c for c in self._profile.columns if c.inferred]
        # Each typed rule reads the cell stripped: stripped once (`s{i}`), not per rule.
        frame = chunk.with_columns(
            *(d["date"].alias(f"date{i}") for i, d in dates.items()),
            *(_stripped(c.index) for c in inferred),
        )
        spare = _spare_in_use(chunk, self._profile.spare)
        plain = _plain(frame, [positional(c.index) for c in inferred] + spare)
        cells = frame.select(
            self._line(spare, plain),
            *(self._value(c).alias(value_column(c.index)) for c in self._profile.columns),
            *self._valid_time(),
        )
        cells = cells.with_columns(nfc_lines(cells["line"]), *self._dirty(frame, cells))
        return RowCells(
            frame=cells,
            plain=frozenset(
                name
                for c in inferred
                if positional(c.index) in plain
                for name in (value_column(c.index), dirty_column(c.index))
            ),
            extras=_extras(frame, spare),
            ambiguities=self._ambiguities(dates),
        )

    # -- expressions -----------------------------------------------------------------------

    def _cell(self, column: ColumnProfile, plain: set[str]) -> pl.Expr:
        name = positional(column.index)
        if column.inferred:
            text = pl.col(name).cast(pl.String)
            return text.fill_null("") if name in plain else escape(text)
        dtype = self._schema[name]
        return escape(
            _native_text(pl.col(name), dtype)
            if not dtype.is_numeric()
            else pl.col(name).cast(pl.String)
        )

    def _line(self, spare: list[str], plain: set[str]) -> pl.Expr:
        """The canonical line; the columns in `plain` have nothing to escape."""
        line = pl.concat_str([self._cell(c, plain) for c in self._profile.columns], separator="\t")
        if spare:
            fields = [pl.col(c).fill_null("") if c in plain else escape(pl.col(c)) for c in spare]
            extra = pl.concat_str(fields, separator="\t").str.strip_chars_end("\t")
            line = (
                pl.when(extra != "")
                .then(pl.concat_str([line, extra], separator="\t"))
                .otherwise(line)
            )
        return line.alias("line")

    def _value(self, column: ColumnProfile) -> pl.Expr:
        name = positional(column.index)
        if not column.inferred:
            return _native_value(pl.col(name), self._schema[name])
        if column.type is ColumnType.DATE:
            return pl.col(f"date{column.index}").dt.to_string("%Y-%m-%d")
        cell = pl.col(f"s{column.index}")
        if column.type is ColumnType.STRING:
            return pl.when(cell != "").then(pl.col(name).cast(pl.String))
        value = typed_value(cell, column.type, decimal_comma=column.decimal_comma)
        if column.type is ColumnType.DATETIME:
            return value.dt.to_string("%Y-%m-%dT%H:%M:%S%.f")
        return value

    def _dirty(self, frame: pl.DataFrame, cells: pl.DataFrame) -> list[pl.Series]:
        """`d{i}`: a non-empty cell without a typed value is kept as its raw text (and
        counted). Only a column with a null value in the chunk can have one: null counts
        are free, and most chunks of most columns skip the check."""
        suspects = [
            c
            for c in self._profile.columns
            if _can_be_dirty(c) and cells[value_column(c.index)].null_count()
        ]
        if not suspects:
            return []
        values = [cells[value_column(c.index)] for c in suspects]
        return frame.with_columns(values).select(_misfit(c.index) for c in suspects).get_columns()

    def _valid_time(self) -> tuple[pl.Expr, pl.Expr]:
        """The effective date's interval: a whole day for a date, an instant for a datetime."""
        none = pl.lit(None, pl.Int64)
        if self._effective is None:
            return none.alias("valid_from"), none.alias("valid_to")
        column = self._profile.columns[self._effective]
        name = positional(column.index)
        if column.type is ColumnType.DATE:
            day = pl.col(f"date{column.index}") if column.inferred else pl.col(name)
            start = day.cast(pl.Int64) * DAY_MICROS
            return start.alias("valid_from"), (start + DAY_MICROS).alias("valid_to")
        moment = (
            typed_value(pl.col(f"s{column.index}"), column.type)
            if column.inferred
            else pl.col(name)
        )
        return moment.dt.epoch("us").alias("valid_from"), none.alias("valid_to")

    def _ambiguities(self, dates: dict[int, pl.DataFrame]) -> dict[int, DateAmbiguity]:
        if not self._clarify or self._effective is None:
            return {}
        readings = dates.get(self._profile.columns[self._effective].index)
        if readings is None:
            return {}
        flagged = readings.with_row_index("_i").filter(pl.col("alt").is_not_null())
        columns = flagged.select(
            "_i",
            pl.col("date").cast(pl.Int64),
            pl.col("alt").cast(pl.Int64),
            pl.col("date").dt.to_string("%Y-%m-%d").alias("iso"),
            pl.col("alt").dt.to_string("%Y-%m-%d").alias("other_iso"),
            "day_first",
            "confidence",
        )
        return {
            index: DateAmbiguity(applied, other, iso, other_iso, bool(day_first), round(conf, 4))
            for index, applied, other, iso, other_iso, day_first, conf in columns.iter_rows()
        }


def _stripped(index: int) -> pl.Expr:
    return pl.col(positional(index)).cast(pl.String).str.strip_chars().alias(f"s{index}")


def _misfit(index: int) -> pl.Expr:
    misfit = (pl.col(f"s{index}") != "") & pl.col(value_column(index)).is_null()
    return (
        pl.when(misfit).then(pl.col(positional(index)).cast(pl.String)).alias(dirty_column(index))
    )


# What JSON escapes (the quote, the backslash, C0 controls), a superset of what the
# canonical line escapes (backslash, tab, CR, LF).
_ESCAPED = r'[\x00-\x1f"\\]'


def _plain(frame: pl.DataFrame, columns: list[str]) -> set[str]:
    """Which of the String `columns` have no character to escape in this chunk."""
    if not columns:
        return set()
    found = frame.select(pl.col(c).cast(pl.String).str.contains(_ESCAPED).any() for c in columns)
    return {c for c in columns if not found[c][0]}


def _spare_in_use(chunk: pl.DataFrame, spare: list[str]) -> list[str]:
    """The spare columns up to the last one with a non-empty field in this chunk: most
    chunks have no ragged row, and empty fields at the end add nothing to a line (trailing
    empty fields are stripped) or to `_extra`."""
    if not spare:
        return []
    longest = chunk.select(pl.col(spare).str.len_bytes().max()).row(0)
    in_use = [at for at, size in enumerate(longest) if size]
    return spare[: in_use[-1] + 1] if in_use else []


def _extras(frame: pl.DataFrame, spare: list[str]) -> dict[int, list[str]]:
    """The extra fields of each ragged row, by position (rare: done row by row)."""
    if not spare:
        return {}
    ragged = (
        frame.select(spare)
        .with_row_index("_i")
        .filter(pl.any_horizontal([pl.col(c) != "" for c in spare]))
    )
    extras = {}
    for row in ragged.iter_rows():
        fields = [str(f or "") for f in row[1:]]
        while fields and not fields[-1]:
            fields.pop()
        extras[row[0]] = fields
    return extras


def _voted(column: ColumnProfile) -> bool:
    return column.inferred and column.type is ColumnType.DATE
