"""Word 97-2003 (.doc), PowerPoint 97-2003 (.ppt) and RTF documents: converted to DOCX or
PPTX by LibreOffice, then read by docling's DOCX and PPTX readers like any other.

docling itself converts these formats the same way (`convert_to_modern_format`). The
worker runs the conversion itself only to keep LibreOffice inside the job's life: docling
starts `soffice` in a session of its own, which the supervisor's kill of the worker's
process group (timeout, out of memory) would not reach. Here `soffice.bin` runs directly
(no launcher process in between), in the worker's process group, with the parent-death
signal set, and with docling's hardening: a throwaway profile per conversion seeded with
macros disabled and external links never updated, no restore, no dialogs.

The bytes are checked before LibreOffice sees them, because LibreOffice reads whatever
it is given (random bytes named .doc come out as a text document of garbage):

- `doc`: an OLE2 compound file with a WordDocument stream; Word's encryption flag set is
  `unsupported` (a password is needed). RTF or a DOCX zip saved under a .doc name is read
  as what it is.
- `ppt`: an OLE2 compound file with a "PowerPoint Document" stream (an EncryptedSummary
  stream means a password: `unsupported`). A PPTX zip under a .ppt name is read as PPTX.
- `rtf`: `{\\rtf` at the start.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from io import BytesIO
from pathlib import Path
from typing import NoReturn

import olefile
from docling.backend.docx.drawingml.utils import (
    LIBREOFFICE_HARDENING_FLAGS,
    _registrymodifications_xcu,
)

from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.children import pdeathsig_argv
from workers_common.formats import OLE_SIGNATURE, RTF_SIGNATURE, ZIP_SIGNATURE

__all__ = [
    "DEFAULT_MAX_CONVERT_SECS",
    "libreoffice_convert",
    "modern_bytes",
    "soffice_binary",
]

DEFAULT_MAX_CONVERT_SECS = 120
"""Wall time one LibreOffice conversion may take (a 300-page .doc converts in a few
seconds here); past it the conversion is killed and the job is too_large."""

_RESTART = 81
"""soffice.bin's exit code asking its launcher to start it again: it does so once, on
the first start with a new profile."""
_NAMES = {"doc": "a Word 97-2003 document", "ppt": "a PowerPoint 97-2003 presentation",
          "rtf": "an RTF document"}  # fmt: skip


def soffice_binary() -> str | None:
    """LibreOffice's `soffice.bin` (`DOCLING_LIBREOFFICE_CMD`, else `soffice` on PATH, its
    launcher followed to the program beside it); None when LibreOffice is not installed."""
    configured = os.environ.get("DOCLING_LIBREOFFICE_CMD") or shutil.which("soffice")
    if not configured:
        return None
    program = Path(configured).resolve()
    beside = program.with_name("soffice.bin")
    if beside.is_file():
        return str(beside)
    return str(program) if program.is_file() else None


def modern_bytes(data: bytes, fmt: str, max_seconds: int) -> tuple[bytes, str, str | None]:
    """(the bytes of the DOCX or PPTX the document becomes, that format, the converting
    program or None when the bytes already were that format)."""
    kind = _kind(data, fmt)
    if kind in ("docx", "pptx"):
        return data, kind, None  # a modern package under a legacy name: read as it is
    target = "pptx" if kind == "ppt" else "docx"
    return libreoffice_convert(data, kind, target, max_seconds), target, "libreoffice"


def _kind(data: bytes, fmt: str) -> str:
    """What the bytes are (doc, ppt, rtf, docx, pptx), or a typed refusal."""
    head = data[:8].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(RTF_SIGNATURE) and fmt in ("doc", "rtf"):
        return "rtf"
    if fmt == "rtf":
        raise InvalidInput("not an RTF document: it does not start with {\\rtf")
    if data.startswith(ZIP_SIGNATURE):
        return "docx" if fmt == "doc" else "pptx"
    if not data.startswith(OLE_SIGNATURE):
        raise InvalidInput(f"not {_NAMES[fmt]}: not an OLE2 compound file")
    try:
        with olefile.OleFileIO(BytesIO(data)) as ole:
            _check_streams(ole, fmt)
    except (OSError, ValueError, IndexError, EOFError) as err:  # olefile on a damaged file
        raise InvalidInput(f"not {_NAMES[fmt]}: a damaged compound file: {err}") from err
    return fmt


def _check_streams(ole: olefile.OleFileIO, fmt: str) -> None:
    """The compound file holds Word's (or PowerPoint's) document stream, unencrypted."""
    if fmt == "doc":
        if not ole.exists("WordDocument"):
            raise InvalidInput(f"not {_NAMES[fmt]}: no WordDocument stream")
        fib = ole.openstream("WordDocument").read(12)
        # FIB base: bit fEncrypted (0x0100) of the flags word at offset 10.
        if len(fib) == 12 and int.from_bytes(fib[10:12], "little") & 0x0100:
            raise Unsupported("password-protected: the Word document is encrypted")
        return
    if not ole.exists("PowerPoint Document"):
        raise InvalidInput(f"not {_NAMES[fmt]}: no 'PowerPoint Document' stream")
    if ole.exists("EncryptedSummary"):
        raise Unsupported("password-protected: the presentation is encrypted")


def libreoffice_convert(data: bytes, kind: str, target: str, max_seconds: int) -> bytes:
    """`data`, a file of format `kind` (its extension), saved as `target` by LibreOffice."""
    what = _NAMES.get(kind, f"a .{kind} file")
    program = soffice_binary()
    if program is None:
        raise Unsupported(
            f"converting {what} needs LibreOffice (soffice), which is not installed"
            " on this host (scripts/system-deps.sh installs it)"
        )
    with tempfile.TemporaryDirectory(prefix="telha-soffice-") as tmp:
        profile = Path(tmp, "profile")
        (profile / "user").mkdir(parents=True)
        (profile / "user" / "registrymodifications.xcu").write_text(
            _registrymodifications_xcu(), encoding="utf-8"
        )
        source = Path(tmp, f"input.{kind}")
        source.write_bytes(data)
        out = Path(tmp, "out")
        argv = [
            *pdeathsig_argv(),
            program,
            f"-env:UserInstallation={profile.as_uri()}",
            *LIBREOFFICE_HARDENING_FLAGS,
            "--convert-to",
            target,
            "--outdir",
            str(out),
            str(source),
        ]
        # Nothing of LibreOffice's lands in the real home. A .doc keeps its dates in UTC
        # and LibreOffice writes them out in the local zone: UTC and one locale make the
        # output the same on every host.
        env = {**os.environ, "HOME": tmp, "TZ": "UTC", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        for _ in range(2):  # once more after the first start's restart request
            try:
                done = subprocess.run(
                    argv, stdin=subprocess.DEVNULL, capture_output=True, env=env,
                    timeout=max_seconds, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired as err:
                raise TooLarge(
                    f"LibreOffice did not convert {what} within max_convert_secs={max_seconds}"
                ) from err
            if done.returncode != _RESTART:
                break
        converted = out / f"input.{target}"
        if not converted.is_file():
            said = (done.stderr or done.stdout or b"").decode("utf-8", "replace").strip()
            _refuse(what, done.returncode, said)
        return converted.read_bytes()


def _refuse(what: str, code: int, said: str) -> NoReturn:
    """Why LibreOffice made nothing, typed: out of memory under the worker's address-space
    limit (C++'s bad_alloc, or killed) is too_large; anything else, a crash on the input
    included, is invalid_input."""
    detail = f": {said[-200:]}" if said else ""
    if "bad_alloc" in said or code == -signal.SIGKILL:
        raise TooLarge(f"LibreOffice ran out of memory converting {what} (exit {code}{detail})")
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        raise InvalidInput(f"LibreOffice crashed on {what} ({name}{detail})")
    raise InvalidInput(f"LibreOffice could not load {what} (exit {code}{detail})")
