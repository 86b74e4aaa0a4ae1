"""The shortcuts behind RowCells and the blank-row filter give what their plain definitions
give: escaping skipped for columns with nothing to escape, NFC skipped for normalized
chunks, dirty cells looked for only where a value is missing, spare columns trimmed, and
blank rows found by one regex per row. (The reference path of test_fast_path.py shares
RowCells, so these are checked here against the definitions.)"""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tabular_worker.celltypes import ColumnType
from tabular_worker.profile import ColumnProfile, TableProfile, kept_rows
from tabular_worker.rows import RowPreparer, dirty_column, escape, nfc_lines, value_column

_CELLS = st.none() | st.lists(
    st.sampled_from(["a", "7", " ", "\t", "\n", "\r\n", "\\", '"', "\x1c", "\x0c", "\u00a0"])
    | st.sampled_from(["\u2028", "\u200b", "e\u0301", "\u1100\u1161", "Å", "😀", "-", "1.5"]),
    max_size=5,
).map("".join)


def _frames(width: int) -> st.SearchStrategy[pl.DataFrame]:
    rows = st.lists(st.lists(_CELLS, min_size=width, max_size=width), min_size=1, max_size=6)
    return rows.map(
        lambda table: pl.DataFrame(
            [pl.Series(f"c{i}", [row[i] for row in table], dtype=pl.String) for i in range(width)]
        )
    )


@settings(max_examples=200, deadline=None)
@given(_frames(4))
def test_blank_rows_are_rows_of_empty_null_or_whitespace_cells(frame: pl.DataFrame) -> None:
    blank = pl.all_horizontal(
        pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "") for c in frame.columns
    )
    assert kept_rows(frame.lazy(), True).collect().equals(frame.filter(~blank))


@settings(max_examples=200, deadline=None)
@given(st.lists(_CELLS.map(lambda cell: cell or ""), min_size=1, max_size=6))
def test_nfc_lines_is_polars_nfc(lines: list[str]) -> None:
    series = pl.Series(lines, dtype=pl.String)
    assert nfc_lines(series).to_list() == series.str.normalize("NFC").to_list()


def _profile(kinds: list[ColumnType], spare: int) -> TableProfile:
    columns = [ColumnProfile(i, f"h{i}", kind, True, 0, 0, 1.0) for i, kind in enumerate(kinds)]
    return TableProfile(columns, 0, 0, 0, [f"c{len(kinds) + i}" for i in range(spare)])


@settings(max_examples=200, deadline=None)
@given(
    _frames(5),
    st.lists(
        st.sampled_from(
            [ColumnType.STRING, ColumnType.INTEGER, ColumnType.FLOAT, ColumnType.BOOLEAN]
        ),
        min_size=3,
        max_size=3,
    ),
)
def test_cells_lines_and_dirty_text_are_their_definitions(
    frame: pl.DataFrame, kinds: list[ColumnType]
) -> None:
    """Three typed columns and two spare ones: the line is every field escaped (the spare
    fields after the last column, trailing empty ones dropped), in NFC; a dirty cell is a
    non-empty one without a typed value."""
    profile = _profile(kinds, 2)
    preparer = RowPreparer(profile, frame.schema, None, "auto", clarify=False)
    cells = preparer.cells(frame)
    main = pl.concat_str([escape(pl.col(f"c{i}")) for i in range(3)], separator="\t")
    extra = pl.concat_str([escape(pl.col(c)) for c in profile.spare], separator="\t")
    extra = extra.str.strip_chars_end("\t")
    line = pl.when(extra != "").then(pl.concat_str([main, extra], separator="\t")).otherwise(main)
    assert (
        cells.frame["line"].to_list()
        == frame.select(line.str.normalize("NFC")).to_series().to_list()
    )
    for i, kind in enumerate(kinds):
        if kind is ColumnType.STRING:
            assert dirty_column(i) not in cells.frame.columns
            continue
        raw = frame[f"c{i}"]
        misfit = (raw.str.strip_chars() != "") & cells.frame[value_column(i)].is_null()
        expected = [cell if bad else None for cell, bad in zip(raw, misfit, strict=True)]
        got = (
            cells.frame[dirty_column(i)].to_list()
            if dirty_column(i) in cells.frame.columns
            else [None] * frame.height
        )
        assert got == expected
