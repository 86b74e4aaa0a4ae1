"""A native reader of one xlsx worksheet (workers/xlsx, Rust): typed columns in flat buffers."""

import os

class Declined(Exception):
    """The scanner leaves this sheet to fastexcel; the message says which construct."""

def read_sheet(
    sheet: bytes,
    shared: bytes | None,
    styles: bytes,
    date1904: bool,
    threads: int = 2,
    max_cells: int = 50_000_000,
) -> tuple[list[str], bytes, bytes, int, list[str]]:
    """(header, kinds, values, rows, strings): per column its kind (0 empty, 1 number,
    2 string, 3 boolean, 4 date-time in ms since 1970, 5 duration in ms), the data cells as
    native-endian f64 column after column (NaN when empty; a string as its index into
    `strings`)."""

def read_package_sheet(
    path: str | os.PathLike[str],
    sheet: str,
    shared: str | None,
    styles: bytes,
    date1904: bool,
    threads: int = 2,
    max_cells: int = 50_000_000,
    max_bytes: int = 1 << 32,
) -> tuple[list[str], bytes, bytes, int, list[str]]:
    """`read_sheet` of the zip package's parts `sheet` and `shared`, inflated in Rust."""

def number_format_class(code: str) -> int:
    """0 other, 1 date-time, 2 duration, 255 unknown: a custom number format code."""

def builtin_format_class(id: str) -> int:
    """The class of a built-in number format id as written in the file."""
