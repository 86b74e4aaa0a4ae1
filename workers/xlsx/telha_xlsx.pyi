"""A native reader of one xlsx worksheet (workers/xlsx, Rust): typed Arrow columns."""

import os
from typing import Any

class Declined(Exception):
    """The scanner leaves this sheet to fastexcel; the message says which construct."""

class Column:
    """One column of the data rows as an Arrow array (Float64, Boolean, Timestamp(ms),
    Duration(ms), Utf8View or Null), exported through the Arrow PyCapsule interface."""

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]: ...
    def __len__(self) -> int: ...

def read_sheet(
    sheet: bytes,
    shared: bytes | None,
    styles: bytes,
    date1904: bool,
    threads: int = 2,
    max_cells: int = 50_000_000,
) -> tuple[list[str], list[Column], list[Column | None]]:
    """(header, columns, lost) of a worksheet part: the first row's strings, each column's
    data rows typed as fastexcel types them (numbers and text together as text, the numbers
    rendered as calamine renders them), and per column the numbers whose rendering reads
    back as another double (None when none do); `styles` is each cell style's class."""

def read_package_sheet(
    path: str | os.PathLike[str],
    sheet: str,
    shared: str | None,
    styles: bytes,
    date1904: bool,
    threads: int = 2,
    max_cells: int = 50_000_000,
    max_bytes: int = 256 << 20,
    max_ratio: int = 200,
) -> tuple[list[str], list[Column], list[Column | None]]:
    """`read_sheet` of the zip package's parts `sheet` and `shared`, inflated in Rust within
    the bomb guard's limits (a part past them declines)."""

def number_format_class(code: str) -> int:
    """0 other, 1 date-time, 2 duration, 255 unknown: a custom number format code."""

def builtin_format_class(id: str) -> int:
    """The class of a built-in number format id as written in the file."""
