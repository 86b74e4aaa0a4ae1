"""Every hostile input (hostile.HOSTILE) ends as the typed permanent failure it should, or
as a submission that passes the conformance checks, within a bounded time; and a good
document converts in the same process right after it (nothing is left broken)."""

from __future__ import annotations

import codecs
import io
import json
import zipfile
from pathlib import Path

import pytest

from docling_worker import handle
from workers_common import InvalidInput, WorkerFailure
from workers_common.conformance import check_submissions, run_handler

import docling_corpus as corpus
from hostile import HOSTILE, epub_external_entity, epub_traversal, replaced
from hostile import zero_pages as hostile_zero_pages


def outcome(path: Path, fmt: str) -> str:
    """The failure's kind ("!kind" when it is not permanent or says nothing), or "ok"."""
    try:
        subs = run_handler(handle, path, format=fmt, name=path.name, options={})
    except WorkerFailure as failure:
        good = failure.permanent and bool(str(failure))
        return failure.kind if good else f"!{failure.kind}: {failure}"
    check_submissions(subs)
    return "ok"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_gets_its_typed_outcome(name: str, tmp_path: Path) -> None:
    fmt, make, expected = HOSTILE[name]
    path = tmp_path / f"{name}.{fmt}"
    path.write_bytes(make())
    assert outcome(path, fmt) in expected.split("|")
    # The same process converts a good document right after.
    good = tmp_path / "good.pdf"
    good.write_bytes(corpus.simple_pdf())
    sub = json.loads(run_handler(handle, good, format="pdf", name="good.pdf", options={})[0])
    assert "Sample memo" in sub["canonicalText"]


def test_at_least_twenty_hostile_inputs() -> None:
    assert len(HOSTILE) >= 20


@pytest.mark.parametrize(
    ("fmt", "data", "words"),
    [
        ("pdf", corpus.encrypted_pdf(), "encrypted"),
        ("docling", b'{"schema_name": "DoclingDocument", "name": 5}', "does not validate"),
        ("docling", b'{"name": "x", "rows": [1, 2,]}', "not valid JSON"),
        ("docling", b"\xff\xfe\x00{\x00\xd8", "not valid JSON"),
        ("docling", b"  \n", "the file is empty"),
        ("docling", b"[" + b"1, " * 90_001 + b"1]", "over|more than max_elements"),
        ("odt", corpus.deck_odp(), "Expected an OpenDocument 'text'"),
        (
            "odt",
            replaced(corpus.report_odt(), "content.xml", b"<x"),
            "damaged part: XMLSyntaxError",
        ),
        ("epub", b"text", "EPUB files are zip archives"),
    ],
)
def test_failure_says_what_is_wrong(fmt: str, data: bytes, words: str, tmp_path: Path) -> None:
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(data)
    with pytest.raises(WorkerFailure, match=words):
        run_handler(handle, path, format=fmt, name=path.name, options={})


def test_max_pages_option(tmp_path: Path) -> None:
    path = tmp_path / "five.pdf"
    path.write_bytes(corpus.pages_pdf(5))
    with pytest.raises(WorkerFailure, match="5 pages, over max_pages=4") as caught:
        run_handler(handle, path, format="pdf", name="five.pdf", options={"max_pages": 4})
    assert caught.value.kind == "too_large"
    run_handler(handle, path, format="pdf", name="five.pdf", options={"max_pages": 5})


def test_broken_pdf_after_encrypted_one_is_invalid_not_encrypted(tmp_path: Path) -> None:
    # PDFium keeps its last error per thread: the encrypted file's "password" error must
    # not be reported for the broken file that follows it.
    encrypted, empty = tmp_path / "e.pdf", tmp_path / "z.pdf"
    encrypted.write_bytes(corpus.encrypted_pdf())
    empty.write_bytes(hostile_zero_pages())
    assert outcome(encrypted, "pdf") == "unsupported"
    assert outcome(empty, "pdf") == "invalid_input"


def test_html_text_over_the_cap_is_refused_before_conversion_and_markup_is_not_text() -> None:
    """Over max_text_bytes of visible text → too_large from the guard; a file as large whose
    bulk is scripts, comments, tags or blank space passes it (the converter decides)."""
    from docling_worker.guards import check_html, html_text_floor
    from workers_common import SUBMISSION_CAPS, TooLarge

    cap = SUBMISSION_CAPS["max_text_bytes"]
    text = b"<p>" + b"word " * (cap // 4 + 1) + b"</p>"
    assert html_text_floor(text) == 4 * (cap // 4 + 1)
    with pytest.raises(TooLarge, match="max_text_bytes"):
        check_html(text, max_depth=250, max_elements=200_000)
    bulk = cap // 4
    markup = (
        b"<html><head><script>" + b"var x = 1;" * (bulk // 10) + b"</script>"
        b"<style>"
        + b"p{a:b}" * (bulk // 6)
        + b"</style></head><body><!--"
        + b"c" * bulk
        + b"-->"
        + b"<br/>" * 1000
        + b"&amp;" * (bulk // 5)
        + b" \n" * (bulk // 2)
        + b"<p>short</p></body></html>"
    )
    assert len(markup) > cap
    assert html_text_floor(markup) == bulk // 5 + len(b"short")
    check_html(markup, max_depth=250, max_elements=200_000)
    utf16 = "<p>word</p>".encode("utf-16") * (cap // 20)
    assert len(utf16) > cap
    check_html(utf16, max_depth=250, max_elements=200_000)


def _submissions_text(subs: list[bytes]) -> str:
    return "".join(json.loads(sub).get("canonicalText", "") for sub in subs)


def test_html_with_omitted_end_tags_converts_as_a_browser_reads_it(tmp_path: Path) -> None:
    """Generated reports leave out `</li>` by the thousand (a jtreg report: 5,973 items); the
    depth guard read each item as nested in the one before and refused the page. The end
    tags are now written in before docling parses (as docling's own fix-up would place
    them, which it does in quadratic time): the page converts, every item a list item."""
    items = 3000
    page = (
        b"<html><body><h1>Tests that passed</h1><ul>\n"
        + b"".join(b'<li>\n<a href="t%d.jtr">test %d</a>: passed\n' % (i, i) for i in range(items))
        + b"</ul><dl><dt>term<dd>one<dd>two</dl>"
        + b"<table><tr><th>a<th>b<tr><td>1<td>2</table></body></html>"
    )
    path = tmp_path / "passed_gr.html"
    path.write_bytes(page)
    subs = run_handler(handle, path, format="html", name=path.name, options={})
    check_submissions(subs)
    text = _submissions_text(subs)
    assert all(f"test {i}: passed" in text for i in (0, 1, items // 2, items - 1))
    labels = [n["labels"] for sub in subs for n in json.loads(sub).get("nodes", [])]
    assert sum("LIST_ITEM" in ls for ls in labels) >= items


def test_comments_in_a_paragraph_around_a_block_are_not_text(tmp_path: Path) -> None:
    """docling's HTML reader turns comments into text when it splits a `<p>` that holds a
    block (a table, a list). Word's "Web Page" and MHTML files keep VML drawings in
    conditional comments inside such paragraphs: pages of markup and base64 came out as
    the document's text. The guard cuts comments (and Word's `<![if]>` markers) out."""
    page = (
        b'<html><body><p class=MsoNormal><!--[if gte vml 1]><v:shape id=t1 o:gfxdata="'
        + b"UEsDBBQABgAIAAAAIQC2gziS" * 40
        + b'"><v:textbox>drawing</v:textbox></v:shape><![endif]--><![if !vml]>'
        b"<table><tr><td>Kept cell</td></tr></table><![endif]>Kept text</p></body></html>"
    )
    path = tmp_path / "word.htm"
    path.write_bytes(page)
    (sub,) = run_handler(handle, path, format="html", name=path.name, options={})
    text = json.loads(sub)["canonicalText"]
    assert "Kept cell" in text
    assert "Kept text" in text
    for junk in ("gfxdata", "UEsDB", "v:shape", "if gte", "endif", "if !vml"):
        assert junk not in text


def test_writing_in_omitted_end_tags_changes_nothing_docling_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end tags the guard writes in are where docling's own fix-up puts them: the same
    submissions with and without them (lists, definition lists, tables, a `<li>` inside a
    nested list and one inside a script)."""
    from docling_worker.guards import check_html, html_shape

    page = (
        b"<html><body><ul><li>a<li>b<ul><li>b1<li>b2</ul><li>c<div>in c<li>d</div></ul>"
        b"<ol><li>one<li>two</ol><dl><dt>t1<dd>d1<dt>t2<dd>d2</dl>"
        b"<table><thead><tr><th>h1<th>h2<tbody><tr><td>1<td>2<tr><td>3<td>4</table>"
        b'<script>var s = "<li>x<li>y";</script><!-- <li>z --><p>end</p></body></html>'
    )
    shape = html_shape(page, 250)
    end_tags = [(start, end) for start, end, added in shape.edits if added]
    assert end_tags
    assert shape.depth < 10
    assert all(start < page.index(b"<script>") for start, _ in end_tags)
    (comment,) = [(start, end) for start, end, added in shape.edits if not added]
    assert page[comment[0] : comment[1]] == b"<!-- <li>z -->"
    path = tmp_path / "lists.html"
    path.write_bytes(page)
    written_in = run_handler(handle, path, format="html", name=path.name, options={})

    def checked_as_given(data: bytes, *, max_depth: int, max_elements: int) -> bytes:
        check_html(data, max_depth=max_depth, max_elements=max_elements)
        return data

    monkeypatch.setattr("docling_worker.handler.check_html", checked_as_given)
    as_given = run_handler(handle, path, format="html", name=path.name, options={})
    assert written_in == as_given


def test_html_nested_for_real_is_still_refused_and_script_text_is_not_markup() -> None:
    from docling_worker.guards import check_html, html_shape
    from workers_common import Unsupported

    nested_lists = b"<ul><li>" * 300 + b"deep" + b"</li></ul>" * 300
    with pytest.raises(Unsupported, match="max_depth"):
        check_html(nested_lists, max_depth=250, max_elements=200_000)
    script = b"<html><body><script>" + b"<div>" * 1000 + b"</script><p>x</p></body></html>"
    assert html_shape(script, 250).depth == 3
    assert check_html(script, max_depth=250, max_elements=200_000) == script
    unterminated = b"<html><body><!--" + b"<div>" * 1000
    assert html_shape(unterminated, 250).depth == 2


_RUSSIAN = "Здравствуйте, это проверка кодировки: Москва и Санкт-Петербург."


@pytest.mark.parametrize(
    ("declared", "encoding", "text", "overruled"),
    [
        # A template's stale declaration over UTF-8 bytes.
        ("iso-8859-1", "utf-8", _RUSSIAN, True),
        ("windows-1251", "utf-8", _RUSSIAN, True),
        # The declaration is right, or nothing tells: kept.
        ("windows-1251", "windows-1251", _RUSSIAN, False),
        ("koi8-r", "koi8-r", _RUSSIAN, False),
        ("iso-8859-1", "utf-8", "Plain ASCII text, nothing to decide.", False),
    ],
)
def test_a_page_declared_in_a_legacy_charset_but_written_in_utf8_reads_as_utf8(
    declared: str, encoding: str, text: str, overruled: bool, tmp_path: Path
) -> None:
    page = (
        f'<html><head><meta http-equiv="Content-Type" content="text/html; charset={declared}">'
        f"</head><body><p>{text}</p></body></html>"
    ).encode(encoding)
    path = tmp_path / "page.html"
    path.write_bytes(page)
    subs = run_handler(handle, path, format="html", name=path.name, options={})
    assert text in _submissions_text(subs)
    document = json.loads(subs[0])["nodes"][0]["properties"]
    if overruled:
        assert document["encoding"] == "utf-8"
        assert document["encoding_source"] == f"utf-8 (not the declared {declared})"
    else:
        assert "encoding_source" not in document


def test_an_epub_external_entity_reads_no_file(tmp_path: Path) -> None:
    """An external entity in the package document is refused (defusedxml) before it
    reads this machine's /etc/passwd."""
    path = tmp_path / "book.epub"
    path.write_bytes(epub_external_entity())
    with pytest.raises(WorkerFailure) as failure:
        run_handler(handle, path, format="epub", name=path.name, options={})
    assert failure.value.kind == "invalid_input"
    assert "root:" not in str(failure.value)


def test_an_epub_chapter_outside_its_package_is_skipped(tmp_path: Path) -> None:
    """A spine item that climbs out of the package names no member: that chapter is
    skipped, the others are projected, and no file of this machine is read."""
    path = tmp_path / "book.epub"
    path.write_bytes(epub_traversal())
    [raw] = run_handler(handle, path, format="epub", name=path.name, options={})
    text = json.loads(raw)["canonicalText"]
    assert "Chapter one" in text
    assert "root:" not in text


def test_latex_input_and_include_read_no_file(tmp_path: Path) -> None:
    """`\\input`, `\\include` and `\\includegraphics` resolve against no folder (the bytes
    come as a stream), so an absolute or climbing path reads nothing of this machine."""
    source = (
        b"\\begin{document}\\section{A}Before.\\input{/etc/passwd}\\include{../../etc/passwd}"
        b"\\includegraphics{/etc/passwd}After.\\end{document}"
    )
    path = tmp_path / "paper.tex"
    path.write_bytes(source)
    [raw] = run_handler(handle, path, format="latex", name=path.name, options={})
    text = json.loads(raw)["canonicalText"]
    assert "Before." in text
    assert "root:" not in text


def _project(tmp_path: Path, name: str, data: bytes, fmt: str) -> dict[str, object]:
    path = tmp_path / name
    path.write_bytes(data)
    subs = run_handler(handle, path, format=fmt, name=name, options={})
    check_submissions(subs)
    sub: dict[str, object] = json.loads(subs[-1])
    return sub


def test_a_deck_of_no_slides_is_an_empty_document(tmp_path: Path) -> None:
    """docling refuses a presentation with no slides ("Document has 0 pages, fewer than
    the requested page_range start 1"): python-pptx's own default template and a blank
    deck failed `invalid_input`. A template is a valid file: an empty DOCUMENT."""
    from pptx import Presentation

    out = io.BytesIO()
    Presentation().save(out)
    sub = _project(tmp_path, "template.pptx", out.getvalue(), "pptx")
    nodes = sub["nodes"]
    assert isinstance(nodes, list)
    assert [n["labels"] for n in nodes] == [["DOCUMENT"]]
    assert sub["canonicalText"] == ""


def test_xml_comments_in_a_docx_part_are_skipped_with_their_text_kept(tmp_path: Path) -> None:
    """docling's Word reader failed on an XML comment in document.xml (lxml's QName of a
    comment: ValueError, ended `transient`; python-docx's tbl-props.docx has two). Comments
    and processing instructions are dropped, the text after one kept."""
    from docx import Document as DocxDocument

    out = io.BytesIO()
    document = DocxDocument()
    document.add_paragraph("Before the note")
    document.add_paragraph("Hello world")
    document.add_paragraph("After the note")
    document.save(out)
    parts = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    body = parts.read("word/document.xml").decode()
    body = body.replace("<w:p>", "<!-- a note --><w:p>", 1)
    body = body.replace("Hello ", "Hello <!-- inside a run -->", 1)
    body = body.replace("After the", "After<?tool hint?> the", 1)
    assert body.count("<!--") == 2
    commented = io.BytesIO()
    with zipfile.ZipFile(commented, "w") as rewritten:
        for item in parts.infolist():
            data = body.encode() if item.filename == "word/document.xml" else parts.read(item)
            rewritten.writestr(item, data)
    sub = _project(tmp_path, "commented.docx", commented.getvalue(), "docx")
    assert (
        sub["canonicalText"]
        == _project(tmp_path, "plain.docx", out.getvalue(), "docx")["canonicalText"]
    )
    assert "Hello world" in str(sub["canonicalText"])


def test_json_lines_are_an_array_of_their_values(tmp_path: Path) -> None:
    """A JSON Lines file (a log, an export; csvkit's testjson_multiline.json) was
    invalid_input ("Extra data"): its records are one TABLE. A file whose second value is
    not on a line of its own stays invalid_input."""
    lines = b'{"a": 2, "b": 3}\n\n{"b": 2, "d": 4.50}\r\n'
    sub = _project(tmp_path, "events.jsonl", lines, "docling")
    assert sub["canonicalText"] == "a\tb\td\n2\t3\t\n\t2\t4.50\n\n"
    whole = _project(tmp_path, "array.json", b'[{"a": 2, "b": 3}, {"b": 2, "d": 4.50}]', "docling")
    assert sub["canonicalText"] == whole["canonicalText"]
    with pytest.raises(InvalidInput, match="Extra data"):
        _project(tmp_path, "two.json", b'{"a": 1} {"b": 2}\n', "docling")


@pytest.mark.parametrize(
    ("name", "lines", "encoding", "fmt"),
    [
        (
            "ru.md",
            (
                "# Отчёт",
                "",
                "Здравствуйте, коллеги! Отчёт за прошлый месяц во вложении.",
                "Пожалуйста, проверьте цифры и сообщите замечания.",
            ),
            "cp1251",
            "md",
        ),
        (
            "ja.md",
            (
                "# 報告書",
                "",
                "いつもお世話になっております。先月の売上報告書を添付いたしましたので、"
                "ご確認のほどよろしくお願い申し上げます。",
            ),
            "cp932",
            "md",
        ),
        (
            "notes.tex",
            (
                "\\section{Résumé}",
                "Les élèves ont étudié à la bibliothèque pendant des années.",
            ),
            "cp1252",
            "latex",
        ),
    ],
)
def test_text_sources_in_legacy_encodings_are_decoded_not_mojibake(
    tmp_path: Path, name: str, lines: tuple[str, ...], encoding: str, fmt: str
) -> None:
    """docling reads Markdown as UTF-8, else Windows-1252: the Russian file came out as
    Windows-1252 mojibake, the Japanese one was invalid_input. They are decoded as the
    text pool decodes undeclared text, and the DOCUMENT says how."""
    text = "\n".join(lines) + "\n"
    body = _project(tmp_path, name, text.encode(encoding), fmt)
    canonical = body["canonicalText"]
    assert isinstance(canonical, str)
    assert lines[-1][:20] in canonical
    nodes = body["nodes"]
    assert isinstance(nodes, list)
    [document] = [n for n in nodes if "DOCUMENT" in n["labels"]]
    props = document["properties"]
    used = codecs.lookup(encoding).name
    assert (props["encoding"], props["encoding_source"]) == (used, "detected")


def test_utf8_text_sources_say_nothing_of_their_encoding(tmp_path: Path) -> None:
    body = _project(tmp_path, "plain.md", "# Título\n\nTexto en UTF-8.\n".encode(), "md")
    nodes = body["nodes"]
    assert isinstance(nodes, list)
    [document] = [n for n in nodes if "DOCUMENT" in n["labels"]]
    assert "encoding" not in document["properties"]
