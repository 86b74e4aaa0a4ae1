"""Date cells: ISO and day/month/year readings, day-first vs month-first voting, the
effective-date column.

A cell like 25/03/2026 can only be day-first, 03/25/2026 only month-first; 03/04/2026 is
ambiguous (3 April or March 4). Unambiguous cells vote. An ambiguous cell is read the way
the votes of the cells *before it* in the same column went (rows in file order, chunk
after chunk, which is deterministic), so the decision never depends on chunk size or on
what comes later; with no votes yet, or a tie, month-first applies (the reading of the
ISO-less US exports this most often meets) with confidence 0.5. `date_order` forces one.

Everything here is polars expressions over one chunk plus a small carry (the vote counts
so far) from the chunks before: no per-cell Python.

Effective date (documented heuristic, README): among a table's date and datetime columns,
the first by rank of its normalized header —
  1. mentions "effective", "valid from", "as of"/"asof", or "value date";
  2. is "date" or "day", or ends in "date", unless it names another moment ("end", "due",
     "expiry", "until", "birth", "created", "updated", "deadline", "maturity", …);
leftmost first within a rank. Its applied reading becomes the ROW's valid time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from .options import DateOrder

__all__ = [
    "DATE_PATTERN",
    "DAY_MICROS",
    "DateReadings",
    "VoteCarry",
    "effective_column",
    "with_readings",
]

DAY_MICROS = 86_400_000_000

_ISO = r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})$"
_DMY = r"^(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{4})$"

_EFFECTIVE = re.compile(r"\b(effective|valid from|valid since|as of|asof|value date)\b")
_OTHER_MOMENT = re.compile(
    r"\b(end|ends|ending|due|expiry|expires|expiration|until|to|birth|dob|born|created|"
    r"modified|updated|deleted|deadline|maturity|closing|close)\b"
)


def with_readings(frame: pl.LazyFrame, cell: pl.Expr, prefix: str) -> pl.LazyFrame:
    """`frame` with the readings of a stripped String cell as three Date columns
    `{prefix}iso`, `{prefix}df` (day-first) and `{prefix}mf` (month-first), null where
    there is none (and the steps they come from: `{prefix}slashed`, the cell with its
    separators written `/`, and whether it has the ISO or the d/m/y shape,
    `{prefix}is_iso` and `{prefix}is_dmy`).

    Materialized once, to be referred to through DateReadings: the expressions are costly,
    and every rule below uses each of them several times. The shapes are checked by the
    patterns; then each reading is one parse of the cell with its separators unified (a
    parse rejects 2026-02-30 just as it rejects a cell of another shape) — three times
    cheaper than taking the numbers apart and parsing them put together again."""
    parts = frame.with_columns(
        cell.str.replace_many([".", "-"], ["/", "/"]).alias(f"{prefix}slashed"),
        cell.str.contains(_ISO).alias(f"{prefix}is_iso"),
        cell.str.contains(_DMY).alias(f"{prefix}is_dmy"),
    )
    slashed = pl.col(f"{prefix}slashed")
    iso, dmy = pl.col(f"{prefix}is_iso"), pl.col(f"{prefix}is_dmy")
    return parts.with_columns(
        pl.when(iso).then(slashed.str.to_date("%Y/%m/%d", strict=False)).alias(f"{prefix}iso"),
        pl.when(dmy).then(slashed.str.to_date("%d/%m/%Y", strict=False)).alias(f"{prefix}df"),
        pl.when(dmy).then(slashed.str.to_date("%m/%d/%Y", strict=False)).alias(f"{prefix}mf"),
    )


@dataclass(frozen=True, slots=True)
class DateReadings:
    """Rules over the columns with_readings(…, prefix) made."""

    prefix: str

    @property
    def iso(self) -> pl.Expr:
        return pl.col(f"{self.prefix}iso")

    @property
    def day_first(self) -> pl.Expr:
        return pl.col(f"{self.prefix}df")

    @property
    def month_first(self) -> pl.Expr:
        return pl.col(f"{self.prefix}mf")

    @property
    def votes_day(self) -> pl.Expr:
        return self.day_first.is_not_null() & self.month_first.is_null()

    @property
    def votes_month(self) -> pl.Expr:
        return self.month_first.is_not_null() & self.day_first.is_null()

    @property
    def ambiguous(self) -> pl.Expr:
        both = self.day_first.is_not_null() & self.month_first.is_not_null()
        return both & (self.day_first != self.month_first)

    @property
    def any_date(self) -> pl.Expr:
        return pl.coalesce(self.iso, self.day_first, self.month_first).is_not_null()


DATE_PATTERN = f"{_ISO}|{_DMY}"
"""What a date cell looks like (the profile's first pass counts this, cheaply)."""


@dataclass(slots=True)
class VoteCarry:
    """A column's votes from the chunks already read."""

    day: int = 0
    month: int = 0

    def applied(self, chunk: pl.DataFrame, cell: str, order: DateOrder) -> pl.DataFrame:
        """For String column `cell` of `chunk`: the applied date, the other reading where
        the cell is ambiguous, and the applied reading's confidence; then counts the
        chunk's votes into the carry. Columns: date, alt, confidence, day_first (bool)."""
        r = DateReadings("r:")
        column = chunk.lazy().select(cell)
        readings = with_readings(column, pl.col(cell).str.strip_chars(), r.prefix).collect()
        # Votes strictly before each row: a cell never votes for itself.
        before_day = r.votes_day.cast(pl.Int64).cum_sum().shift(1, fill_value=0) + self.day
        before_month = r.votes_month.cast(pl.Int64).cum_sum().shift(1, fill_value=0) + self.month
        if order == "auto":
            pick_day = before_day > before_month
            support = pl.when(pick_day).then(before_day).otherwise(before_month)
            confidence = (support + 1) / (before_day + before_month + 2)
        else:
            pick_day = pl.lit(order == "day-first")
            confidence = pl.lit(1.0)
        frame = readings.with_columns(pick_day.alias("pick_day"), confidence.alias("conf")).select(
            date=pl.coalesce(
                r.iso,
                pl.when(r.ambiguous & ~pl.col("pick_day"))
                .then(r.month_first)
                .otherwise(pl.coalesce(r.day_first, r.month_first)),
            ),
            alt=pl.when(r.ambiguous).then(
                pl.when(pl.col("pick_day")).then(r.month_first).otherwise(r.day_first)
            ),
            confidence=pl.when(r.ambiguous).then(pl.col("conf")),
            day_first=pl.when(r.ambiguous).then(pl.col("pick_day")),
            votes_day=r.votes_day,
            votes_month=r.votes_month,
        )
        self.day += int(frame["votes_day"].sum())
        self.month += int(frame["votes_month"].sum())
        return frame.drop("votes_day", "votes_month")


def _normalized(header: str) -> str:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", header)  # effectiveDate -> effective Date
    return " ".join(re.sub(r"[^0-9a-z]+", " ", spaced.lower()).split())


def effective_column(names: Sequence[str], temporal: Sequence[bool]) -> int | None:
    """The index of the effective-date column among `names` (only where `temporal`)."""
    ranked: list[tuple[int, int]] = []
    for index, (name, is_date) in enumerate(zip(names, temporal, strict=True)):
        if not is_date:
            continue
        words = _normalized(name)
        if _EFFECTIVE.search(words):
            ranked.append((1, index))
        elif (words in ("date", "day") or words.endswith("date")) and not _OTHER_MOMENT.search(
            words
        ):
            ranked.append((2, index))
    return min(ranked)[1] if ranked else None
