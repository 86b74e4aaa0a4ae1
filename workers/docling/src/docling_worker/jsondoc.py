"""Any other JSON (format `docling`, when the file is not a DoclingDocument) as a document.

Most `.json` files people have are data and configuration: API responses, exports,
manifests, settings. Such a file becomes a DoclingDocument whose structure follows the
JSON's, so that the usual projection gives it SECTIONs, LISTs and TABLEs:

- an object's members whose values are scalars come first, as one LIST of items
  `key: value`;
- then each member whose value is an object or an array, in the file's order: a heading
  (`key`, one level below its parent's) followed by that value. (Headings open sections
  that only a heading of the same or a higher level closes: a scalar member written after
  a nested one would otherwise land in that member's section);
- an array of scalars is one LIST of the values;
- an array of flat records (objects whose values are all scalars) is a TABLE: the
  columns are the records' keys in the order first seen, a missing key an empty cell;
- any other array: its scalar elements first as one LIST, then each other element under
  a heading `key[i]` (its 0-based index, as JSON paths write it).

A value is written as its source text: numbers keep their digits (`1.10` stays `1.10`,
a 400-digit integer stays itself), strings are decoded, `true`/`false`/`null` as written.
Otherwise members keep the file's order; a repeated key keeps its last value (as every
JSON reader does). Headings deeper than `MAX_LEVEL` stay at that level.

JSON Lines (a value per line; the first value followed by "extra data" tells it) is read
as the array of its lines' values: records become a TABLE.

Budget: headings, lists, list items and table cells count against `max_elements`
(default `DEFAULT_MAX_ELEMENTS`, which keeps the projection under the core's 100,000
nodes a submission); past it the job is `too_large`. Nesting deeper than Python's
recursion allows is `invalid_input`, as is text that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from docling_core.types.doc import DoclingDocument, NodeItem, TableCell, TableData

from workers_common import InvalidInput, TooLarge

from .model import Converted, SourceMeta

__all__ = ["DEFAULT_MAX_ELEMENTS", "MAX_LEVEL", "json_document", "parse_json"]

DEFAULT_MAX_ELEMENTS = 90_000
"""Headings, lists, list items and table cells of one JSON file (option `max_elements`)."""
MAX_LEVEL = 6
"""The deepest heading level written (a deeper member is a heading at this level)."""
_MAX_COLUMNS = 64
"""Records with more distinct keys than this are laid out one by one, not as a table."""


def parse_json(data: bytes) -> Any:
    """The JSON value, numbers and constants kept as their source text (a `_Raw`). JSON
    Lines (one value per line: logs, exports, `.jsonl`/`.ndjson`, often named `.json`)
    is the array of its lines' values."""
    try:
        return _loads(data)
    except RecursionError as err:
        raise InvalidInput("JSON nested too deeply to read") from err
    except UnicodeDecodeError as err:
        raise InvalidInput(f"not valid JSON: not UTF-8/16/32 text ({err.reason})") from err
    except json.JSONDecodeError as err:
        lines = _json_lines(data) if err.msg == "Extra data" else None
        if lines is None:
            raise InvalidInput(f"not valid JSON: {err}") from err
        return lines
    except ValueError as err:
        raise InvalidInput(f"not valid JSON: {err}") from err


def _loads(data: bytes | str) -> Any:
    return json.loads(
        data, object_pairs_hook=dict, parse_int=_Raw, parse_float=_Raw, parse_constant=_Raw
    )


def _json_lines(data: bytes) -> list[Any] | None:
    """Each non-blank line's value, or None when a line is not one JSON value (the
    whole file's error is then the one to report)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    values = []
    for line in text.splitlines():
        if line.strip():
            try:
                values.append(_loads(line))
            except (ValueError, RecursionError):
                return None
    return values


class _Raw(str):
    """A number (or NaN/Infinity) as written in the file."""

    __slots__ = ()


def _scalar(value: Any) -> str | None:
    """A scalar's text, or None for an object or array."""
    if isinstance(value, str):
        return str(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return None


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and all(_scalar(v) is not None for v in value.values())


class _Builder:
    def __init__(self, name: str, max_elements: int) -> None:
        self.document = DoclingDocument(name=name)
        self.budget = max_elements
        self.max_elements = max_elements
        self.counts = {"json_headings": 0, "json_items": 0, "json_tables": 0}

    def _spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise TooLarge(
                f"JSON has more than max_elements={self.max_elements} headings, lists, "
                "list items and table cells"
            )

    def heading(self, text: str, level: int) -> None:
        self._spend(1)
        self.counts["json_headings"] += 1
        self.document.add_heading(text=text, level=min(level, MAX_LEVEL))

    def items(self, texts: Iterator[str]) -> None:
        group: NodeItem | None = None
        for text in texts:
            self._spend(1)
            if group is None:
                self._spend(1)
                group = self.document.add_list_group()
            self.counts["json_items"] += 1
            self.document.add_list_item(text=text, parent=group)

    def table(self, records: list[dict[str, Any]]) -> None:
        columns: dict[str, None] = {}
        for record in records:
            columns.update(dict.fromkeys(record))
        names = list(columns)
        self._spend(len(names) * (len(records) + 1))
        cells = [_cell(0, c, name, header=True) for c, name in enumerate(names)]
        for r, record in enumerate(records, start=1):
            for c, name in enumerate(names):
                value = record.get(name)
                text = "" if name not in record else (_scalar(value) or "")
                cells.append(_cell(r, c, text, header=False))
        self.counts["json_tables"] += 1
        data = TableData(num_rows=len(records) + 1, num_cols=len(names), table_cells=cells)
        self.document.add_table(data=data)

    def value(self, value: Any, key: str, level: int) -> None:
        if isinstance(value, dict):
            self.members(value, level)
        elif isinstance(value, list):
            self.array(value, key, level)
        else:
            self.items(iter([_scalar(value) or ""]))

    def members(self, obj: Mapping[str, Any], level: int) -> None:
        nested = []
        scalars = []
        for key, value in obj.items():
            text = _scalar(value)
            if text is None:
                nested.append((key, value))
            else:
                scalars.append(f"{key}: {text}")
        self.items(iter(scalars))
        for key, value in nested:
            self.heading(key or '""', level)
            self.value(value, key, level + 1)

    def array(self, values: list[Any], key: str, level: int) -> None:
        if not values:
            return
        texts = [_scalar(v) for v in values]
        if all(t is not None for t in texts):
            self.items(t or "" for t in texts)
            return
        if all(_is_record(v) for v in values) and _column_count(values) <= _MAX_COLUMNS:
            self.table(values)
            return
        self.items(t for t in texts if t is not None)
        for i, (value, text) in enumerate(zip(values, texts, strict=True)):
            if text is None:
                self.heading(f"{key}[{i}]", level)
                self.value(value, f"{key}[{i}]", level + 1)


def _column_count(records: list[dict[str, Any]]) -> int:
    seen: set[str] = set()
    for record in records:
        seen.update(record)
        if len(seen) > _MAX_COLUMNS:
            break
    return len(seen)


def _cell(row: int, col: int, text: str, *, header: bool) -> TableCell:
    return TableCell(
        text=text,
        start_row_offset_idx=row,
        end_row_offset_idx=row + 1,
        start_col_offset_idx=col,
        end_col_offset_idx=col + 1,
        column_header=header,
    )


def json_document(value: Any, *, name: str, max_elements: int) -> Converted:
    """A parsed JSON value (from `parse_json`) as a DoclingDocument."""
    builder = _Builder(name, max_elements)
    try:
        builder.value(value, "", 1)
    except RecursionError as err:
        raise InvalidInput("JSON nested too deeply to lay out") from err
    return Converted(builder.document, SourceMeta(), dict(builder.counts))
