"""Workbook checks before calamine reads one: what the bytes are, bombs, encryption, and
the package layout (opc.py).

By the bytes, not the name: an OLE2 compound file is a legacy .xls, unless it holds an
`EncryptedPackage` stream (a password-protected xlsx/xlsb: `unsupported:
password-protected`); a zip is an xlsx/xlsb (an OPC package with a workbook part) or an
ods (an ODF package: `mimetype` and `content.xml`); anything else is `invalid_input`.
calamine picks its reader by file extension, so the worker hands it a link named for
what the bytes are.

A zip's central directory states sizes, but a bomb may lie about them, and calamine
would then inflate whatever the streams hold. So every member is inflated here,
streaming and counting the bytes that really come out: past `max_bytes` in total, or a
member inflating more than `max_ratio` times its compressed size, the job fails as
`too_large` with the member's name. A stream that ends short of or beyond its stated size
(a lying header) is `invalid_input`, and so is a package that zipfile cannot read
(a bad local header, CRC-32 or deflate stream; a central directory that misplaces its
members), wherever it is first read: the package is inspected before the guard inflates
it. Memory stays at one read buffer. A legacy .xls is not compressed: its size is the
file's, bounded by `max_bytes` too.

For an xlsx package already in the usual layout (`overlap=True`), the guard runs on its
own thread while the native scanner reads the first sheet (it releases the GIL, and
bounds what it inflates by the same two limits): `Workbook.wait()` gives the guard's
verdict, and nothing else reads the package (calamine included) before it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import olefile

from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.formats import OLE_SIGNATURE, ZIP_SIGNATURE

from .opc import DAMAGED_ZIP, WorkbookPart, canonical_copy, locate_workbook, uses_1904_dates

__all__ = ["Workbook", "check_xlsx", "prepare_workbook"]

_READ = 1 << 20
# Small members (styles, relationship parts) compress extremely well and are harmless:
# the ratio test only applies past this many inflated bytes.
_RATIO_FLOOR = 1 << 20
_ODS_MIMETYPES = frozenset(
    {
        b"application/vnd.oasis.opendocument.spreadsheet",
        # A template (.ots): the same content; calamine reads it as it is.
        b"application/vnd.oasis.opendocument.spreadsheet-template",
    }
)


@dataclass(frozen=True, slots=True)
class Workbook:
    """A workbook ready for calamine."""

    path: Path
    """A file named for its kind (`workbook.xlsx`, `.xlsb`, `.xls`, `.ods`)."""
    kind: str
    date1904: bool
    """The workbook counts dates from 1904 (xlsx `workbookPr date1904`)."""
    checked: Future[None] | None = None
    """The bomb guard, still running (`prepare_workbook(overlap=True)`)."""

    def wait(self) -> None:
        """Returns once the guard passed the package; raises what it found."""
        if self.checked is not None:
            self.checked.result()


def prepare_workbook(
    fmt: str,
    path: Path,
    workdir: Path,
    *,
    max_bytes: int,
    max_ratio: int,
    overlap: bool = False,
) -> Workbook:
    """Checks `path` (a job of format `fmt`) and returns what calamine should open; with
    `overlap`, an xlsx package in the usual layout comes back with its guard still
    running (call `wait()` before anything but the native scanner reads it)."""
    with path.open("rb") as handle:
        magic = handle.read(8)
    if magic == OLE_SIGNATURE:
        return _ole(fmt, path, workdir, max_bytes)
    if not magic.startswith(ZIP_SIGNATURE):
        what = f"a {fmt} workbook (xlsx, xlsb and ods are zip, xls OLE2)"
        raise InvalidInput(f"content is not a zip archive or an OLE2 file: not {what}")
    with _open_zip(path, fmt) as archive, _zip_features(fmt), _readable_zip(fmt):
        usual = _usual_xlsx(archive) if overlap else None
        if usual is None:
            _check_members(archive, max_bytes, max_ratio)
            return _zipped(fmt, archive, path, workdir)
        date1904 = uses_1904_dates(archive, usual)
    checked = _guard_thread().submit(_check, path, fmt, max_bytes, max_ratio)
    return Workbook(_link(path, workdir, "xlsx"), "xlsx", date1904, checked)


@cache
def _guard_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="xlsx-guard")


def _usual_xlsx(archive: zipfile.ZipFile) -> WorkbookPart | None:
    """The workbook part of an xlsx package calamine opens as it stands (at
    `xl/workbook.xml`, no backslashes, not an ods); None for any other package."""
    if _opendocument(archive):
        return None
    workbook = locate_workbook(archive)
    if workbook is None or not workbook.canonical or workbook.path.endswith(".bin"):
        return None
    return workbook


def check_xlsx(path: Path, *, max_bytes: int, max_ratio: int) -> None:
    """The bomb guard alone (raises too_large / invalid_input; returns when fine)."""
    _check(path, "xlsx", max_bytes, max_ratio)


def _check(path: Path, fmt: str, max_bytes: int, max_ratio: int) -> None:
    with _open_zip(path, fmt) as archive, _zip_features(fmt):
        _check_members(archive, max_bytes, max_ratio)


def _open_zip(path: Path, fmt: str) -> zipfile.ZipFile:
    try:
        with _zip_features(fmt):
            archive = zipfile.ZipFile(path)
    except (*DAMAGED_ZIP, OSError) as err:
        raise InvalidInput(f"content is not a {fmt} workbook (not a zip archive: {err})") from err
    for info in archive.infolist():
        # A central directory whose stated offset is past where it really is makes zipfile
        # place every local header before the file's start: reading one would fail as an
        # OSError (EINVAL from seek), which is the file's fault, not the disk's. A member
        # flagged encrypted (zip encryption, which no spreadsheet writer uses; a flipped
        # bit) would fail as zipfile's RuntimeError "password required".
        if info.header_offset < 0:
            problem = "its central directory places it before the start of the file"
        elif info.flag_bits & 0x1:
            problem = "it is flagged as zip-encrypted"
        else:
            continue
        archive.close()
        raise InvalidInput(
            f"the {fmt} is not a readable zip archive: member {info.filename!r}: {problem}"
        )
    return archive


@contextmanager
def _readable_zip(fmt: str) -> Iterator[None]:
    """A member that cannot be read (DAMAGED_ZIP) while the package is inspected, before
    the bomb guard inflated it: invalid_input, not an untyped (transient) failure (found
    by the fault suite's hostile mutations: `transient: BadZipFile`)."""
    try:
        yield
    except DAMAGED_ZIP as err:
        raise InvalidInput(f"the {fmt} is not a readable zip archive: {err}") from err


@contextmanager
def _zip_features(fmt: str) -> Iterator[None]:
    """zipfile's NotImplementedError (a directory entry asking for a newer zip version than
    it reads, "zip file version 17.6"; a member in a compression method it lacks) is the
    file's, not a bug: unsupported, not transient (found by the fault suite)."""
    try:
        yield
    except NotImplementedError as err:
        raise Unsupported(f"{fmt} workbook needs a zip feature this reader lacks: {err}") from err


def _link(path: Path, workdir: Path, kind: str) -> Path:
    link = workdir / f"workbook.{kind}"
    link.unlink(missing_ok=True)
    link.symlink_to(path.resolve())
    return link


def _ole(fmt: str, path: Path, workdir: Path, max_bytes: int) -> Workbook:
    size = path.stat().st_size
    if size > max_bytes:
        raise TooLarge(f"{fmt} workbook of {size} bytes is over max_xlsx_bytes={max_bytes}")
    try:
        with olefile.OleFileIO(str(path)) as ole:
            encrypted = ole.exists("EncryptedPackage") or ole.exists("EncryptionInfo")
            legacy = ole.exists("Workbook") or ole.exists("Book")
    except OSError as err:
        raise InvalidInput(f"content is a damaged OLE2 compound file: {err}") from err
    if encrypted:
        raise Unsupported(
            "password-protected: the workbook is encrypted (an OLE2 EncryptedPackage); "
            "save it without a password to ingest it"
        )
    if not legacy:
        raise InvalidInput(
            "content is an OLE2 compound file without a Workbook stream (not a spreadsheet)"
        )
    return Workbook(_link(path, workdir, "xls"), "xls", date1904=False)


def _opendocument(archive: zipfile.ZipFile) -> bool:
    """An OpenDocument package (`mimetype` and `content.xml`), not an OPC one."""
    names = set(archive.namelist())
    return "content.xml" in names and "mimetype" in names


def _zipped(fmt: str, archive: zipfile.ZipFile, path: Path, workdir: Path) -> Workbook:
    if _opendocument(archive):
        if archive.read("mimetype").strip() not in _ODS_MIMETYPES:
            raise InvalidInput("content is an OpenDocument package that is not a spreadsheet")
        return Workbook(_link(path, workdir, "ods"), "ods", date1904=False)
    workbook = locate_workbook(archive)
    if workbook is None:
        raise InvalidInput(
            f"content is a zip archive without a workbook part (no officeDocument "
            f"relationship, no xl/workbook.xml), not an {fmt} workbook"
        )
    kind = "xlsb" if workbook.path.endswith(".bin") else "xlsx"
    date1904 = uses_1904_dates(archive, workbook)
    if workbook.canonical:
        return Workbook(_link(path, workdir, kind), kind, date1904)
    copy = canonical_copy(archive, workbook, workdir / f"workbook.{kind}")
    return Workbook(copy, kind, date1904)


def _check_members(archive: zipfile.ZipFile, max_bytes: int, max_ratio: int) -> None:
    total = 0
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
                        f"workbook inflates past {max_bytes} bytes (max_xlsx_bytes) at member "
                        f"{info.filename!r}: refused as a zip bomb"
                    )
                if produced > _RATIO_FLOOR and produced > max_ratio * max(info.compress_size, 1):
                    raise TooLarge(
                        f"workbook member {info.filename!r} inflates more than {max_ratio} "
                        f"times its compressed size (max_xlsx_ratio): refused as a zip bomb"
                    )
    except (*DAMAGED_ZIP, NotImplementedError, RuntimeError) as err:
        # Bad CRC, a stream shorter or longer than stated, encryption, unknown compression.
        raise InvalidInput(f"workbook member {info.filename!r} is damaged: {err}") from err
    return produced
