"""Column types: what a cell must look like to count as each, and its typed value.

A String column's type is inferred from the whole table (profile.py counts the matches):
the first of boolean, integer, float, date, datetime, duration whose *pattern* at least 90 % of its
non-empty cells match, else string. A cell that fits the pattern but not the calendar or
the 64-bit range (2026-02-30, 99999999999999999999) is then dirty like any other misfit.
A column with any cell that has a leading zero (`08123`, `-007`, `00.5`: codes, zip
codes, account numbers) is not numeric at all, neither integer nor float, however many
of its other cells are numbers: reading `08123` as 8123.0 would lose what it says.
`nan`/`inf` do not count as floats. In a table not separated by commas (`;`, tab, `|`:
what a spreadsheet in most of Europe exports), a column that is not otherwise numeric
whose cells are at least 90 % decimal-comma numbers (`1,5`, `-0,25`, `1.234,56`,
`1 234,5`), one of them with the comma, is a float column read that way
(`decimal_comma`); a comma-separated table cannot hold such cells unquoted, so there the
comma is never read as a decimal point. A non-empty cell that does not parse as its
column's type is *dirty*: counted per type in `stats.dirty_counts`, kept as its raw text in
the ROW's properties and, as every cell, verbatim in the canonical text.

Columns that arrive typed (parquet, native dtypes) keep their dtype's type.
"""

from __future__ import annotations

import enum

import polars as pl

from .dates import DATE_PATTERN

__all__ = [
    "DECIMAL_COMMA",
    "DECIMAL_COMMA_NUMBER",
    "DURATION_PATTERN",
    "INFERENCE_SHARE",
    "INFERRED_ORDER",
    "LEADING_ZERO",
    "NUMERIC",
    "PATTERNS",
    "ColumnType",
    "native_type",
    "typed_value",
]

INFERENCE_SHARE = 0.9
"""Share of a column's non-empty cells that must match a type for the column to have it."""

_INT = r"^[+-]?(0|[1-9][0-9]*)$"
LEADING_ZERO = r"^[+-]?0[0-9]"
"""A number written with a leading zero: its column is not numeric (a code)."""
NUMERIC = frozenset({"integer", "float"})
"""The inferred types a leading zero rules out."""
_FLOAT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_GROUPS = "[. \u00a0\u202f]"
"""What groups a decimal-comma number's thousands: a point, a space, a (narrow) no-break space."""
DECIMAL_COMMA_NUMBER = rf"^[+-]?([0-9]{{1,3}}({_GROUPS}[0-9]{{3}})+|[0-9]+)(,[0-9]+)?$"
"""A number as decimal-comma locales write it (the comma part optional: `12` fits)."""
DECIMAL_COMMA = rf"^[+-]?([0-9]{{1,3}}({_GROUPS}[0-9]{{3}})+|[0-9]+),[0-9]+$"
"""One with its decimal comma."""
_DATETIME = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$"
# ISO 8601 durations as spreadsheets mean them (P10DT15H10M10S, PT0.5S, P3D): days and a
# time; no years or months, whose length varies. Written without look-ahead (polars' regex
# has none), so every alternative needs at least one component.
_SECONDS = r"\d+(\.\d+)?S"
_TIME = rf"T(\d+H(\d+M)?({_SECONDS})?|\d+M({_SECONDS})?|{_SECONDS})"
DURATION_PATTERN = rf"^-?P(\d+D({_TIME})?|{_TIME})$"
_DATETIME_FORMATS = (
    "%Y-%m-%dT%H:%M:%S%.f%:z",
    "%Y-%m-%d %H:%M:%S%.f%:z",
    "%Y-%m-%dT%H:%M:%S%.fZ",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M",
)


class ColumnType(enum.StrEnum):
    """A column's type, as COLUMN.type and the keys of stats.dirty_counts."""

    BOOLEAN = "boolean"
    """true/false in any letter case."""
    INTEGER = "integer"
    """64-bit signed, no leading zeros."""
    FLOAT = "float"
    """Decimal or scientific notation; finite."""
    DATE = "date"
    """ISO yyyy-mm-dd, or dd/mm/yyyy and mm/dd/yyyy (separators / . -), see dates.py."""
    DATETIME = "datetime"
    """ISO date and time, optional seconds, fraction and offset (rendered in UTC when given)."""
    DURATION = "duration"
    """ISO 8601 days and time (P10DT15H10M10S): spreadsheet durations, kept as that text."""
    STRING = "string"
    """Anything; also every column nothing else fits."""


INFERRED_ORDER = (
    ColumnType.BOOLEAN,
    ColumnType.INTEGER,
    ColumnType.FLOAT,
    ColumnType.DATE,
    ColumnType.DATETIME,
    ColumnType.DURATION,
)


PATTERNS: dict[ColumnType, str] = {
    ColumnType.BOOLEAN: r"^(?i:true|false)$",
    ColumnType.INTEGER: _INT,
    ColumnType.FLOAT: _FLOAT,
    ColumnType.DATE: DATE_PATTERN,
    ColumnType.DATETIME: _DATETIME,
    ColumnType.DURATION: DURATION_PATTERN,
}
"""What a cell of each inferred type looks like: the profile's cheap first pass."""


def parse_datetime(cell: pl.Expr) -> pl.Expr:
    """A stripped String cell as a UTC (or naive) Datetime in microseconds, or null."""
    gated = pl.when(cell.str.contains(_DATETIME)).then(cell)
    readings = []
    for fmt in _DATETIME_FORMATS:
        parsed = gated.str.to_datetime(fmt, strict=False, time_unit="us")
        if "z" in fmt or fmt.endswith("Z"):
            parsed = parsed.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        readings.append(parsed)
    return pl.coalesce(readings)


def typed_value(cell: pl.Expr, kind: ColumnType, *, decimal_comma: bool = False) -> pl.Expr:
    """The typed value of a stripped String cell, or null where it does not parse
    (`decimal_comma`: a float column written `1.234,56`)."""
    if kind is ColumnType.FLOAT and decimal_comma:
        plain = cell.str.replace_all(_GROUPS, "").str.replace(",", ".", literal=True)
        value = plain.cast(pl.Float64, strict=False)
        return pl.when(cell.str.contains(DECIMAL_COMMA_NUMBER) & value.is_finite()).then(value)
    if kind is ColumnType.BOOLEAN:
        lower = cell.str.to_lowercase()
        return pl.when(lower == "true").then(True).when(lower == "false").then(False)
    if kind is ColumnType.INTEGER:
        return pl.when(cell.str.contains(_INT)).then(cell.cast(pl.Int64, strict=False))
    if kind is ColumnType.FLOAT:
        # A decimal past float64's range (1e400) reads as infinity, which JSON cannot
        # carry: like any cell that does not fit its column, it is dirty.
        value = cell.cast(pl.Float64, strict=False)
        return pl.when(cell.str.contains(_FLOAT) & value.is_finite()).then(value)
    if kind is ColumnType.DATETIME:
        return parse_datetime(cell)
    if kind is ColumnType.DURATION:
        return pl.when(cell.str.contains(DURATION_PATTERN)).then(cell)
    raise ValueError(f"typed_value: {kind} has no single expression (dates vote, strings stay)")


def native_type(dtype: pl.DataType) -> ColumnType | None:
    """The type of a column that arrives typed; None for String (to be inferred)."""
    if dtype == pl.String or dtype == pl.Categorical or isinstance(dtype, pl.Enum):
        return None
    if dtype == pl.Boolean:
        return ColumnType.BOOLEAN
    if dtype.is_integer():
        return ColumnType.INTEGER
    if dtype.is_float() or dtype.is_decimal():
        return ColumnType.FLOAT
    if dtype == pl.Date:
        return ColumnType.DATE
    if isinstance(dtype, pl.Datetime):
        return ColumnType.DATETIME
    if isinstance(dtype, pl.Duration):
        return ColumnType.DURATION
    return ColumnType.STRING
