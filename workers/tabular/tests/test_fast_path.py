"""The vectorized row path writes the very bytes of the per-row path it replaced
(tabular_reference.py): on the corpus, on generated csv and parquet tables, and where
partials close on rows, bytes or the ambiguity cap."""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import tempfile
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabular_worker.options import TabularOptions
from tabular_worker.projection import Submission, project
from tabular_worker.source import open_tables
from workers_common import BuilderError, WorkerFailure

from tabular_corpus import CORPUS, Fixture, day_first_csv, many_rows_csv
from tabular_reference import reference_project, submissions

Projector = Callable[..., Generator[Submission, list[str], None]]


def _run(projector: Projector, path: Path, fmt: str, options: dict[str, Any]) -> list[bytes]:
    parsed = TabularOptions.from_mapping(options)
    with tempfile.TemporaryDirectory() as work:
        tables = open_tables(fmt, path, parsed, Path(work))
        return submissions(projector(tables, source=path.name, fmt=fmt, options=parsed))


def _outcome(projector: Projector, path: Path, fmt: str, options: dict[str, Any]) -> object:
    """The submissions, or the error both paths must raise alike: a builder refusal (by
    type: the paths would meet a bad value in a different order), or the reading's
    failure (text that looks binary)."""
    try:
        return _run(projector, path, fmt, options)
    except BuilderError as err:
        return type(err)
    except WorkerFailure as err:
        return str(err)


def assert_same_bytes(path: Path, fmt: str, options: dict[str, Any]) -> None:
    fast = _outcome(project, path, fmt, options)
    reference = _outcome(reference_project, path, fmt, options)
    assert fast == reference


def _write(tmp_path: Path, fixture: Fixture) -> Path:
    path = tmp_path / fixture.filename
    path.write_bytes(fixture.data)
    return path


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize("chunk_rows", [1, 2, 10_000])
def test_corpus_bytes_match_the_per_row_path(tmp_path: Path, name: str, chunk_rows: int) -> None:
    fixture = CORPUS[name]
    options = {**fixture.options, "chunk_rows": chunk_rows}
    assert_same_bytes(_write(tmp_path, fixture), fixture.format, options)


def test_partials_cut_on_bytes_match(tmp_path: Path) -> None:
    """max_partial_bytes closes partials in the middle of chunks, unevenly."""
    path = _write(tmp_path, Fixture("many.csv", many_rows_csv(3_000)))
    assert_same_bytes(path, "csv", {"max_partial_bytes": 1024, "chunk_rows": 7_000})


@pytest.mark.timeout(300)
def test_partials_cut_on_the_ambiguity_cap_match(tmp_path: Path) -> None:
    """Over 5,000 recorded ambiguities a partial closes early: on that row in both paths."""
    path = _write(tmp_path, Fixture("amb.csv", day_first_csv(12_000)))
    assert_same_bytes(path, "csv", {"clarify": True, "chunk_rows": 40_000, "block_bytes": 100_000})


# -- generated csv ---------------------------------------------------------------------------

_SPECIAL = ['"', "\\", "\t", "\n", "\r\n", "\r", "\x0c", "\x7f", " ", "\u00a0", "\u2028", "😀"]
# Text of csv cells: what JSON and the canonical line escape, NFD and non-BMP characters;
# C0 controls but the few that the binary-data guard lets through are only in parquet.
_TEXT = st.lists(
    st.characters(exclude_categories=["Cs", "Cc"])
    | st.sampled_from(_SPECIAL)
    | st.sampled_from(["e\u0301", "Å", "Ω"]),
    max_size=8,
).map("".join)
_ANY_TEXT = st.lists(
    st.characters(exclude_categories=["Cs"])
    | st.sampled_from(_SPECIAL)
    | st.sampled_from([chr(code) for code in range(0x20)]),
    max_size=8,
).map("".join)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [
        0.0,
        -0.0,
        1e-4,
        9.999e-5,
        1e-7,
        5e-324,
        1e16,
        9999999999999998.0,
        1e22,
        1.7976931348623157e308,
    ]
)
_CELLS: dict[str, st.SearchStrategy[str]] = {
    "int": st.integers(-(2**70), 2**70).map(str) | st.sampled_from(["007", "+5", "-0"]),
    "float": _FLOATS.map(repr) | _FLOATS.map(lambda x: f"{x:.3e}") | st.sampled_from(["1.", ".5"]),
    "date": st.builds(
        lambda day, fmt: day.strftime(fmt),
        st.dates(dt.date(1000, 1, 1)),
        st.sampled_from(["%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%d.%m.%Y", "%d/%m/%Y "]),
    )
    | st.sampled_from(["2026-02-30", "31/02/2026", "03/04/2026"]),
    "datetime": st.datetimes().map(lambda d: d.isoformat(timespec="seconds"))
    | st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S+02:00")),
    "bool": st.sampled_from(["true", "False", "TRUE"]),
    "text": _TEXT,
}
_HEADERS = ["effective date", "date", "id", 'say "hi"', "naïve", "a\\b", "", "_extra", "x"]


@st.composite
def _csv_tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    width = draw(st.integers(1, 4))
    kinds = draw(st.lists(st.sampled_from(sorted(_CELLS)), min_size=width, max_size=width))
    header = draw(st.lists(st.sampled_from(_HEADERS), min_size=width, max_size=width))
    rows = []
    for _ in range(draw(st.integers(0, 12))):
        # Mostly the column's kind, sometimes empty or a misfit (a dirty cell).
        row = [
            draw(_CELLS[kind] | st.just("") | _CELLS["text"])
            if draw(st.integers(0, 5)) == 0
            else draw(_CELLS[kind])
            for kind in kinds
        ]
        # Now and then a short row, or one with extra fields.
        extra = draw(st.integers(-1, 2))
        rows.append(
            row[:extra]
            if extra < 0
            else row + draw(st.lists(_TEXT, min_size=extra, max_size=extra))
        )
    return header, rows


# 300 examples ran past the suite's 60 s timeout on a 2-core machine under load.
@pytest.mark.timeout(300)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    _csv_tables(),
    st.integers(1, 5),
    st.sampled_from([1 << 10, 8 << 20]),
    st.booleans(),
    st.sampled_from(["auto", "day-first"]),
)
def test_generated_csv_bytes_match(
    tmp_path: Path,
    table: tuple[list[str], list[list[str]]],
    chunk_rows: int,
    max_partial_bytes: int,
    clarify: bool,
    date_order: str,
) -> None:
    header, rows = table
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    path = tmp_path / "gen.csv"
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    options = {
        "chunk_rows": chunk_rows,
        "max_partial_bytes": max_partial_bytes,
        "clarify": clarify,
        "date_order": date_order,
        "delimiter": ",",
    }
    assert_same_bytes(path, "csv", options)


# -- generated parquet -----------------------------------------------------------------------

_PARQUET_COLUMNS: dict[str, tuple[pl.DataType, st.SearchStrategy[Any]]] = {
    "float": (pl.Float64(), _FLOATS | st.sampled_from([math.nan, math.inf, -math.inf])),
    "float32": (pl.Float32(), st.floats(width=32)),
    "int": (pl.Int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint": (pl.UInt64(), st.integers(0, 2**64 - 1)),
    "bool": (pl.Boolean(), st.booleans()),
    "text": (pl.String(), _ANY_TEXT),
    "date": (pl.Date(), st.dates()),
    "moment": (pl.Datetime("us", "UTC"), st.datetimes(timezones=st.just(dt.UTC))),
    "tags": (pl.List(pl.String()), st.lists(_ANY_TEXT, max_size=3)),
}


@st.composite
def _parquet_frames(draw: st.DrawFn) -> pl.DataFrame:
    names = draw(
        st.lists(st.sampled_from(sorted(_PARQUET_COLUMNS)), min_size=2, max_size=4, unique=True)
    )
    height = draw(st.integers(0, 8))
    columns = {}
    for name in names:
        dtype, values = _PARQUET_COLUMNS[name]
        cells = draw(st.lists(st.none() | values, min_size=height, max_size=height))
        columns["valid from" if name == "date" else name] = pl.Series(cells, dtype=dtype)
    return pl.DataFrame(columns)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_parquet_frames(), st.integers(1, 4))
def test_generated_parquet_bytes_match(
    tmp_path: Path, frame: pl.DataFrame, chunk_rows: int
) -> None:
    path = tmp_path / "gen.parquet"
    frame.write_parquet(path)
    assert_same_bytes(path, "parquet", {"chunk_rows": chunk_rows})
