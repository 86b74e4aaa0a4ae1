"""workers_common.formats: the one table of file formats the email, web and code workers
route child jobs by."""

from __future__ import annotations

import pytest

from workers_common.formats import (
    MEDIA_TYPES,
    ROUTABLE_FORMATS,
    by_name,
    detect_format,
    routed_formats,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("docs/Guide.MD", "md"),
        ("paper.pdf", "pdf"),
        ("a/b/slides.pptx", "pptx"),
        ("thesis.tex", "latex"),
        ("index.rst", "txt"),
        ("README", "txt"),
        ("pkg/LICENSE-MIT", "txt"),
        ("CHANGELOG", "txt"),
        ("Makefile", None),
        (".md", None),  # a hidden file named like an extension
        ("archive.tar.gz", None),
        ("C:\\Users\\me\\report.docx", "docx"),
    ],
)
def test_by_name(name: str, expected: str | None) -> None:
    assert by_name(name) == expected


@pytest.mark.parametrize(
    ("filename", "content_type", "data", "expected"),
    [
        ("deck.pptx", "", b"PK\x03\x04rest", "pptx"),
        ("deck.pptx", "", b"plain text", None),
        ("book.epub", "", b"PK\x03\x04rest", "epub"),
        ("paper.tex", "", b"\\documentclass{article}", "latex"),
        ("paper.tex", "", b"\x00\x01binary", None),
        ("download", "application/vnd.oasis.opendocument.text", b"PK\x03\x04", "odt"),
        ("scan.bin", "", b"%PDF-1.7 rest", "pdf"),  # the signature wins over the name
        ("README", "", b"Hello\n", "txt"),
        ("README", "", b"\x00\x00", None),
        ("scan.PNG", "", b"\x89PNG\r\n\x1a\nrest", "image"),
        ("photo.jpg", "", b"\xff\xd8\xff\xe0rest", "image"),
        ("fax.tiff", "", b"II*\x00rest", "image"),
        ("download", "image/webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image"),
        ("photo.jpg", "", b"<html>not a photo</html>", None),
        # Word/PowerPoint 97-2003 are OLE2; Word also saves RTF under a .doc name.
        ("memo.DOC", "", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "doc"),
        ("memo.doc", "", b"{\\rtf1\\ansi text}", "doc"),
        ("memo.doc", "", b"<html><body>a web page saved as .doc</body></html>", None),
        ("talk.pps", "", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "ppt"),
        ("download", "text/rtf", b"{\\rtf1\\ansi text}", "rtf"),
        ("download", "application/msword", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "doc"),
        ("letter.rtf", "", b"plain text", None),
        ("macros.DOCM", "", b"PK\x03\x04rest", "docx"),
        # OpenDocument templates are the text's, presentation's and spreadsheet's packages.
        ("letter.OTT", "", b"PK\x03\x04rest", "odt"),
        ("deck.otp", "", b"PK\x03\x04rest", "odp"),
        ("budget.ots", "", b"PK\x03\x04rest", "ods"),
        ("invoice.xltx", "", b"PK\x03\x04rest", "xlsx"),
        # LibreOffice's flat XML of a text or presentation: one XML file.
        ("notes.fodt", "", b'<?xml version="1.0"?>\n<office:document office:version="1.3">', "odt"),
        ("deck.FODP", "", b"<office:document xmlns:office='urn:x'>", "odp"),
        ("notes.fodt", "", b"PK\x03\x04 a package under a flat name", "odt"),
        ("notes.fodt", "", b"plain text", None),
        ("download", "application/vnd.oasis.opendocument.text-template", b"PK\x03\x04", "odt"),
        ("saved.mht", "", b"From: <Saved by Blink>\r\nContent-Type: multipart/related", "mhtml"),
        ("saved.mht", "", b"PK\x03\x04 a zip named .mht", None),
        (
            "download",
            "application/vnd.ms-powerpoint.slideshow.macroEnabled.12",
            b"PK\x03\x04",
            "pptx",
        ),
    ],
)
def test_detect_format(filename: str, content_type: str, data: bytes, expected: str | None) -> None:
    route = detect_format(filename, content_type, data)
    assert route.format == expected
    assert route.reason


def test_routed_formats_come_from_one_variable() -> None:
    assert routed_formats("X", {}) == ROUTABLE_FORMATS
    assert routed_formats("X", {"X": " PDF, md,bogus,"}) == {"pdf", "md"}
    assert routed_formats("X", {"X": ""}) == frozenset()
    assert routed_formats("X", {"X": "pdf,csv"}, frozenset({"csv"})) == {"csv"}


def test_every_routable_format_is_one_the_core_knows() -> None:
    import re
    from pathlib import Path

    config = (Path(__file__).resolve().parents[3] / "src" / "config.rs").read_text()
    block = config.split("pub const BUILTIN_FORMATS", 1)[1].split("];", 1)[0]
    builtin = set(re.findall(r'"([^"]+)"', block))
    assert builtin >= ROUTABLE_FORMATS
    assert set(MEDIA_TYPES.values()) <= ROUTABLE_FORMATS
