"""What a job's content becomes before profiling: TableSources, one per table, with the
positional frame column names every later step uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import polars as pl

from workers_common.wire import JsonValue

__all__ = ["TableSource", "positional"]


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
    """Data rows (header excluded), columns c0.. (header width + spare for csv); for a
    block-read source an empty frame of that schema (the rows come from `blocks`)."""
    facts: dict[str, JsonValue] = field(default_factory=dict)
    """What reading found out (encoding, delimiter, replacements) for the TABLE node."""
    blocks: Callable[[], Iterator[pl.DataFrame]] | None = None
    """csv/tsv: the data rows again from the start, one bounded frame per block."""
    known: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    """Profile counts already known for some columns, by column index (a workbook's
    typed columns, whose text is written from the values): the keys of the profile's
    passes (`present`, `zeros`, one per inferred type's pattern, and `valid:<type>`),
    so those columns skip the pattern and parse passes (profile.py)."""

    def parts(self) -> Iterator[pl.LazyFrame]:
        """The data rows in file order: `frame` itself, or each block's frame."""
        if self.blocks is None:
            yield self.frame
        else:
            for block in self.blocks():
                yield block.lazy()
