"""Word and PowerPoint 97-2003 and RTF documents: LibreOffice makes them DOCX/PPTX, docling's
readers read those (legacy.py); the packages python-docx and python-pptx refuse by content
type (macro-enabled, templates, shows); web pages saved as MHTML (mhtml.py). The inputs are
made by code: our DOCX and PPTX saved in the old formats by LibreOffice (as Save As would),
RTF as WordPad writes it, MHTML as Chrome does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import olefile
import pytest
from docling.datamodel.document import InputDocument

from docling_worker import handle
from docling_worker.convert import _BACKENDS, _open
from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.conformance import run_handler

import docling_corpus as corpus


def project(tmp_path: Path, data: bytes, fmt: str, name: str | None = None) -> dict[str, Any]:
    path = tmp_path / (name or f"input.{fmt}")
    path.write_bytes(data)
    (sub,) = run_handler(handle, path, format=fmt, name=path.name, options={})
    result: dict[str, Any] = json.loads(sub)
    return result


def document(sub: dict[str, Any]) -> dict[str, Any]:
    (found,) = [n for n in sub["nodes"] if "DOCUMENT" in n["labels"]]
    props: dict[str, Any] = found["properties"]
    return props


def labels(sub: dict[str, Any]) -> set[str]:
    return {label for n in sub["nodes"] for label in n["labels"]}


@pytest.fixture(scope="module")
def report_doc() -> bytes:
    return corpus.saved_by_libreoffice(corpus.report_docx(), "docx", "doc")


def test_word_97_document_reads_like_the_docx_it_was(tmp_path: Path, report_doc: bytes) -> None:
    sub = project(tmp_path, report_doc, "doc")
    text = sub["canonicalText"]
    for piece in ("1 Parties", "effective as of 1 March 2026", "Widgets", "Invoice", "Gadget"):
        assert piece in text
    assert {"SECTION", "LIST", "LIST_ITEM", "TABLE"} <= labels(sub)
    props = document(sub)
    assert props["source_format"] == "doc"
    assert (props["read_as"], props["converted_by"]) == ("docx", "libreoffice")
    assert props["title"] == "Supply agreement"
    assert props["authors"] == ["Erin Example"]
    assert props["created"] == "2026-02-20T12:00:00+00:00"


def test_powerpoint_97_deck_reads_like_the_pptx_it_was(tmp_path: Path) -> None:
    deck = corpus.saved_by_libreoffice(corpus.deck_pptx(), "pptx", "ppt")
    sub = project(tmp_path, deck, "ppt")
    text = sub["canonicalText"]
    for piece in ("Quarterly review", "Revenue up 12%", "Two new regions", "North", "120"):
        assert piece in text
    assert "TABLE" in labels(sub)
    props = document(sub)
    assert (props["source_format"], props["read_as"], props["page_count"]) == ("ppt", "pptx", 3)


def test_rtf_from_wordpad_keeps_its_characters_table_and_list(tmp_path: Path) -> None:
    sub = project(tmp_path, corpus.LETTER_RTF, "rtf")
    text = sub["canonicalText"]
    assert "The café on the quay opens on 12 May 2026 — bring the keys." in text
    assert "\n- Check the pumps\n" in text  # WordPad's bullet paragraph is a list item
    assert {"TABLE", "PARAGRAPH", "LIST_ITEM"} <= labels(sub)
    (table,) = [n for n in sub["nodes"] if "TABLE" in n["labels"]]
    assert table["properties"]["header"] == ["Room", "Keys"]
    assert table["properties"]["rows"] == [["Hall", "2"]]
    assert document(sub)["read_as"] == "docx"


def test_rtf_saved_by_word_processor_reads_like_the_docx(tmp_path: Path) -> None:
    rtf = corpus.saved_by_libreoffice(corpus.report_docx(), "docx", "rtf")
    assert rtf.startswith(b"{\\rtf")
    sub = project(tmp_path, rtf, "rtf")
    assert "effective as of 1 March 2026" in sub["canonicalText"]
    assert document(sub)["title"] == "Supply agreement"


def test_rtf_or_docx_under_a_doc_name_is_read_as_what_it_is(
    tmp_path: Path, report_doc: bytes
) -> None:
    rtf = project(tmp_path, corpus.LETTER_RTF, "doc", name="letter.doc")
    assert "Check the pumps" in rtf["canonicalText"]
    assert document(rtf)["converted_by"] == "libreoffice"
    docx = project(tmp_path, corpus.report_docx(), "doc", name="report.doc")
    assert "Widgets" in docx["canonicalText"]
    assert document(docx)["read_as"] == "docx"
    assert "converted_by" not in document(docx)


def test_the_same_bytes_give_the_same_submission_in_any_zone(report_doc: bytes) -> None:
    """A .doc keeps its dates in UTC and LibreOffice writes them in the local zone: the
    worker runs it in UTC, so the submission does not depend on the host's zone."""
    code = (
        "import sys, hashlib; from pathlib import Path\n"
        "from workers_common.conformance import run_handler\n"
        "subs = run_handler('docling_worker:handle', Path(sys.argv[1]), format='doc')\n"
        "print(hashlib.sha256(b''.join(subs)).hexdigest())\n"
    )
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"zones-{os.getpid()}.doc"
    path.write_bytes(report_doc)
    try:
        digests = {
            subprocess.run(
                [sys.executable, "-c", code, str(path)],
                env={**os.environ, "TZ": zone, "PYTHONHASHSEED": seed},
                capture_output=True,
                text=True,
                check=True,
                timeout=300,
            ).stdout.strip()
            for zone, seed in (("UTC", "1"), ("Asia/Tokyo", "2"), ("America/New_York", "3"))
        }
    finally:
        path.unlink()
    assert len(digests) == 1


@pytest.mark.parametrize(
    ("fmt", "data", "kind", "says"),
    [
        ("doc", b"\x00\x01 random bytes named .doc" * 40, InvalidInput, "not an OLE2"),
        ("ppt", b"plain text named .ppt", InvalidInput, "not an OLE2"),
        ("rtf", b"plain text named .rtf", InvalidInput, "does not start with {\\rtf"),
        ("rtf", b"{\\rtf1 cut short {\\b", InvalidInput, "could not load"),
    ],
    ids=["doc-random", "ppt-text", "rtf-text", "rtf-cut-short"],
)
def test_what_is_not_the_format_is_refused_typed(
    tmp_path: Path, fmt: str, data: bytes, kind: type[Exception], says: str
) -> None:
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(data)
    with pytest.raises(kind, match=says.replace("{", r"\{").replace("\\r", r"\\r")):
        run_handler(handle, path, format=fmt, options={})


def test_a_deck_named_doc_is_refused_before_libreoffice_sees_it(tmp_path: Path) -> None:
    deck = corpus.saved_by_libreoffice(corpus.deck_pptx(), "pptx", "ppt")
    path = tmp_path / "deck.doc"
    path.write_bytes(deck)
    with pytest.raises(InvalidInput, match="no WordDocument stream"):
        run_handler(handle, path, format="doc", options={})


def test_an_encrypted_word_document_is_unsupported(tmp_path: Path, report_doc: bytes) -> None:
    path = tmp_path / "locked.doc"
    path.write_bytes(report_doc)
    with olefile.OleFileIO(str(path), write_mode=True) as ole:
        fib = bytearray(ole.openstream("WordDocument").read())
        fib[11] |= 0x01  # FIB flags word at offset 10: fEncrypted is bit 8
        ole.write_stream("WordDocument", bytes(fib))
    with pytest.raises(Unsupported, match="password-protected"):
        run_handler(handle, path, format="doc", options={})


def test_without_libreoffice_the_job_is_unsupported(
    tmp_path: Path, report_doc: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCLING_LIBREOFFICE_CMD", str(tmp_path / "no-such-soffice"))
    path = tmp_path / "report.doc"
    path.write_bytes(report_doc)
    with pytest.raises(Unsupported, match="needs LibreOffice"):
        run_handler(handle, path, format="doc", options={})


def _processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and b"soffice" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("whole_group", [True, False], ids=["group-killed", "worker-killed"])
def test_libreoffice_dies_with_the_worker(tmp_path: Path, whole_group: bool) -> None:
    """The supervisor SIGKILLs a worker's process group on a timeout or OOM; a LibreOffice
    converting for it must not live on (docling's own runner starts it in a session of its
    own, out of the group's reach). A stand-in worker converts a long document and is
    killed while LibreOffice runs: with its group, or alone (the parent-death signal)."""
    scratch = tmp_path / "worker-tmp"
    scratch.mkdir()
    source = tmp_path / "long.rtf"
    lines = (
        b"\\pard Line %d of the minutes, long enough to fill.\\par " % n for n in range(200_000)
    )
    source.write_bytes(b"{\\rtf1\\ansi " + b"".join(lines) + b"}")
    code = (
        "import sys; from pathlib import Path\n"
        "from docling_worker.legacy import libreoffice_convert\n"
        "libreoffice_convert(Path(sys.argv[1]).read_bytes(), 'rtf', 'docx', 600)\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", code, str(source)],
        env={**os.environ, "TMPDIR": str(scratch)},
        start_new_session=True,  # a group of its own, as the supervisor spawns workers
    )
    deadline = time.monotonic() + 60
    while not _processes_mentioning(str(scratch)) and time.monotonic() < deadline:
        assert worker.poll() is None, "the conversion ended before LibreOffice was seen"
        time.sleep(0.05)
    assert _processes_mentioning(str(scratch)), "LibreOffice never started"
    time.sleep(0.5)  # past its restart on a new profile, into the conversion
    if whole_group:
        os.killpg(worker.pid, signal.SIGKILL)
    else:
        worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _processes_mentioning(str(scratch)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_mentioning(str(scratch)) == []


@pytest.mark.parametrize("fmt", ["docx", "pptx"])
def test_docx_and_pptx_readers_never_start_libreoffice_for_pictures(fmt: str) -> None:
    """With LibreOffice installed, docling renders each DrawingML shape, chart and EMF/WMF
    picture of a DOCX or PPTX through a LibreOffice run (a second each, in a session the
    supervisor cannot kill); the projection keeps no pixels, so the worker tells the
    backends no converter is at hand. Fails when docling renames its flags."""
    data = corpus.report_docx() if fmt == "docx" else corpus.deck_pptx()
    input_format, backend_class, filename = _BACKENDS[fmt]
    plain = InputDocument(
        path_or_stream=BytesIO(data), format=input_format, backend=backend_class, filename=filename
    )._backend
    converter = f"{fmt}_to_pdf_converter"
    assert getattr(plain, f"{converter}_init") is False  # docling looks for one lazily
    _document, backend = _open(data, fmt)
    assert getattr(backend, converter) is None
    assert getattr(backend, f"{converter}_init") is True


_WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml"
_SLIDES = "application/vnd.openxmlformats-officedocument.presentationml"


@pytest.mark.parametrize(
    ("fmt", "variant"),
    [
        ("docx", "application/vnd.ms-word.document.macroEnabled.main+xml"),
        ("docx", f"{_WORD}.template.main+xml"),
        ("docx", "application/vnd.ms-word.template.macroEnabledTemplate.main+xml"),
        ("pptx", f"{_SLIDES}.slideshow.main+xml"),
        ("pptx", f"{_SLIDES}.template.main+xml"),
        ("pptx", "application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml"),
        ("pptx", "application/vnd.ms-powerpoint.template.macroEnabled.main+xml"),
        ("pptx", "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml"),
    ],
    ids=["docm", "dotx", "dotm", "ppsx", "potx", "ppsm", "potm", "pptm"],
)
def test_macro_enabled_template_and_show_packages_read_as_documents(
    tmp_path: Path, fmt: str, variant: str
) -> None:
    """python-docx and python-pptx refuse these for their main part's content type, though
    the part is the plain document's: they were invalid_input."""
    if fmt == "docx":
        plain, data = f"{_WORD}.document.main+xml", corpus.report_docx()
    else:
        plain, data = f"{_SLIDES}.presentation.main+xml", corpus.deck_pptx()
    sub = project(tmp_path, corpus.with_main_part_type(data, plain, variant), fmt)
    expected = "effective as of 1 March 2026" if fmt == "docx" else "Revenue up 12%"
    assert expected in sub["canonicalText"]


@pytest.mark.parametrize("fmt", ["odt", "odp"])
def test_opendocument_templates_read_as_documents(tmp_path: Path, fmt: str) -> None:
    """odfdo refuses an `.ott` or `.otp` for its `mimetype` (`text-template`, not `text`),
    though its content is a text's or a presentation's: they were invalid_input."""
    data = corpus.report_odt() if fmt == "odt" else corpus.deck_odp()
    sub = project(tmp_path, corpus.as_odf_template(data), fmt)
    expected = "effective as of 1 March 2026" if fmt == "odt" else "Revenue up 12%"
    assert expected in sub["canonicalText"]


@pytest.mark.parametrize("fmt", ["odt", "odp"])
def test_flat_opendocument_reads_as_its_package(tmp_path: Path, fmt: str) -> None:
    """LibreOffice's flat XML (.fodt, .fodp) is one XML file; it was refused as "not a
    zip archive"."""
    data = corpus.report_odt() if fmt == "odt" else corpus.deck_odp()
    flat = corpus.as_flat_odf(data)
    assert flat.startswith(b"<?xml")
    assert (
        project(tmp_path, flat, fmt)["canonicalText"]
        == project(tmp_path, data, fmt)["canonicalText"]
    )


@pytest.mark.parametrize(
    "doctype",
    [
        b'<!DOCTYPE office:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        b'<!DOCTYPE office:document [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(
            b'<!ENTITY a%d "%s">' % (i, (b"&a%d;" % (i - 1) if i > 1 else b"&a;") * 10)
            for i in range(1, 10)
        )
        + b"]>",
    ],
    ids=["external-entity", "entity-bomb"],
)
def test_a_flat_opendocument_with_entities_is_invalid_input(tmp_path: Path, doctype: bytes) -> None:
    """The flat XML goes to odfdo's parser whole: an external entity (a local file) or an
    entity bomb in it is refused, never expanded."""
    flat = corpus.as_flat_odf(corpus.report_odt())
    declaration, _, rest = flat.partition(b"?>")
    reference = b"&x;" if b"SYSTEM" in doctype else b"&a9;"
    body = rest.replace(b"This agreement is made", reference + b" This agreement is made", 1)
    assert body != rest
    path = tmp_path / "hostile.fodt"
    path.write_bytes(declaration + b"?>" + doctype + body)
    with pytest.raises(InvalidInput, match="not a readable ODT file"):
        run_handler(handle, path, format="odt", options={})


def test_opendocument_styles_in_foreign_namespaces_are_read(tmp_path: Path) -> None:
    """odfdo raised ValueError ("URI 'http://www.w3.org/2000/svg' not found") for a style
    attribute in a namespace it does not list, and docling reads every style's attributes:
    26 of LibreOffice's own 79 text templates (which declare `svg:` as W3C's SVG
    namespace) were invalid_input."""
    from hostile import replaced

    data = corpus.report_odt()
    content = zipfile.ZipFile(BytesIO(data)).read("content.xml").decode()
    content = content.replace(
        "<office:document-content ",
        '<office:document-content xmlns:w3svg="http://www.w3.org/2000/svg"'
        ' xmlns:acme="http://example.com/acme/1.0" ',
        1,
    )
    content = content.replace(
        "<office:automatic-styles/>",
        '<office:automatic-styles><style:style style:name="T1" style:family="text">'
        '<style:text-properties w3svg:font-family="Serif" acme:shade="2"'
        ' fo:font-weight="bold"/></style:style></office:automatic-styles>',
        1,
    )
    content = content.replace(
        "<text:p>This agreement is made",
        '<text:p><text:span text:style-name="T1">Note:</text:span> This agreement is made',
        1,
    )
    sub = project(tmp_path, replaced(data, "content.xml", content.encode()), "odt")
    assert "Note: This agreement is made between Alpha Ltd and Beta GmbH." in sub["canonicalText"]


def test_a_styles_only_opendocument_template_is_an_empty_document(tmp_path: Path) -> None:
    """LibreOffice's Default.ott, Simple.ott and Modern.ott hold no content.xml (styles,
    meta and a thumbnail): a document of no text, titled from meta.xml, not a failure.
    A document (not a template) without content.xml stays invalid_input."""
    template = corpus.as_odf_template(corpus.report_odt())
    sub = project(tmp_path, corpus.with_members(template, {"content.xml": None}), "odt")
    assert sub["canonicalText"] == ""
    assert document(sub)["title"] == "Supply agreement"
    path = tmp_path / "damaged.odt"
    path.write_bytes(corpus.with_members(corpus.report_odt(), {"content.xml": None}))
    with pytest.raises(InvalidInput, match=r"has no content\.xml"):
        run_handler(handle, path, format="odt", options={})


def test_saved_web_page_mhtml_reads_its_page_in_the_part_charset(tmp_path: Path) -> None:
    """The root page is read as HTML in the charset its MIME part names (windows-1252: the
    euro sign, a C1 control in ISO-8859-1), not the page's stale `<meta charset>`; the
    address it was saved from is the DOCUMENT's `url`."""
    sub = project(tmp_path, corpus.saved_page_mhtml(), "mhtml")
    text = sub["canonicalText"]
    assert "Open 8-18 from 2 May 2026, coffee €2." in text
    assert "- Crêpe" in text
    props = document(sub)
    assert (props["title"], props["url"]) == ("Café hours", "https://example.com/cafe/hours")
    assert props["source_format"] == "mhtml"


@pytest.mark.parametrize(
    "data",
    [b"just text, no MIME header", b"Content-Type: multipart/related; boundary=b\r\n\r\n--b--"],
    ids=["no-header", "no-page"],
)
def test_mhtml_without_a_page_is_invalid_input(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "page.mhtml"
    path.write_bytes(data)
    with pytest.raises(InvalidInput, match="not an MHTML archive"):
        run_handler(handle, path, format="mhtml", options={})


@pytest.mark.parametrize(
    ("script", "options", "kind", "says"),
    [
        (
            "echo \"terminate called after throwing an instance of 'std::bad_alloc'\" >&2\n"
            "kill -ABRT $$\n",
            {},
            TooLarge,
            "ran out of memory",
        ),
        ("kill -SEGV $$\n", {}, InvalidInput, "crashed on an RTF document \\(SIGSEGV"),
        ("exec sleep 30\n", {"max_convert_secs": 1}, TooLarge, "within max_convert_secs=1"),
    ],
    ids=["bad-alloc", "crash", "hang"],
)
def test_libreoffice_failing_is_typed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    script: str,
    options: dict[str, Any],
    kind: type[Exception],
    says: str,
) -> None:
    """A LibreOffice that runs out of memory under the worker's address-space limit, crashes
    on the input or hangs (a stand-in program doing just that): too_large, invalid_input,
    too_large past `max_convert_secs`, and nothing left running."""
    fake = tmp_path / "fake-soffice"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setenv("DOCLING_LIBREOFFICE_CMD", str(fake))
    path = tmp_path / "letter.rtf"
    path.write_bytes(corpus.LETTER_RTF)
    started = time.monotonic()
    with pytest.raises(kind, match=says):
        run_handler(handle, path, format="rtf", options=options)
    assert time.monotonic() - started < 20
    assert _processes_mentioning(str(fake)) == []
