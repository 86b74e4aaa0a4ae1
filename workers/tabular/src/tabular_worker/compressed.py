"""Compressed csv/tsv (`.csv.gz`, `.csv.zst`, `.tsv.gz`, also bzip2 and xz): recognized by
their magic bytes, whatever the job's name, and inflated once, streaming, into the job's
work folder; the block reader (blocks.py) then reads that file like any other.

A bomb is refused while it inflates, before it fills the disk: past `max_compression_ratio`
times the compressed size (once over 1 MiB out), or past `max_decompressed_bytes`, the job
fails as `too_large`. A damaged or truncated stream is `invalid_input`. Memory stays at one
read buffer; the inflated file is removed with the work folder when the job ends.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import BinaryIO, Protocol

import zstandard

from workers_common import InvalidInput, TooLarge

__all__ = ["COMPRESSIONS", "compression_of", "inflated"]

_READ = 1 << 20
_RATIO_FLOOR = 1 << 20

COMPRESSIONS: dict[bytes, str] = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
}
"""Magic bytes -> compression."""


class _Stream(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...
    def close(self) -> None: ...


def _zstd(handle: BinaryIO) -> _Stream:
    return zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True)


# Each opener's stream is closed by the caller (inflated).
_OPENERS: dict[str, Callable[[BinaryIO], _Stream]] = {
    "gzip": lambda handle: gzip.GzipFile(fileobj=handle, mode="rb"),
    "zstd": _zstd,
    "bzip2": lambda handle: bz2.BZ2File(handle, mode="rb"),
    "xz": lambda handle: lzma.LZMAFile(handle, mode="rb"),  # noqa: SIM115
}
_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError, zstandard.ZstdError, ValueError)


def compression_of(path: Path) -> str | None:
    """The compression the file at `path` starts with, or None."""
    with path.open("rb") as handle:
        head = handle.read(8)
    return next((kind for magic, kind in COMPRESSIONS.items() if head.startswith(magic)), None)


def inflated(path: Path, kind: str, target: Path, *, max_ratio: int, max_bytes: int) -> Path:
    """Inflates `path` (compressed with `kind`) into `target`; returns `target`."""
    compressed = max(path.stat().st_size, 1)
    produced = 0
    try:
        with (
            path.open("rb") as raw,
            closing(_OPENERS[kind](raw)) as stream,
            target.open("wb") as out,
        ):
            while block := stream.read(_READ):
                produced += len(block)
                if produced > max_bytes:
                    raise TooLarge(
                        f"{kind} text inflates past {max_bytes} bytes "
                        "(max_decompressed_bytes): refused"
                    )
                if produced > _RATIO_FLOOR and produced > max_ratio * compressed:
                    raise TooLarge(
                        f"{kind} text inflates more than {max_ratio} times its compressed size "
                        f"of {compressed} bytes (max_compression_ratio): refused as a bomb"
                    )
                out.write(block)
    except _ERRORS as err:
        raise InvalidInput(f"{kind}-compressed content is damaged or truncated: {err}") from err
    return target
