"""Durations as ISO 8601 text (P10DT15H10M10S), written by polars expressions.

Spreadsheets store a duration as a number of days, shown through a time format
(`[h]:mm:ss`, or a date-time format over a day count); calamine hands them over as polars
Durations, or as date-times on the first days of the workbook's epoch (1899-12-31 in the
1900 date system, 1904-01-01 in the 1904 one), which no real date in a business sheet
falls on. Both become days and a time: years and months are never used, their length
varies. Seconds keep their fraction (to the microsecond, trailing zeros dropped); zero is
`PT0S`; a negative duration gets a leading `-`.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

__all__ = ["EPOCHS", "iso_duration", "since_epoch"]

_DAY = 86_400_000_000
_HOUR = 3_600_000_000
_MINUTE = 60_000_000
_SECOND = 1_000_000

EPOCHS = {False: dt.datetime(1899, 12, 31), True: dt.datetime(1904, 1, 1)}
"""Day 0 of the 1900 date system (False) and of the 1904 one (True), as calamine counts."""
_WINDOW = dt.timedelta(days=59)
"""Date-times this close after day 0 are day counts: 1900-02-28 is the 1900 system's
last day before its leap-year bug (serial 60), and no business date is that early."""


def _part(amount: pl.Expr, unit: str) -> pl.Expr:
    return pl.when(amount > 0).then(pl.concat_str(amount.cast(pl.String), pl.lit(unit)))


def _seconds(micros: pl.Expr) -> pl.Expr:
    whole = (micros // _SECOND).cast(pl.String)
    fraction = (micros % _SECOND).cast(pl.String).str.zfill(6).str.strip_chars_end("0")
    text = pl.when(micros % _SECOND > 0).then(pl.concat_str(whole, pl.lit("."), fraction))
    return pl.when(micros > 0).then(pl.concat_str(text.otherwise(whole), pl.lit("S")))


def iso_duration(value: pl.Expr) -> pl.Expr:
    """A polars Duration (any unit) as ISO 8601 days and time; null stays null."""
    total = value.dt.total_microseconds()
    size = total.abs()
    rest = size % _DAY
    clock = pl.concat_str(
        _part(rest // _HOUR, "H").fill_null(""),
        _part(rest // _MINUTE % 60, "M").fill_null(""),
        _seconds(rest % _MINUTE).fill_null(""),
    )
    time = pl.when(clock != "").then(pl.concat_str(pl.lit("T"), clock)).otherwise(pl.lit(""))
    body = pl.concat_str(_part(size // _DAY, "D").fill_null(""), time)
    body = pl.when(body == "").then(pl.lit("T0S")).otherwise(body)
    sign = pl.when(total < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    return pl.when(total.is_not_null()).then(pl.concat_str(sign, pl.lit("P"), body))


def since_epoch(moment: pl.Expr, date1904: bool) -> pl.Expr:
    """A date-time cell as the duration it stands for when it falls in the first days of
    the workbook's epoch (a day count or a time of day shown as a date), else null."""
    epoch = EPOCHS[date1904]
    early = (moment >= epoch) & (moment < epoch + _WINDOW)
    return pl.when(early).then(moment - pl.lit(epoch))
