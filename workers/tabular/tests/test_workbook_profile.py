"""A workbook's typed columns skip the profile's pattern and parse passes: their counts come
from the values (spreadsheet._known_counts). These tests hold those counts to what the
passes count over the same text, on every workbook of the corpus and on edge values."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
from pathlib import Path

import polars as pl
import pytest
import xlsxwriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabular_worker.profile import TableProfile, profile_table
from tabular_worker.spreadsheet import _as_text, _plain_datetimes, sheet_tables
from tabular_worker.tables import TableSource

from tabular_corpus import CORPUS


def _book(cells: dict[str, list[object]], formats: dict[str, str] | None = None) -> bytes:
    """One sheet: a header row of the keys, then each column's cells (None: empty)."""
    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True})
    book.set_properties({"created": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    sheet = book.add_worksheet("Edges")
    styles = {name: book.add_format({"num_format": f}) for name, f in (formats or {}).items()}
    for col, (name, values) in enumerate(cells.items()):
        sheet.write_string(0, col, name)
        for row, value in enumerate(values, start=1):
            style = styles.get(name)
            if value is None:
                continue
            if isinstance(value, bool):
                sheet.write_boolean(row, col, value, style)
            elif isinstance(value, int | float):
                sheet.write_number(row, col, value, style)
            elif isinstance(value, dt.datetime):
                sheet.write_datetime(row, col, value, style)
            else:
                sheet.write_string(row, col, str(value), style)
    book.close()
    return buffer.getvalue()


def edges_xlsx() -> bytes:
    return _book(
        {
            # integral up to 2^53 written without a fraction, past it with one, and in
            # exponent form; -0.0 is "0"; blanks in between.
            "numbers": [0.0, -0.0, 1e-20, 2.0**53, 2.0**53 + 2, 1e20, -1.5, None, 1e300, 5.0],
            # mostly integers, one fraction: an integer column with a dirty cell
            "mostly integers": [1, 2, 3, 4, 5, 6, 7, 8, 9, 2.5],
            "flags": [True, False, None, True, False, True, True, False, True, None],
            "when": [dt.datetime(2026, 3, day, 8, 30) for day in range(1, 10)] + [None],
            # a time of day and a day count shown as date-times: durations
            "times": [dt.datetime(1899, 12, 31, hour, 15) for hour in range(10)],
            # a number column with a text cell: read as text where the value is null
            "mixed": [1.0, 2.0, "n/a", 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
            "spaces": [1.0, 2.0, "  ", 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
        },
        {"when": "yyyy-mm-dd hh:mm", "times": "hh:mm:ss"},
    )


def _tables(tmp_path: Path, data: bytes) -> list[TableSource]:
    path = tmp_path / "book.xlsx"
    path.write_bytes(data)
    return list(sheet_tables("xlsx", path, date1904=False))


def _both(table: TableSource) -> tuple[TableProfile, TableProfile]:
    return profile_table(table, True), profile_table(dataclasses.replace(table, known={}), True)


def test_edge_values_profile_as_their_text_does(tmp_path: Path) -> None:
    [table] = _tables(tmp_path, edges_xlsx())
    # numbers, mostly integers, flags, when and times are typed; mixed and spaces are not
    # (a text cell fills a null) or are strings.
    assert sorted(table.known) == [0, 1, 2, 3, 4]
    fast, slow = _both(table)
    assert fast == slow
    kinds = {c.name: (c.type.value, c.dirty_count, c.null_count) for c in fast.columns}
    assert kinds["numbers"] == ("float", 0, 1)
    assert kinds["mostly integers"] == ("integer", 1, 0)
    assert kinds["flags"] == ("boolean", 0, 2)
    assert kinds["when"] == ("datetime", 0, 1)
    assert kinds["times"] == ("duration", 0, 0)


@pytest.mark.parametrize(
    "name", [name for name, f in CORPUS.items() if f.format in ("xlsx", "xlsb", "xls", "ods")]
)
def test_corpus_workbooks_profile_as_their_text_does(name: str, tmp_path: Path) -> None:
    fixture = CORPUS[name]
    path = tmp_path / fixture.filename
    path.write_bytes(fixture.data)
    from tabular_worker.xlsx_guard import prepare_workbook

    book = prepare_workbook(fixture.format, path, tmp_path, max_bytes=1 << 30, max_ratio=1000)
    for table in sheet_tables(book.kind, book.path, date1904=book.date1904):
        fast, slow = _both(table)
        assert fast == slow


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.floats(allow_nan=False, allow_infinity=False),
            st.integers(min_value=-(2**60), max_value=2**60).map(float),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_arbitrary_numbers_profile_as_their_text_does(
    tmp_path: Path, values: list[float | None]
) -> None:
    tables = _tables(tmp_path, _book({"n": list(values), "tag": ["x"] * len(values)}))
    for table in tables:
        fast, slow = _both(table)
        assert fast == slow


def test_plain_datetime_columns_skip_the_fraction_and_duration_text() -> None:
    moments = [dt.datetime(2026, 3, 1, 8, 30), dt.datetime(2026, 3, 2)]
    typed = pl.DataFrame(
        {
            "t0": moments,
            "t1": [moments[0], dt.datetime(2026, 3, 2, 0, 0, 0, 250_000)],  # a millisecond
            "t2": [moments[0], dt.datetime(1899, 12, 31, 6)],  # a time of day: a duration
        },
        schema={f"t{i}": pl.Datetime("ms") for i in range(3)},
    )
    dtypes = list(typed.schema.values())
    assert _plain_datetimes(typed, dtypes, False) == {0}
    for i in range(3):
        full = typed.select(_as_text(f"t{i}", dtypes[i], False)).to_series()
        if i == 0:
            plain = typed.select(_as_text(f"t{i}", dtypes[i], False, plain=True)).to_series()
            assert (
                plain.to_list() == full.to_list() == ["2026-03-01 08:30:00", "2026-03-02 00:00:00"]
            )
    assert (
        typed.select(_as_text("t1", dtypes[1], False)).to_series()[1] == "2026-03-02 00:00:00.250"
    )
    assert typed.select(_as_text("t2", dtypes[2], False)).to_series()[1] == "PT6H"
