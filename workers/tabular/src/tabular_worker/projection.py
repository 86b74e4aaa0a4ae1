"""The tabular projection, streamed: TABLE, COLUMN and ROW nodes over partial submissions.

Per table: a profile pass (profile.py) fixes the column types and counts; then the first
partial that table appears in gets its TABLE node (span: the header line), a COLUMN node
per column (span: its name in the header line) with HAS_COLUMN edges, and rows follow as
ROW nodes (span: the row's line) with HAS_ROW edges from the TABLE. A partial closes at
`chunk_rows` rows or `max_partial_bytes` of text (or before the core's ambiguity cap), and
the generator receives the node ids the core assigned: rows in later partials point at
their TABLE by that id. The last partial is sent with `partial: False` and carries the
job's stats: `rows`, `dirty_counts` per type, and what reading counted on the way.

Rows go in by runs: each chunk (rows.py, rowjson.py) is cut where a partial closes, which
is computed from the chunk's running byte sizes and ambiguity positions rather than row by
row, with the same outcome: a partial closes before the first row that finds it full.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from workers_common import Candidate, InvalidInput

from .celltypes import ColumnType
from .dates import DAY_MICROS, effective_column
from .options import TabularOptions
from .partial import AmbiguitySpec, Endpoint, PartialBuffer
from .profile import ColumnProfile, TableProfile, kept_rows, profile_table
from .rowjson import PreparedRows, RowWriter
from .rows import DateAmbiguity, RowPreparer, escape
from .source import TableSource, polars_reason

__all__ = ["Submission", "project"]

Submission = dict[str, Any]

# The core refuses a submission with more than 10,000 ambiguities; stay well clear.
_MAX_AMBIGUITIES = 5_000


@dataclass(slots=True)
class _Totals:
    rows: int = 0
    tables: int = 0
    blank_rows: int = 0
    ragged_rows: int = 0
    replaced_sequences: int = 0
    dirty: Counter[str] = field(default_factory=Counter)

    def stats(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "tables": self.tables,
            "dirty_counts": {kind: n for kind, n in sorted(self.dirty.items()) if n},
            "blank_rows": self.blank_rows,
            "ragged_rows": self.ragged_rows,
            "replaced_sequences": self.replaced_sequences,
        }


class _Stream:
    """The partial being filled and how to close it; holds no rows beyond one partial."""

    def __init__(self, options: TabularOptions) -> None:
        self.options = options
        self.buffer = PartialBuffer(base_offset=0)
        self.table: Endpoint = -1
        self.totals = _Totals()

    def full(self) -> bool:
        buffer = self.buffer
        return (
            buffer.rows >= self.options.chunk_rows
            or buffer.byte_length >= self.options.max_partial_bytes
            or len(buffer.ambiguities) >= _MAX_AMBIGUITIES
        )

    def flush(self) -> Generator[Submission, Sequence[str], None]:
        """Sends the buffer as a partial; nodes still needed later become core ids."""
        sent = self.buffer
        ids = yield sent.build(clarify=self.options.clarify, stats=None, final=False)
        if isinstance(self.table, int):
            if len(ids) != sent.node_count:
                raise InvalidInput(
                    f"the core returned {len(ids)} node ids for {sent.node_count} nodes"
                )
            self.table = ids[self.table]
        self.buffer = PartialBuffer(base_offset=sent.end_offset)

    def room(self, rows: PreparedRows, start: int, recorded: list[int]) -> int:
        """Where the run of `rows` from `start` stops: before the first row that would find
        the partial full (chunk_rows, max_partial_bytes, the ambiguity cap), given the
        rows whose ambiguities are `recorded` (ascending); the partial must not be full."""
        buffer = self.buffer
        stop = min(len(rows), start + self.options.chunk_rows - buffer.rows)
        stop = min(stop, rows.fitting(start, self.options.max_partial_bytes - buffer.byte_length))
        left = _MAX_AMBIGUITIES - len(buffer.ambiguities)
        at = bisect_left(recorded, start) + left - 1  # the one that fills the cap
        if at < len(recorded):
            stop = min(stop, recorded[at] + 1)
        return stop

    def finish(self) -> Submission:
        return self.buffer.build(
            clarify=self.options.clarify, stats=self.totals.stats(), final=True
        )


def project(
    tables: Iterable[TableSource], *, source: str, fmt: str, options: TabularOptions
) -> Generator[Submission, Sequence[str], None]:
    """Streams the submissions of a job's tables (see the module docstring)."""
    stream = _Stream(options)
    textual = fmt != "parquet"
    for table in tables:
        profile, effective, preparer = _open_table(stream, table, source=source, fmt=fmt)
        names = [c.name for c in profile.columns]
        writer = RowWriter(profile, extra_key=_free_key("_extra", names))
        dates = None if effective is None else profile.columns[effective]
        index = 0
        for chunk in _chunks(table, names, textual, fmt, options):
            rows = writer.prepare(preparer.cells(chunk))
            recorded = sorted(rows.ambiguities)
            at = 0
            while at < len(rows):
                if stream.full():
                    yield from stream.flush()
                stop = stream.room(rows, at, recorded)
                _add_rows(stream, rows, at, stop, index, recorded, dates)
                index += stop - at
                at = stop
    yield stream.finish()


def _open_table(
    stream: _Stream, table: TableSource, *, source: str, fmt: str
) -> tuple[TableProfile, int | None, RowPreparer]:
    """Starts `table` in the stream: its place in the text and the totals, its profile,
    its TABLE and COLUMN nodes; returns the profile, the effective-date column's index
    and the preparer of its rows' cells."""
    if stream.totals.tables:
        stream.buffer.add_text("\n", 1)  # a blank line between tables
    stream.totals.tables += 1
    for key, value in table.facts.items():
        if key == "replaced_sequences" and isinstance(value, int):
            stream.totals.replaced_sequences += value
    profile = _profile(table, fmt != "parquet", fmt)
    effective = _start_table(stream, table, profile, source=source, fmt=fmt)
    preparer = RowPreparer(
        profile,
        table.frame.collect_schema() if profile.columns else pl.Schema(),
        effective,
        stream.options.date_order,
        clarify=stream.options.clarify,
    )
    return profile, effective, preparer


def _profile(table: TableSource, textual: bool, fmt: str) -> TableProfile:
    try:
        return profile_table(table, textual)
    except pl.exceptions.PolarsError as err:
        raise InvalidInput(polars_reason(fmt, err)) from err


def _chunks(
    table: TableSource, names: list[str], textual: bool, fmt: str, options: TabularOptions
) -> Iterator[pl.DataFrame]:
    if not names:
        return
    try:
        for part in table.parts():
            kept = kept_rows(part, textual)
            batches: Iterable[pl.DataFrame] = (
                kept.collect_batches(chunk_size=options.chunk_rows)
                if table.blocks is None
                # One block, held in memory anyway: sliced without copying.
                else kept.collect().iter_slices(options.chunk_rows)
            )
            for batch in batches:
                if batch.height:
                    yield batch
    except pl.exceptions.PolarsError as err:
        raise InvalidInput(polars_reason(fmt, err)) from err


def _free_key(base: str, taken: list[str]) -> str:
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}_{n}"
    return key


def _rendered(name: str) -> str:
    return str(pl.select(escape(pl.lit(name, pl.String)).str.normalize("NFC")).item())


def _start_table(
    stream: _Stream, table: TableSource, profile: TableProfile, *, source: str, fmt: str
) -> int | None:
    """Adds the TABLE and COLUMN nodes; returns the effective-date column's index."""
    columns = profile.columns
    temporal = [c.type in (ColumnType.DATE, ColumnType.DATETIME) for c in columns]
    effective = effective_column([c.name for c in columns], temporal)
    buffer = stream.buffer
    header_spans: list[tuple[int, int]] = []
    table_span = None
    if columns:
        rendered = [_rendered(c.name) for c in columns]
        start = buffer.end_offset
        for position, text in enumerate(rendered):
            size = len(text.encode("utf-8"))
            begin, _ = buffer.add_text(text, size)
            header_spans.append((begin, begin + size))
            buffer.add_text("\t" if position < len(rendered) - 1 else "\n", 1)
        table_span = (start, buffer.end_offset - 1, "table_header")
    properties: dict[str, Any] = {
        "name": table.sheet if table.sheet is not None else source,
        "source": source,
        "format": fmt,
        "columns": [c.name for c in columns],
        "column_count": len(columns),
        "row_count": profile.rows,
        "blank_rows": profile.blank_rows,
        "ragged_rows": profile.ragged_rows,
        **table.facts,
    }
    if table.sheet is not None:
        properties["sheet"] = table.sheet
    if effective is not None:
        properties["effective_date_column"] = columns[effective].name
    stream.table = buffer.add_node(("TABLE",), properties, span=table_span)
    for column, (begin, end) in zip(columns, header_spans, strict=True):
        node = buffer.add_node(
            ("COLUMN",),
            _column_properties(column, effective),
            span=(begin, end, "column_header") if end > begin else None,
        )
        buffer.add_edge("HAS_COLUMN", stream.table, node, {"index": column.index})
    totals = stream.totals
    totals.rows += profile.rows
    totals.blank_rows += profile.blank_rows
    totals.ragged_rows += profile.ragged_rows
    for column in columns:
        totals.dirty[column.type.value] += column.dirty_count
    return effective


def _column_properties(column: ColumnProfile, effective: int | None) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "name": column.name,
        "index": column.index,
        "type": column.type.value,
        "null_count": column.null_count,
        "dirty_count": column.dirty_count,
        "inferred": column.inferred,
    }
    if column.inferred and column.type is not ColumnType.STRING:
        properties["type_share"] = column.type_share
    if column.decimal_comma:
        properties["decimal_separator"] = ","
    if column.type is ColumnType.DATE and column.inferred:
        day, month = column.day_first_votes, column.month_first_votes
        properties.update(
            day_first_votes=day,
            month_first_votes=month,
            ambiguous_cells=column.ambiguous_cells,
            date_order="day-first"
            if day > month
            else "month-first"
            if month > day
            else "undecided",
        )
    if column.index == effective:
        properties["effective_date"] = True
    return properties


def _add_rows(
    stream: _Stream,
    rows: PreparedRows,
    start: int,
    stop: int,
    index: int,
    recorded: list[int],
    dates: ColumnProfile | None,
) -> None:
    """Rows [start, stop) of a chunk into the partial, `index` the first one's position in
    its table, with the ambiguities of those rows (`recorded`: their positions) on the
    effective-date column `dates`."""
    buffer = stream.buffer
    first = buffer.add_rows(rows, start, stop, table=stream.table, first_index=index)
    if dates is None:
        return
    for at in recorded[bisect_left(recorded, start) : bisect_left(recorded, stop)]:
        spec = _ambiguity_spec(first + at - start, rows.ambiguities[at], dates)
        buffer.ambiguities.append(spec)


def _ambiguity_spec(node: int, ambiguity: DateAmbiguity, column: ColumnProfile) -> AmbiguitySpec:
    applied = "day-first" if ambiguity.day_first else "month-first"
    other = "month-first" if ambiguity.day_first else "day-first"
    readings = (
        (ambiguity.applied_day, ambiguity.applied_iso, applied),
        (ambiguity.other_day, ambiguity.other_iso, other),
    )
    candidates = tuple(
        Candidate(f"{iso} ({order})", day * DAY_MICROS, (day + 1) * DAY_MICROS)
        for day, iso, order in readings
    )
    return AmbiguitySpec(
        node=node,
        candidates=candidates,
        detector_confidence=column.type_share,
        applied_confidence=ambiguity.confidence,
    )
