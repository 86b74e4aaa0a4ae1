"""The per-row path the tabular worker had before polars wrote its JSON: the oracle the fast
path is compared with, byte for byte (test_fast_path.py).

Each ROW is a Python dict given to the builder's checked `add_node`, each HAS_ROW an
`add_relationship`, with the partial checked for room before every row. It shares with the
worker what that change left alone — reading, the profile, the TABLE and COLUMN nodes, and
the values polars computes for each cell (RowCells) — so a difference between the two is
in how rows are written as JSON, cut into partials or spliced into the submission.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from typing import Any

import polars as pl

from tabular_worker.options import TabularOptions
from tabular_worker.projection import (
    Submission,
    _ambiguity_spec,
    _chunks,
    _free_key,
    _open_table,
    _Stream,
)
from tabular_worker.rows import DateAmbiguity, RowCells, dirty_column, value_column
from tabular_worker.source import TableSource
from workers_common import ValidTime
from workers_common.wire import canonical_json

__all__ = ["reference_project", "submissions"]

_Row = tuple[str, dict[str, Any], ValidTime | None, DateAmbiguity | None]


def reference_project(
    tables: Iterable[TableSource], *, source: str, fmt: str, options: TabularOptions
) -> Generator[Submission, list[str], None]:
    """What projection.project yields, computed row by row."""
    stream = _Stream(options)
    textual = fmt != "parquet"
    for table in tables:
        profile, effective, preparer = _open_table(stream, table, source=source, fmt=fmt)
        names = [c.name for c in profile.columns]
        extra_key = _free_key("_extra", names)
        index = 0
        for chunk in _chunks(table, names, textual, fmt, options):
            for line, properties, valid_time, ambiguity in _rows(
                preparer.cells(chunk), names, extra_key
            ):
                if stream.full():
                    yield from stream.flush()
                buffer = stream.buffer
                start, end = buffer.add_text(line, len(line.encode("utf-8")))
                buffer.add_text("\n", 1)
                span = (start, end, "row") if end > start else None
                node = buffer.add_node(("ROW",), properties, span=span, valid_time=valid_time)
                buffer.add_edge("HAS_ROW", stream.table, node, {"index": index})
                buffer.rows += 1
                if ambiguity is not None and effective is not None:
                    column = profile.columns[effective]
                    buffer.ambiguities.append(_ambiguity_spec(node, ambiguity, column))
                index += 1
    yield stream.finish()


def _rows(cells: RowCells, names: list[str], extra_key: str) -> Iterator[_Row]:
    """Each row's line, properties (a dict, as the old path built them), valid time and
    ambiguity."""
    frame = cells.frame
    values = frame.select(pl.col(value_column(i)).alias(name) for i, name in enumerate(names))
    dirty = {
        name: frame[dirty_column(i)].to_list()
        for i, name in enumerate(names)
        if dirty_column(i) in frame.columns
    }
    starts, ends = frame["valid_from"].to_list(), frame["valid_to"].to_list()
    for at, (line, row) in enumerate(zip(frame["line"], values.iter_rows(named=True), strict=True)):
        properties = {key: value for key, value in row.items() if value is not None}
        for name, raw in dirty.items():
            if raw[at] is not None:
                properties[name] = raw[at]
        if at in cells.extras:
            properties[extra_key] = cells.extras[at]
        valid_time = None if starts[at] is None else ValidTime(starts[at], ends[at])
        yield line, properties, valid_time, cells.ambiguities.get(at)


def submissions(stream: Generator[Submission, list[str], None]) -> list[bytes]:
    """The result_json bytes of each partial, encoded as the driver encodes them, with
    made-up core ids (quotes and non-ASCII included) sent back for each partial's nodes."""
    out: list[bytes] = []
    ids: list[str] | None = None
    while True:
        try:
            item = next(stream) if ids is None else stream.send(ids)
        except StopIteration:
            return out
        final = item.get("partial") is False
        out.append(canonical_json({**item, "seq": len(out), "partial": not final}))
        if final:
            return out
        ids = [f'n"{len(out)}\\é{i}' for i in range(len(item["nodes"]))]
