"""A damaged xlsx zip (truncated, a member whose deflate stream or CRC no longer checks,
a corrupted central directory) is a permanent invalid_input, never an untyped exception
(which the consumer reports as transient, so the job would be retried). The fault suite's
hostile mutations found `transient: BadZipFile` for such files."""

from __future__ import annotations

import functools
import io
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tabular_worker import handle
from workers_common import InvalidInput
from workers_common.conformance import run_handler

from tabular_corpus import xlsx_bytes

_CENTRAL = b"PK\x01\x02"
_END = b"PK\x05\x06"
# Every part the worker reads before (or besides) the bomb guard, and a sheet.
_MEMBERS = (
    "_rels/.rels",
    "xl/workbook.xml",
    "xl/_rels/workbook.xml.rels",
    "xl/styles.xml",
    "xl/sharedStrings.xml",
    "xl/worksheets/sheet1.xml",
)


def _info(data: bytes, member: str) -> zipfile.ZipInfo:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(member)
    assert info.compress_type == zipfile.ZIP_DEFLATED
    return info


def _central_entry(data: bytes, member: str) -> int:
    """The offset of `member`'s central directory header."""
    at = data.find(_CENTRAL)
    while at >= 0:
        (name_length,) = struct.unpack_from("<H", data, at + 28)
        if data[at + 46 : at + 46 + name_length] == member.encode():
            return at
        at = data.find(_CENTRAL, at + 4)
    raise AssertionError(f"{member} has no central directory entry")


def _stream_start(data: bytes, info: zipfile.ZipInfo) -> int:
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    start: int = info.header_offset + 30 + name_length + extra_length
    return start


def _deflate_garbled(data: bytes, member: str) -> bytes:
    """The member's compressed stream with bytes flipped in its middle: inflating it fails
    (zlib error) or yields other bytes (bad CRC)."""
    info = _info(data, member)
    middle = _stream_start(data, info) + info.compress_size // 2
    out = bytearray(data)
    out[middle : middle + 4] = bytes(255 - b for b in data[middle : middle + 4])
    return bytes(out)


def _deflate_invalid(data: bytes, member: str) -> bytes:
    """The member's compressed stream opening with a block of the reserved type 3: zlib
    refuses it ("invalid block type")."""
    out = bytearray(data)
    out[_stream_start(data, _info(data, member))] = 0xFF
    return bytes(out)


def _bad_crc(data: bytes, member: str) -> bytes:
    """The CRC-32 the central directory states for the member, changed."""
    at = _central_entry(data, member) + 16
    (crc,) = struct.unpack_from("<I", data, at)
    out = bytearray(data)
    struct.pack_into("<I", out, at, crc ^ 0xDEADBEEF)
    return bytes(out)


def _bad_local_offset(data: bytes, member: str) -> bytes:
    """The member's local header offset in the central directory, off by one."""
    at = _central_entry(data, member) + 42
    (offset,) = struct.unpack_from("<I", data, at)
    out = bytearray(data)
    struct.pack_into("<I", out, at, offset + 1)
    return bytes(out)


def _directory_offset_past(data: bytes) -> bytes:
    """The end record states the central directory further on than it is: zipfile then
    places every local header before the start of the file."""
    at = data.rfind(_END) + 16
    (offset,) = struct.unpack_from("<I", data, at)
    out = bytearray(data)
    struct.pack_into("<I", out, at, offset + 4096)
    return bytes(out)


def _directory_signature_broken(data: bytes) -> bytes:
    at = data.find(_CENTRAL)
    return data[:at] + b"PK\x00\x00" + data[at + 4 :]


def _directory_name_not_utf8(data: bytes) -> bytes:
    """A central directory entry flagged as naming its member in UTF-8, with a name that
    is not UTF-8."""
    at = _central_entry(data, "xl/workbook.xml")
    (flags,) = struct.unpack_from("<H", data, at + 8)
    out = bytearray(data)
    struct.pack_into("<H", out, at + 8, flags | 0x800)
    out[at + 46] = 0xFF
    return bytes(out)


def _flagged_encrypted(data: bytes) -> bytes:
    """A central directory entry's flags saying the member is zip-encrypted."""
    at = _central_entry(data, "_rels/.rels")
    (flags,) = struct.unpack_from("<H", data, at + 8)
    out = bytearray(data)
    struct.pack_into("<H", out, at + 8, flags | 0x1)
    return bytes(out)


_Damage = Callable[[bytes], bytes]


def _cases() -> list[tuple[str, _Damage]]:
    cases: list[tuple[str, _Damage]] = [
        ("truncated-half", lambda d: d[: len(d) // 2]),
        ("truncated-last-byte", lambda d: d[:-1]),
        ("truncated-in-directory", lambda d: d[: _central_entry(d, "xl/workbook.xml") + 20]),
        ("directory-offset-past", _directory_offset_past),
        ("directory-signature", _directory_signature_broken),
        ("directory-name-not-utf8", _directory_name_not_utf8),
        ("flagged-encrypted", _flagged_encrypted),
    ]
    for member in _MEMBERS:
        for kind, damage in (
            ("deflate-garbled", _deflate_garbled),
            ("deflate-invalid", _deflate_invalid),
            ("bad-crc", _bad_crc),
            ("local-offset", _bad_local_offset),
        ):
            cases.append((f"{kind}:{member}", functools.partial(damage, member=member)))
    return cases


@pytest.fixture(scope="module")
def seed() -> bytes:
    return xlsx_bytes()


def test_the_seed_reads(tmp_path: Path, seed: bytes) -> None:
    path = tmp_path / "seed.xlsx"
    path.write_bytes(seed)
    assert run_handler(handle, path, format="xlsx", options={})


@pytest.mark.parametrize(("name", "damage"), _cases(), ids=[name for name, _ in _cases()])
def test_damaged_zip_is_invalid_input(
    tmp_path: Path, seed: bytes, name: str, damage: _Damage
) -> None:
    damaged = damage(seed)
    assert damaged != seed
    path = tmp_path / "damaged.xlsx"
    path.write_bytes(damaged)
    with pytest.raises(InvalidInput) as failure:
        run_handler(handle, path, format="xlsx", options={})
    assert failure.value.permanent
