"""Unit tests of the tabular worker's parts: rendering, names, dates, sniffing, guards;
and a property test over arbitrary small tables."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabular_worker.blocks import last_boundary, record_runs
from tabular_worker.dates import _DMY, _ISO, VoteCarry, effective_column, with_readings
from tabular_worker.profile import column_names
from tabular_worker.rows import escape
from tabular_worker.sniff import (
    _LineGuard,
    _preamble_records,
    _records,
    _sniff_delimiter,
    _writer_quoted,
)
from workers_common import TooLarge
from workers_common.conformance import check_submissions, run_handler


@pytest.mark.parametrize(
    ("cell", "rendered"),
    [
        ("plain", "plain"),
        ("a\tb", "a\\tb"),
        ("C:\\x", "C:\\\\x"),
        ("one\r\ntwo\rthree\nfour", "one\\ntwo\\nthree\\nfour"),
        ("\\n literally", "\\\\n literally"),
        (None, ""),
    ],
)
def test_escape(cell: str | None, rendered: str) -> None:
    assert pl.select(escape(pl.lit(cell, pl.String))).item() == rendered


def test_column_names_are_unique_and_never_empty() -> None:
    assert column_names(["a", " ", "a", "a_2", "Cafe\u0301"]) == [
        "a",
        "column_2",
        "a_2",
        "a_2_2",
        "Caf\u00e9",
    ]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["id", "Effective Date", "date"], 1),
        (["date", "valid_from"], 1),
        (["created date", "due date", "trade date"], 2),
        (["effectiveDate", "x"], 0),
        (["end date", "birth date"], None),
        (["day", "asOf"], 1),
        (["when"], None),
    ],
)
def test_effective_date_heuristic(names: list[str], expected: int | None) -> None:
    assert effective_column(names, [True] * len(names)) == expected


def test_effective_date_only_among_date_columns() -> None:
    assert effective_column(["date", "effective"], [False, True]) == 1
    assert effective_column(["date"], [False]) is None


def test_votes_count_only_cells_before() -> None:
    """The first ambiguous cell sees no votes; a cell never votes for itself; the carry
    goes on into the next chunk."""
    carry = VoteCarry()
    chunk = pl.DataFrame({"c": ["03/04/2026", "25/04/2026", "03/04/2026"]})
    out = carry.applied(chunk, "c", "auto")
    assert out["date"].cast(pl.String).to_list() == ["2026-03-04", "2026-04-25", "2026-04-03"]
    assert out["confidence"].to_list() == [0.5, None, pytest.approx(2 / 3)]
    assert (carry.day, carry.month) == (1, 0)
    again = carry.applied(pl.DataFrame({"c": ["04/03/2026"]}), "c", "auto")
    assert again["date"].cast(pl.String).to_list() == ["2026-03-04"]


def _number(width: int) -> st.SearchStrategy[str]:
    # Digits of other scripts match the patterns' \d too, and parse as nothing.
    others = st.sampled_from(["\u0663", "\uff10", "\U0001d7d9"])
    digits = st.sampled_from("0123456789") | others
    return st.lists(digits, min_size=1, max_size=width).map("".join)


_DATE_LIKE = st.tuples(
    st.sampled_from(["iso", "dmy"]),
    _number(4),
    _number(2),
    _number(2),
    st.sampled_from("/.-"),
    st.sampled_from("/.-x"),
).map(
    lambda p: (
        f"{p[1]}{p[4]}{p[2]}{p[5]}{p[3]}" if p[0] == "iso" else f"{p[2]}{p[4]}{p[3]}{p[5]}{p[1]}"
    )
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_DATE_LIKE | st.sampled_from(["0000-01-01", "29/02/1900", "29/02/2000"]), max_size=20)
)
def test_readings_are_the_patterns_numbers_as_dates(cells: list[str]) -> None:
    """Each reading is the cell's numbers, by its pattern's groups, zero-filled and parsed
    as an ISO date (null when no such day): the definition with_readings shortcuts."""

    def ymd(year: pl.Expr, month: pl.Expr, day: pl.Expr) -> pl.Expr:
        text = pl.concat_str([year, month.str.zfill(2), day.str.zfill(2)], separator="-")
        return text.str.to_date("%Y-%m-%d", strict=False)

    iso = pl.col("c").str.extract_groups(_ISO)
    dmy = pl.col("c").str.extract_groups(_DMY)
    first, second, year = (dmy.struct.field(str(i)) for i in (1, 2, 3))
    frame = pl.DataFrame({"c": cells}, schema={"c": pl.String})
    expected = frame.select(
        ymd(*(iso.struct.field(str(i)) for i in (1, 2, 3))).alias("r:iso"),
        ymd(year, second, first).alias("r:df"),
        ymd(year, first, second).alias("r:mf"),
    )
    got = with_readings(frame.lazy(), pl.col("c"), "r:").select("r:iso", "r:df", "r:mf")
    assert got.collect().equals(expected)


@pytest.mark.parametrize(
    ("sample", "delimiter"),
    [
        ("a,b,c\n1,2,3\n", ","),
        ("a;b;c\n1;2,5;3\n", ";"),
        ("a\tb\n1\t2\n", "\t"),
        ("a|b\n1|2\n", "|"),
        ("single\ncolumn\n", ","),
        ('"x;y",z\n"1;2",3\n', ","),
    ],
)
def test_sniff_delimiter(sample: str, delimiter: str) -> None:
    assert _sniff_delimiter(sample) == delimiter


@pytest.mark.parametrize(
    ("sample", "delimiter", "complete", "quoted"),
    [
        ("a\tb\n1\t2\n", "\t", True, True),  # no quote: nothing says otherwise
        ('a\tb\n1\t"plain"\n', "\t", True, True),  # neither way: RFC 4180
        ('a\tb\n1\t"x\ty"\n', "\t", True, True),  # a quoted tab
        ('a,b\n1,"x\ny"\n', ",", True, True),  # a quoted line break
        ('a,b\n1,"say ""hi"""\n', ",", True, True),  # doubled quotes
        ('a,b\n1,""\n', ",", True, True),  # an empty quoted field
        ('a\tb\n1\tsays "hi"\n', "\t", True, False),  # quotes inside a field
        ('a\tb\n1\t"AGENT" K\n', "\t", True, False),  # closed by a space
        ('a,b\n1,12" screen\n', ",", True, False),
        ('a\tb\n1\t"open\n', "\t", True, False),  # never closed in the whole file
        ('a\tb\n1\t"open\n', "\t", False, True),  # maybe closed past the head
        # More quoted fields than literal quotes: the writer quotes, one slip aside.
        ('a,b\n"x,1",2\n"y,2",3\n4,5" pipe\n', ",", True, True),
        ('a\tb\n"x\t1"\t2\n1\tsay "a" and "b"\n', "\t", True, False),
    ],
)
def test_quoting_is_read_from_the_evidence(
    sample: str, delimiter: str, complete: bool, quoted: bool
) -> None:
    assert _writer_quoted(sample, delimiter, complete=complete) is quoted


_TABLE = "a,b,c\n1,2,3\n4,5,6\n7,8,9\n"


@pytest.mark.parametrize(
    ("sample", "skip"),
    [
        (_TABLE, 0),
        ("Report of May\n\n" + _TABLE, 2),  # a title and a blank line
        ("k: v\nk2,v2\n" + _TABLE.replace(",", ",,"), 2),  # at most half as wide
        ("k: v\nk2,v2\n" + _TABLE, 0),  # wider than half of three
        ("a,b\n1,2,3\n4,5,6\n7,8,9\n", 0),  # two of three: a narrow header, not a preamble
        ("title\n" + "a,b,c\n1,2\n3\n4,5\n6\n", 0),  # ragged: no table to start
        ("title\nx,y\n1,2\n3,4\n", 0),  # two columns: a title may be their header
        ("# made by x\n\n# at 12:00\nx,y\n1,2\n3,4\n", 3),  # but `#` comments are none
        ("".join(f"line {i}\n" for i in range(21)) + _TABLE, 0),  # past 20 records
    ],
)
def test_a_preamble_is_found_by_its_narrow_records(sample: str, skip: int) -> None:
    assert _preamble_records(_records(sample, ","), sample) == skip


def test_unquoted_runs_cut_at_every_lf(tmp_path: Path) -> None:
    """Without quoting, an odd quote opens nothing: each run ends at its block's last LF."""
    path = tmp_path / "runs.tsv"
    path.write_bytes(b'a\t"b\n1\t2"\n3\t4\n')
    runs = list(record_runs(path, block_bytes=8, max_record_bytes=64, quoted=False))
    assert runs == [b'a\t"b\n', b'1\t2"\n3\t4\n']
    quoted = list(record_runs(path, block_bytes=8, max_record_bytes=64))
    assert quoted == [b'a\t"b\n1\t2"\n3\t4\n']  # one field spans the first LF


def test_line_guard_counts_across_chunks() -> None:
    guard = _LineGuard(10)
    guard.feed(b"12345")
    guard.feed(b"678\n1234567890\n")
    with pytest.raises(TooLarge, match="max_line_bytes"):
        guard.feed(b"12345678901")


@pytest.mark.parametrize(
    ("data", "cut"),
    [
        (b"a,b\n1,2\n", 8),
        (b"a,b\n1,2", 4),
        (b"a,b", -1),
        (b'a,"x\ny"\n1,', 8),
        (b'a,"x\ny', -1),
        (b'1,"x\n"', -1),
        (b'a,"say ""hi""\n"\nb', 16),
        (b'a,"x""\n""y"\n', 12),
        (b'a,""\nb', 5),
        (b'a\r\n"x\r\n', 3),
        (b"\n", 1),
        (b"", -1),
    ],
)
def test_last_boundary_is_the_last_lf_outside_quotes(data: bytes, cut: int) -> None:
    assert last_boundary(data) == cut


def _runs(tmp_path: Path, data: bytes, block: int, limit: int = 1 << 20) -> list[bytes]:
    path = tmp_path / "runs.csv"
    path.write_bytes(data)
    return list(record_runs(path, block_bytes=block, max_record_bytes=limit))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from([b"a", b",", b'"', b'""', b"\n", b"\r\n", b"\xc3\xa9"]), max_size=40),
    st.integers(1, 9),
)
def test_record_runs_cut_only_between_records(
    tmp_path: Path, parts: list[bytes], block: int
) -> None:
    """Runs rebuild the file, and each but the last ends with an LF outside quotes
    (counted from the file's start): cuts only between records, whatever the block size."""
    data = b"".join(parts)
    runs = _runs(tmp_path, data, block)
    assert b"".join(runs) == data
    end = 0
    for run in runs[:-1]:
        end += len(run)
        assert run.endswith(b"\n")
        assert data[:end].count(b'"') % 2 == 0


def test_record_runs_drop_the_bom_once(tmp_path: Path) -> None:
    assert b"".join(_runs(tmp_path, b"\xef\xbb\xbfa,b\n1,2\n", 2)) == b"a,b\n1,2\n"


def test_a_long_quoted_record_is_too_large_before_it_is_buffered(tmp_path: Path) -> None:
    """Short physical lines, one quoted field: the line guard cannot see it, the blocks do."""
    data = b'a,b\n1,"' + b"short line\n" * 1000 + b'"\n'
    assert len(_runs(tmp_path, data, 64, limit=1 << 20)) == 2
    with pytest.raises(TooLarge, match="max_line_bytes"):
        _runs(tmp_path, data, 64, limit=4096)


_cells = st.text(
    st.characters(exclude_categories=["Cs", "Cc"]) | st.sampled_from(["\t", "\n", "\\", '"']),
    max_size=8,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(1, 4).flatmap(
        lambda width: st.lists(st.lists(_cells, min_size=width, max_size=width), max_size=8)
    ),
    st.integers(1, 4),
    st.integers(1, 64),
    st.sampled_from(["\n", "\r\n"]),
)
def test_any_table_projects_with_a_line_per_row(
    tmp_path: Path, table: list[list[str]], chunk_rows: int, block_bytes: int, eol: str
) -> None:
    """Whatever the cells, a row is one line, spans cut it exactly, and string cells come
    back as the source wrote them (csv module in, our projection out)."""
    width = len(table[0]) if table else 1
    header = [f"h{i}" for i in range(width)]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=eol).writerows([header, *table])
    path = tmp_path / "t.csv"
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    options = {"chunk_rows": chunk_rows, "delimiter": ","}
    subs = run_handler("tabular_worker:handle", path, format="csv", options=options)
    check_submissions(subs)
    # Records cut across tiny blocks: the very same submissions as from one block.
    blocks = {**options, "block_bytes": block_bytes}
    assert run_handler("tabular_worker:handle", path, format="csv", options=blocks) == subs
    bodies = [json.loads(raw) for raw in subs]
    text = "".join(b["canonicalText"] for b in bodies).encode()
    rows = [n for b in bodies for n in b["nodes"] if n["labels"] == ["ROW"]]
    spans = [s for b in bodies for s in b["spans"] if s["kind"] == "row"]
    kept = [r for r in table if any(c.strip() for c in r)]
    assert len(rows) == len(spans) == len(kept)
    for span in spans:
        assert b"\n" not in text[span["start"] : span["end"]]
        assert text[span["end"] : span["end"] + 1] == b"\n"
    columns = [n for b in bodies for n in b["nodes"] if n["labels"] == ["COLUMN"]]
    strings = {c["properties"]["name"] for c in columns if c["properties"]["type"] == "string"}
    for row, source in zip(rows, kept, strict=True):
        for name, cell in zip(header, source, strict=True):
            if name in strings and cell.strip():
                assert row["properties"][name] == cell


def _rows_of(subs: list[bytes]) -> list[dict[str, Any]]:
    return [n for raw in subs for n in json.loads(raw)["nodes"] if n["labels"] == ["ROW"]]


def test_a_float_past_float64_range_is_a_dirty_cell(tmp_path: Path) -> None:
    """1e400 fits the float pattern but not float64 (it would be infinity, which JSON
    cannot carry): kept as its text, counted dirty, the job still succeeds."""
    path = tmp_path / "big.csv"
    path.write_text("a,b\n1.5,x\n1e400,y\n-1e400,z\n2.5,w\n")
    subs = run_handler("tabular_worker:handle", path, format="csv")
    check_submissions(subs)
    assert [r["properties"]["a"] for r in _rows_of(subs)] == [1.5, "1e400", "-1e400", 2.5]
    assert json.loads(subs[-1])["stats"]["dirty_counts"] == {"float": 2}


def test_a_parquet_row_with_an_empty_line_has_no_span(tmp_path: Path) -> None:
    """A one-column parquet row whose cell is null renders as an empty line: the ROW is
    kept (with no properties) but has nothing to span; the other rows' spans still
    point at their own lines."""
    path = tmp_path / "one.parquet"
    pl.DataFrame({"a": [1, None, 3]}).write_parquet(path)
    subs = run_handler("tabular_worker:handle", path, format="parquet")
    check_submissions(subs)
    body = json.loads(subs[-1])
    rows = _rows_of(subs)
    assert [r["properties"] for r in rows] == [{"a": 1}, {}, {"a": 3}]
    assert "spanRefs" not in rows[1]
    text = body["canonicalText"].encode()
    spanned = [body["spans"][r["spanRefs"][0]] for r in (rows[0], rows[2])]
    assert [text[s["start"] : s["end"]] for s in spanned] == [b"1", b"3"]
