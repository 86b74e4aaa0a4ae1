"""RowCells as JSON text: each ROW node, HAS_ROW edge and row span of a run of rows, written
as polars String columns and joined into the EncodedRuns the builder splices in.

The bytes are the ones the builder's per-element path writes for the same rows (tests
compare the two): a ROW is `{"labels":["ROW"],"properties":{…},"spanRefs":[k]}` plus
`"validTime"` when the row has one, with its properties' members in sorted key order and
the absent ones left out; a HAS_ROW is `{"fromRef"|"fromId":…,"properties":{"index":n},
"toRef":r,"type":"HAS_ROW"}`; a span `{"end":e,"kind":"row","start":s}`. Per chunk,
`prepare` writes what does not depend on where the rows land (properties, valid time,
line sizes); `encode` writes a run's elements once its partial fixes the indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from workers_common import EncodedRun
from workers_common.wire import canonical_json_text

from .jsontext import float_json, json_pieces, json_string
from .profile import TableProfile
from .rows import DateAmbiguity, RowCells, dirty_column, value_column

__all__ = ["EncodedRows", "PreparedRows", "RowWriter"]


@dataclass(frozen=True, slots=True)
class EncodedRows:
    """A run of rows as the builder takes them, with the indices they were encoded for."""

    spans: EncodedRun | None
    """None when every row's line is empty."""
    nodes: EncodedRun
    edges: EncodedRun
    first_span: int
    first_node: int
    text: str
    """The rows' lines, each followed by LF."""
    byte_length: int
    """UTF-8 size of `text`."""


@dataclass(frozen=True, slots=True)
class PreparedRows:
    """A chunk's rows with their JSON written, placed in partials by runs.

    Frame columns: `line`; `size` (its UTF-8 bytes, without the LF) and `end` (running
    total of size + 1 over the chunk); `properties` (the object's members, no braces) and
    `valid_time` (`,"validTime":{…}` or empty).
    """

    frame: pl.DataFrame
    ambiguities: dict[int, DateAmbiguity]

    def __len__(self) -> int:
        return self.frame.height

    def fitting(self, start: int, budget: int) -> int:
        """Where a run from `start` ends so that each of its rows begins less than `budget`
        bytes (lines and LFs) after row `start`; at least one row for a positive budget."""
        ends = self.frame["end"]
        before = int(ends[start - 1]) if start else 0
        # Row j begins at ends[j - 1]: it fits while ends[j - 1] < before + budget.
        return min(int(ends.search_sorted(before + budget, side="left")) + 1, len(self))

    def encode(
        self,
        start: int,
        stop: int,
        *,
        first_span: int,
        first_node: int,
        first_index: int,
        text_start: int,
        table: str,
    ) -> EncodedRows:
        """Rows [start, stop) as spans, ROW nodes and HAS_ROW edges: the first of each gets
        the given index (`first_index` is the first row's HAS_ROW index), the first line
        starts at global offset `text_start`; `table` is the edges' `"fromRef":…` or
        `"fromId":…` member."""
        part = self.frame.slice(start, stop - start)
        # A row whose line is empty (a parquet row of one null cell) has nothing to span:
        # it gets no span and no spanRefs; the others' spans are numbered without it.
        spanned = pl.col("size") > 0
        span_ref = first_span + spanned.cast(pl.Int64).cum_sum() - 1
        span_refs = (
            pl.when(spanned)
            .then(pl.concat_str(pl.lit(',"spanRefs":['), span_ref.cast(pl.String), pl.lit("]")))
            .otherwise(pl.lit(""))
        )
        position = pl.int_range(pl.len(), dtype=pl.Int64)
        begin = pl.col("end") - pl.col("size") - 1 + (text_start - _begin(part))
        nodes, edges, text = part.select(
            _joined(
                "nodes",
                '{"labels":["ROW"],"properties":{',
                pl.col("properties"),
                "}",
                span_refs,
                pl.col("valid_time"),
                "}",
            ),
            _joined(
                "edges",
                "{" + table + ',"properties":{"index":',
                position + first_index,
                '},"toRef":',
                position + first_node,
                ',"type":"HAS_ROW"}',
            ),
            pl.col("line").str.join("\n").alias("text"),
        ).row(0)
        with_spans = part.filter(spanned)
        spans = None
        if with_spans.height:
            spans = EncodedRun(
                with_spans.select(
                    _joined(
                        "spans",
                        '{"end":',
                        begin + pl.col("size"),
                        ',"kind":"row","start":',
                        begin,
                        "}",
                    )
                ).item(),
                with_spans.height,
            )
        count = part.height
        return EncodedRows(
            spans=spans,
            nodes=EncodedRun(nodes, count),
            edges=EncodedRun(edges, count),
            first_span=first_span,
            first_node=first_node,
            text=text + "\n",
            byte_length=int(part["end"][-1]) - _begin(part),
        )


def _begin(part: pl.DataFrame) -> int:
    """Where the first row of `part` begins, in its chunk's running total."""
    return int(part["end"][0]) - int(part["size"][0]) - 1


def _joined(name: str, *pieces: str | pl.Expr) -> pl.Expr:
    """One element per row, concatenated from literal text and integer or text columns,
    then all rows joined by commas, as UTF-8 bytes."""
    parts = [pl.lit(piece) if isinstance(piece, str) else piece.cast(pl.String) for piece in pieces]
    return pl.concat_str(parts).str.join(",").cast(pl.Binary).alias(name)


@dataclass(frozen=True, slots=True)
class _Member:
    """One property of the ROW nodes of a chunk: its key, its value as pieces of JSON text
    (concatenated; null where a row lacks the property), and whether some row does."""

    key: str
    value: list[pl.Expr]
    sometimes_absent: bool


class RowWriter:
    """Writes a table's RowCells as PreparedRows (the JSON that is the same wherever the
    rows land)."""

    def __init__(self, profile: TableProfile, extra_key: str) -> None:
        self._columns = profile.columns
        self._extra_key = extra_key

    def prepare(self, cells: RowCells) -> PreparedRows:
        frame = cells.frame.with_columns(self._float_texts(cells.frame))
        members = self._members(frame, cells.plain)
        if cells.extras:
            frame = frame.with_columns(_extra_values(cells.extras, frame.height))
            members.append(_Member(self._extra_key, [pl.col("extra")], sometimes_absent=True))
        size = pl.col("line").str.len_bytes().cast(pl.Int64)
        prepared = frame.select(
            "line",
            size.alias("size"),
            (size + 1).cum_sum().alias("end"),
            _properties(sorted(members, key=lambda m: m.key)).alias("properties"),
            _valid_time().alias("valid_time"),
        )
        return PreparedRows(prepared, cells.ambiguities)

    def _float_texts(self, frame: pl.DataFrame) -> list[pl.Series]:
        """Float columns as JSON numbers, `f{i}`: written by polars, the rare odd value by
        Python (jsontext.float_json)."""
        return [
            float_json(frame[value_column(c.index)], f"properties.{c.name}").alias(f"f{c.index}")
            for c in self._columns
            if frame.schema[value_column(c.index)] == pl.Float64
        ]

    def _members(self, frame: pl.DataFrame, plain: frozenset[str]) -> list[_Member]:
        """Each column's property; the columns in `plain` need no escaping."""
        members = []
        for column in self._columns:
            name = value_column(column.index)
            dtype = frame.schema[name]
            if dtype == pl.Null:
                continue  # no row has it
            value = (
                [pl.col(f"f{column.index}")]
                if dtype == pl.Float64
                else json_pieces(pl.col(name), dtype, name in plain)
            )
            dirty = dirty_column(column.index)
            if dirty in frame.schema:
                typed = pl.concat_str(value)
                value = [pl.coalesce(json_string(pl.col(dirty), dirty in plain), typed)]
            absent = frame[name].null_count() > 0
            members.append(_Member(column.name, value, absent))
        return members


def _properties(members: list[_Member]) -> pl.Expr:
    """The properties object's members, in key order, as one concatenation: a property
    every row has costs no intermediate column, one that some rows lack is a piece with
    its comma that is empty for them. When the first property is such a one, every
    property gets a comma and the first character is cut."""
    cut = bool(members) and members[0].sometimes_absent
    pieces: list[pl.Expr] = []
    for at, member in enumerate(members):
        head = pl.lit(("," if at or cut else "") + canonical_json_text(member.key) + ":")
        if member.sometimes_absent:
            pieces.append(pl.concat_str([head, *member.value]).fill_null(""))
        else:
            pieces += [head, *member.value]
    properties = pl.concat_str(pieces) if pieces else pl.lit("", pl.String)
    return properties.str.slice(1) if cut else properties


def _extra_values(extras: dict[int, list[str]], rows: int) -> pl.Series:
    """The `_extra` value of the ragged rows as JSON, null elsewhere."""
    values = [canonical_json_text(fields) for fields in extras.values()]
    return pl.Series("extra", [None] * rows, dtype=pl.String).scatter(list(extras), values)


def _valid_time() -> pl.Expr:
    """The node's `,"validTime":{…}` member (after spanRefs, in key order), or nothing."""
    start, end = pl.col("valid_from"), pl.col("valid_to")
    until = pl.concat_str([pl.lit(',"validTo":'), end.cast(pl.String)])
    interval = pl.concat_str(
        [
            pl.lit(',"validTime":{"validFrom":'),
            start.cast(pl.String),
            pl.when(end.is_not_null()).then(until).otherwise(pl.lit("")),
            pl.lit("}"),
        ]
    )
    return pl.when(start.is_not_null()).then(interval).otherwise(pl.lit(""))
