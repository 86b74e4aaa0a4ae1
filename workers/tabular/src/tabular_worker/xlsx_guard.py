"""xlsx bomb guard: inflate the archive once, counting, before calamine reads it.

An xlsx is a zip. Its central directory states sizes, but a bomb may lie about them, and
calamine would then inflate whatever the streams hold. So every member is inflated here,
streaming and counting the bytes that really come out: past `max_bytes` in total, or a
member inflating more than `max_ratio` times its compressed size, the job fails as
`too_large` with the member's name. A stream that ends short of or beyond its stated size
(a lying header) is `invalid_input`. Memory stays at one read buffer.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from workers_common import InvalidInput, TooLarge

__all__ = ["check_xlsx"]

_READ = 1 << 20
# Small members (styles, relationship parts) compress extremely well and are harmless:
# the ratio test only applies past this many inflated bytes.
_RATIO_FLOOR = 1 << 20


def check_xlsx(path: Path, *, max_bytes: int, max_ratio: int) -> None:
    """Raises too_large / invalid_input as described above; returns when the archive is fine."""
    with path.open("rb") as handle:
        magic = handle.read(8)
    if magic.startswith(b"\xd0\xcf\x11\xe0"):
        raise InvalidInput("content is an OLE compound file: a legacy .xls or an encrypted xlsx")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise InvalidInput(f"content is not an xlsx workbook (not a zip archive: {err})") from err
    total = 0
    with archive:
        names = archive.namelist()
        if "xl/workbook.xml" not in names:
            raise InvalidInput(
                "content is a zip archive without xl/workbook.xml, not an xlsx workbook"
            )
        for info in archive.infolist():
            total += _inflate(archive, info, max_bytes - total, max_ratio, max_bytes)


def _inflate(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, max_ratio: int, max_bytes: int
) -> int:
    produced = 0
    try:
        with archive.open(info) as member:
            while block := member.read(_READ):
                produced += len(block)
                if produced > budget:
                    raise TooLarge(
                        f"xlsx inflates past {max_bytes} bytes (max_xlsx_bytes) at member "
                        f"{info.filename!r}: refused as a zip bomb"
                    )
                if produced > _RATIO_FLOOR and produced > max_ratio * max(info.compress_size, 1):
                    raise TooLarge(
                        f"xlsx member {info.filename!r} inflates more than {max_ratio} times its "
                        f"compressed size (max_xlsx_ratio): refused as a zip bomb"
                    )
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
        # Bad CRC, a stream shorter or longer than stated, encryption, unknown compression.
        raise InvalidInput(f"xlsx member {info.filename!r} is damaged: {err}") from err
    return produced
