"""Reading an archive's members into memory, each one checked first.

Nothing is extracted to disk. CPython 3.11's tarfile predates the extraction filters
(and some header-parsing fixes), so every member is judged here before a byte of it is
read: a path with `..`, an absolute path or a drive letter, a symlink, a hard link, a
device or FIFO, an encrypted zip member or a duplicate path is skipped and counted; an
archive nested inside is counted, not opened. Caps bound the work an archive can cause:
entries, bytes per file (such a file is listed without its bytes: it becomes a
`too_large` child), inflated bytes in total and the inflation ratio (a bomb is
`too_large` for the whole archive, before anything is enqueued). A truncated or corrupt
archive is `invalid_input`.
"""

from __future__ import annotations

import lzma
import re
import stat
import tarfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workers_common import InvalidInput, TooLarge, Unsupported, formats

from .languages import extension_language
from .limits import DEFAULT_MAX_NOTEBOOK_BYTES
from .notebook import is_notebook

__all__ = ["ArchiveLimits", "Listing", "Member", "check_path", "is_document", "read_archive"]

_DRIVE = re.compile(r"[A-Za-z]:")
_NESTED = (
    ".zip",
    ".tar",
    ".tgz",
    ".tar.gz",
    ".txz",
    ".tar.xz",
    ".tbz2",
    ".tar.bz2",
    ".jar",
    ".whl",
    ".gem",
    ".7z",
    ".rar",
)
_CORRUPT = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
)
_BOMB_FLOOR = 64 * 1024 * 1024
"""Below this many inflated bytes the ratio is not checked (tiny archives of zeros)."""


def is_document(path: str) -> bool:
    """A member whose name says a document format (README.md, a PDF, a spreadsheet) and no
    language this worker parses: it may become a child job of that format."""
    return extension_language(path) is None and formats.by_name(path) is not None


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_entries: int
    max_file_bytes: int
    max_total_bytes: int
    max_ratio: int
    max_document_bytes: int = 0
    """The read limit of a document member (repository.is_document); 0: max_file_bytes."""
    max_notebook_bytes: int = DEFAULT_MAX_NOTEBOOK_BYTES
    """The read limit of a Jupyter notebook (its script is held to max_file_bytes)."""

    def read_limit(self, path: str) -> int:
        """How many bytes of this member are read; a larger one is listed, not read."""
        if self.max_document_bytes > self.max_file_bytes and is_document(path):
            return self.max_document_bytes
        if is_notebook(path):
            return max(self.max_notebook_bytes, self.max_file_bytes)
        return self.max_file_bytes

    def limit_name(self, path: str) -> str:
        """The option `read_limit` comes from, for a member over it."""
        if self.read_limit(path) == self.max_file_bytes:
            return "max_file_bytes"
        return "max_notebook_bytes" if is_notebook(path) else "max_document_bytes"


@dataclass(frozen=True, slots=True)
class Member:
    path: str
    size: int
    data: bytes | None
    """None when the member is over max_file_bytes (it was not read)."""


@dataclass(slots=True)
class Listing:
    kind: str
    members: list[Member] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    entries: int = 0
    inflated: int = 0


def check_path(raw: str) -> tuple[str | None, str | None]:
    """(clean POSIX path, None) or (None, why it is skipped); (None, None) for nothing."""
    if "\x00" in raw:
        return None, "bad_name"
    name = raw.replace("\\", "/")
    if name.startswith("/"):
        return None, "absolute_path"
    if _DRIVE.match(name):
        return None, "drive_letter"
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return None, "path_traversal"
    return ("/".join(parts) or None), None


def _sniff(path: Path) -> str:
    with path.open("rb") as handle:
        head = handle.read(512)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        return "tar.gz"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "tar.xz"
    if head.startswith(b"BZh"):
        return "tar.bz2"
    if head[257:262] == b"ustar" or (len(head) >= 512 and _tar_checksum_ok(head)):
        return "tar"
    # A zip with bytes before it: a Python zipapp (`#!/usr/bin/env python3` first), a
    # self-extracting archive. Its directory, found from the end, says where members are.
    if zipfile.is_zipfile(path):
        return "zip"
    raise InvalidInput("not a zip or tar archive (no zip, gzip, xz, bzip2 or tar signature)")


def _tar_checksum_ok(block: bytes) -> bool:
    try:
        stored = int(block[148:156].replace(b"\x00", b" ").strip() or b"-1", 8)
    except ValueError:
        return False
    return stored == sum(block[:148]) + 8 * 32 + sum(block[156:512])


class _Reader:
    def __init__(self, path: Path, limits: ArchiveLimits, kind: str) -> None:
        self.path = path
        self.limits = limits
        self.size = max(path.stat().st_size, 1)
        self.listing = Listing(kind)
        self.seen: set[str] = set()
        self.declared = 0

    def count_entry(self) -> None:
        self.listing.entries += 1
        if self.listing.entries > self.limits.max_entries:
            raise TooLarge(f"archive has more than max_entries={self.limits.max_entries} members")

    def declare(self, size: int) -> None:
        """Adds a member's declared size; over the total or the ratio it is a bomb."""
        self.declared += size
        if self.declared > self.limits.max_total_bytes:
            raise TooLarge(
                f"archive inflates to more than max_total_bytes={self.limits.max_total_bytes}"
            )
        if self.declared > _BOMB_FLOOR and self.declared > self.size * self.limits.max_ratio:
            raise TooLarge(
                f"archive inflates {self.declared // self.size}x its {self.size} bytes "
                f"(max_ratio={self.limits.max_ratio}): a decompression bomb"
            )

    def accept(self, raw_name: str) -> str | None:
        """The member's path when it may be read, else None (and the reason counted)."""
        path, reason = check_path(raw_name)
        if reason is not None:
            self.listing.skipped[reason] += 1
            return None
        if path is None:
            return None
        if path in self.seen:
            self.listing.skipped["duplicate_path"] += 1
            return None
        if path.lower().endswith(_NESTED):
            self.seen.add(path)
            self.listing.skipped["nested_archive"] += 1
            return None
        self.seen.add(path)
        return path

    def add(self, path: str, size: int, data: bytes | None) -> None:
        if data is not None:
            if len(data) != size:
                raise InvalidInput(
                    f"member {path!r} holds {len(data)} bytes, its header says {size}"
                )
            self.listing.inflated += len(data)
        self.listing.members.append(Member(path, size, data))


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member is not a plain file (None: it is one)."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return "symlink"
    if kind in (stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK):
        return "device"
    if info.flag_bits & 0x1:
        return "encrypted"
    return None


def _read_zip(reader: _Reader) -> None:
    try:
        archive = zipfile.ZipFile(reader.path)
    except _CORRUPT as err:
        raise InvalidInput(f"corrupt or truncated zip: {err}") from err
    except NotImplementedError as err:
        # A central directory entry that needs a newer zip version than zipfile reads
        # ("zip file version 15.4"): it was `transient` (found by the fault suite).
        raise Unsupported(f"zip needs a feature this reader lacks: {err}") from err
    with archive:
        infos = archive.infolist()
        for info in infos:  # every check before the first byte is inflated
            reader.count_entry()
            if not info.is_dir():
                reader.declare(info.file_size)
        for info in infos:
            if info.is_dir():
                continue
            reason = _zip_kind(info)
            if reason is not None:
                reader.listing.skipped[reason] += 1
                continue
            path = reader.accept(info.filename)
            if path is None:
                continue
            limit = reader.limits.read_limit(path)
            if info.file_size > limit:
                reader.add(path, info.file_size, None)
            else:
                _read_zip_member(archive, info, path, reader, limit)


def _read_zip_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, reader: _Reader, limit: int
) -> None:
    try:
        with archive.open(info) as handle:
            data = handle.read(limit + 1)
    except NotImplementedError:  # a compression method zipfile lacks (deflate64, ...)
        reader.listing.skipped["unsupported_compression"] += 1
        return
    except _CORRUPT as err:  # CRC mismatch, truncated stream, bad header
        raise InvalidInput(f"corrupt zip member {path!r}: {err}") from err
    reader.add(path, info.file_size, data)


def _tar_members(archive: tarfile.TarFile, reader: _Reader) -> Iterator[tarfile.TarInfo]:
    last_offset = -1
    while True:
        member = archive.next()
        if member is None:
            return
        reader.count_entry()
        # A header that points backwards would make tarfile loop over the same members.
        if member.offset <= last_offset:
            raise InvalidInput("corrupt tar: a header's offset goes backwards")
        last_offset = member.offset
        yield member


def _tar_skip_reason(member: tarfile.TarInfo) -> str | None:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.ischr() or member.isblk() or member.isfifo():
        return "device"
    if not member.isreg():
        return "special_file"
    return None


def _read_tar(reader: _Reader) -> None:
    try:
        archive = tarfile.open(reader.path, mode="r:*")  # noqa: SIM115 (a with block below)
    except _CORRUPT as err:
        raise InvalidInput(f"corrupt or truncated tar: {err}") from err
    with archive:
        try:
            for member in _tar_members(archive, reader):
                if member.isdir():
                    continue
                reason = _tar_skip_reason(member)
                if reason is not None:
                    reader.listing.skipped[reason] += 1
                    continue
                reader.declare(member.size)
                path = reader.accept(member.name)
                if path is None:
                    continue
                limit = reader.limits.read_limit(path)
                if member.size > limit:
                    reader.add(path, member.size, None)
                    continue
                handle = archive.extractfile(member)
                data = b"" if handle is None else handle.read(limit + 1)
                reader.add(path, member.size, data)
            end = archive.offset
        except (TooLarge, InvalidInput):
            raise
        except _CORRUPT as err:
            raise InvalidInput(f"corrupt or truncated tar: {err}") from err
    if reader.listing.kind == "tar":
        _check_end_marker(reader.path, end)


def _check_end_marker(path: Path, offset: int) -> None:
    """A plain tar cut at a header boundary reads like a shorter archive to tarfile: the
    end-of-archive block of zeros must be there. (A compressed one fails at the cut.)"""
    with path.open("rb") as handle:
        handle.seek(offset)
        block = handle.read(512)
    if len(block) < 512 or block.strip(b"\0"):
        raise InvalidInput("truncated tar: the end-of-archive marker is missing")


def read_archive(path: Path, limits: ArchiveLimits) -> Listing:
    """Every member checked, the safe ones read (up to max_file_bytes each)."""
    kind = _sniff(path)
    reader = _Reader(path, limits, kind)
    if kind == "zip":
        _read_zip(reader)
    else:
        _read_tar(reader)
    return reader.listing
