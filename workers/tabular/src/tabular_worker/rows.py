"""One chunk of rows to what the ROW nodes need: canonical lines, typed properties, valid
times and date ambiguities — computed as polars expressions over the whole chunk.

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
from dataclasses import dataclass
from typing import Any

import polars as pl

from .celltypes import ColumnType, typed_value
from .dates import DAY_MICROS, VoteCarry
from .options import DateOrder
from .profile import ColumnProfile, TableProfile
from .source import positional

__all__ = ["DateAmbiguity", "PreparedRows", "RowPreparer", "escape", "render_line"]


_ESCAPES = {"\\": "\\\\", "\r\n": "\\n", "\r": "\\n", "\n": "\\n", "\t": "\\t"}


def escape(cell: pl.Expr) -> pl.Expr:
    """A String cell as canonical text (see the module docstring)."""
    # One Aho-Corasick pass; leftmost so that CRLF is one line break, not two.
    return cell.fill_null("").str.replace_many(
        list(_ESCAPES), list(_ESCAPES.values()), leftmost=True
    )


def nfc_lines(lines: pl.Series) -> pl.Series:
    """NFC of each line; skipped for an all-ASCII chunk, where it changes nothing."""
    if lines.str.contains(r"[^\x00-\x7F]").any():
        return lines.str.normalize("NFC")
    return lines


def render_line(fields: list[str]) -> str:
    """The canonical line of literal fields (the header line), same rules as the rows."""
    rendered = pl.select(
        pl.concat_str([escape(pl.lit(f, pl.String)) for f in fields], separator="\t").str.normalize(
            "NFC"
        )
    ).item()
    return str(rendered) if fields else ""


@dataclass(frozen=True, slots=True)
class DateAmbiguity:
    """An ambiguous effective-date cell: the applied reading first."""

    applied_day: int
    """Days since 1970-01-01 of the applied reading."""
    other_day: int
    day_first: bool
    """Whether the applied reading is day-first."""
    confidence: float


@dataclass(frozen=True, slots=True)
class PreparedRows:
    """A chunk's rows, ready for the builder."""

    lines: list[str]
    sizes: list[int]
    """UTF-8 bytes of each line (without its LF)."""
    properties: list[dict[str, Any]]
    valid_from: list[int | None]
    valid_to: list[int | None]
    ambiguities: list[DateAmbiguity | None]

    def __len__(self) -> int:
        return len(self.lines)


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


class RowPreparer:
    """Turns successive chunks of one table into PreparedRows, carrying date votes."""

    def __init__(
        self,
        profile: TableProfile,
        schema: pl.Schema,
        effective: int | None,
        date_order: DateOrder,
        extra_key: str,
    ) -> None:
        self._profile = profile
        self._schema = schema
        self._effective = effective
        self._order = date_order
        self._extra_key = extra_key
        self._votes = {c.index: VoteCarry() for c in profile.columns if _voted(c)}

    def prepare(self, chunk: pl.DataFrame) -> PreparedRows:
        dates = {
            index: carry.applied(chunk, positional(index), self._order)
            for index, carry in self._votes.items()
        }
        frame = chunk.with_columns([d["date"].alias(f"date{i}") for i, d in dates.items()])
        lines = nfc_lines(frame.select(self._line()).to_series())
        values = frame.select(self._values())
        dirty = frame.select(self._dirty())
        properties = [{k: v for k, v in row.items() if v is not None} for row in values.to_dicts()]
        self._patch_dirty(frame, dirty, properties)
        self._patch_extra(frame, properties)
        valid_from, valid_to, ambiguities = self._valid_times(frame, dates)
        return PreparedRows(
            lines=lines.to_list(),
            sizes=lines.str.len_bytes().to_list(),
            properties=properties,
            valid_from=valid_from,
            valid_to=valid_to,
            ambiguities=ambiguities,
        )

    # -- expressions -----------------------------------------------------------------------

    def _cell(self, column: ColumnProfile) -> pl.Expr:
        name = positional(column.index)
        if column.inferred:
            return escape(pl.col(name).cast(pl.String))
        dtype = self._schema[name]
        return escape(
            _native_text(pl.col(name), dtype)
            if not dtype.is_numeric()
            else pl.col(name).cast(pl.String)
        )

    def _line(self) -> pl.Expr:
        line = pl.concat_str([self._cell(c) for c in self._profile.columns], separator="\t")
        if self._profile.spare:
            extra = pl.concat_str(
                [escape(pl.col(c)) for c in self._profile.spare], separator="\t"
            ).str.strip_chars_end("\t")
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
        raw = pl.col(name).cast(pl.String)
        cell = raw.str.strip_chars()
        if column.type is ColumnType.STRING:
            return pl.when(cell != "").then(raw)
        if column.type is ColumnType.DATE:
            return pl.col(f"date{column.index}").dt.to_string("%Y-%m-%d")
        value = typed_value(cell, column.type)
        if column.type is ColumnType.DATETIME:
            return value.dt.to_string("%Y-%m-%dT%H:%M:%S%.f")
        return value

    def _values(self) -> list[pl.Expr]:
        return [self._value(c).alias(c.name) for c in self._profile.columns]

    def _dirty(self) -> list[pl.Expr]:
        out = []
        for column in self._profile.columns:
            name = positional(column.index)
            if column.inferred and column.type is not ColumnType.STRING:
                cell = pl.col(name).cast(pl.String).str.strip_chars()
                out.append(((cell != "") & self._value(column).is_null()).alias(column.name))
        return out

    # -- per-row fixes, only for the rows that need them ------------------------------------

    def _patch_dirty(
        self, frame: pl.DataFrame, dirty: pl.DataFrame, properties: list[dict[str, Any]]
    ) -> None:
        if dirty.width == 0:
            return
        names = {c.name: positional(c.index) for c in self._profile.columns}
        flagged = dirty.with_row_index("_i").filter(pl.any_horizontal(pl.exclude("_i")))
        for row in flagged.iter_rows(named=True):
            index = row.pop("_i")
            for name, is_dirty in row.items():
                if is_dirty:
                    # Kept as its raw text: nothing of the source is lost (and counted).
                    properties[index][name] = frame[names[name]][index]

    def _patch_extra(self, frame: pl.DataFrame, properties: list[dict[str, Any]]) -> None:
        if not self._profile.spare:
            return
        spare = frame.select(self._profile.spare).with_row_index("_i")
        ragged = spare.filter(pl.any_horizontal([pl.col(c) != "" for c in self._profile.spare]))
        for row in ragged.iter_rows():
            fields = [str(f or "") for f in row[1:]]
            while fields and not fields[-1]:
                fields.pop()
            properties[row[0]][self._extra_key] = fields

    def _valid_times(
        self, frame: pl.DataFrame, dates: dict[int, pl.DataFrame]
    ) -> tuple[list[int | None], list[int | None], list[DateAmbiguity | None]]:
        rows = frame.height
        none: list[Any] = [None] * rows
        if self._effective is None:
            return none, list(none), list(none)
        column = self._profile.columns[self._effective]
        name = positional(column.index)
        if column.type is ColumnType.DATE:
            day = dates[column.index]["date"] if column.inferred else frame[name]
            start = (day.cast(pl.Int64) * DAY_MICROS).to_list()
            end = [None if s is None else s + DAY_MICROS for s in start]
            return start, end, self._ambiguities(dates.get(column.index), rows)
        moment = (
            typed_value(pl.col(name).cast(pl.String).str.strip_chars(), column.type)
            if column.inferred
            else pl.col(name)
        )
        start = frame.select(moment.dt.epoch("us")).to_series().to_list()
        return start, list(none), list(none)

    @staticmethod
    def _ambiguities(readings: pl.DataFrame | None, rows: int) -> list[DateAmbiguity | None]:
        out: list[DateAmbiguity | None] = [None] * rows
        if readings is None:
            return out
        flagged = readings.with_row_index("_i").filter(pl.col("alt").is_not_null())
        for index, applied, other, confidence, day_first in flagged.select(
            "_i",
            pl.col("date").cast(pl.Int64),
            pl.col("alt").cast(pl.Int64),
            "confidence",
            "day_first",
        ).iter_rows():
            out[index] = DateAmbiguity(applied, other, bool(day_first), round(float(confidence), 4))
        return out


def _voted(column: ColumnProfile) -> bool:
    return column.inferred and column.type is ColumnType.DATE
