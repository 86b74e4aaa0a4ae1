"""The golden corpus (docling_corpus): each input's exact submission (golden/<name>.json),
every span resolving to exactly its node's text, PDF provenance, and determinism across
interpreters with different TZ, locale and hash seed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from docling_worker import handle
from docling_worker.handler import convert
from workers_common.conformance import check_determinism, run_handler
from workers_common.pytest_plugin import GoldenDir

import docling_corpus as corpus


def _from_pdf() -> bytes:
    # A DoclingDocument written by this worker's own PDF path, read back as `docling`.
    return corpus.docling_json(convert(corpus.report_pdf(), "pdf", {}).document)


def _json_of(make: Callable[[], Any]) -> Callable[[], bytes]:
    return lambda: corpus.docling_json(make())


CORPUS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "report-pdf": ("pdf", corpus.report_pdf),
    "simple-pdf": ("pdf", corpus.simple_pdf),
    "report-docx": ("docx", corpus.report_docx),
    "deck-pptx": ("pptx", corpus.deck_pptx),
    "report-odt": ("odt", corpus.report_odt),
    "notes-docx": ("docx", corpus.notes_docx),
    "notes-odt": ("odt", corpus.notes_odt),
    "deck-odp": ("odp", corpus.deck_odp),
    "book-epub": ("epub", corpus.book_epub),
    "paper-latex": ("latex", lambda: corpus.PAPER_TEX.encode()),
    "report-html": ("html", lambda: corpus.REPORT_HTML.encode()),
    "report-md": ("md", lambda: corpus.REPORT_MD.encode()),
    "readme-md": ("md", lambda: corpus.README_MD.encode()),
    "omitted-end-tags-html": ("html", lambda: corpus.OMITTED_END_TAGS_HTML.encode()),
    **{
        f"docling-{name}": ("docling", _json_of(make))
        for name, make in corpus.DOCLING_FIXTURES.items()
    },
    "docling-from-pdf": ("docling", _from_pdf),
    "service-json": ("docling", lambda: corpus.SERVICE_JSON.encode()),
    # An effective-date clause that names no date, and nothing else dates the document.
    "missing-date-md": ("md", lambda: b"# Lease\n\nThis lease is effective upon signing.\n"),
}


def write(tmp_path: Path, name: str) -> Path:
    fmt, make = CORPUS[name]
    path = tmp_path / f"{name}.{fmt}"
    path.write_bytes(make())
    return path


def project(tmp_path: Path, name: str, **options: Any) -> list[bytes]:
    fmt, _ = CORPUS[name]
    opts = {"clarify": True, **options}
    return run_handler(handle, write(tmp_path, name), format=fmt, name=name, options=opts)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_golden(name: str, tmp_path: Path, golden: GoldenDir) -> None:
    golden.check(name, project(tmp_path, name))


def _span_text(sub: dict[str, Any], node: dict[str, Any]) -> str:
    raw = sub["canonicalText"].encode()
    (index,) = node["spanRefs"]
    span = sub["spans"][index]
    return str(raw[span["start"] : span["end"]].decode())


def _expected(node: dict[str, Any]) -> str | None:
    props = node["properties"]
    label = node["labels"][0]
    if label == "SECTION":
        return str(props["heading"])
    if label == "TABLE":
        rows = ([props["header"]] if props["header"] else []) + props["rows"]
        return "\n".join("\t".join(row) for row in rows)
    if label == "DOCUMENT":
        return str(props["title"])
    return None


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_span_is_exactly_its_nodes_text(name: str, tmp_path: Path) -> None:
    sub = json.loads(project(tmp_path, name)[0])
    checked = 0
    for node in sub["nodes"]:
        if not node["spanRefs"]:
            continue
        text = _span_text(sub, node)
        assert text, node
        assert text == text.strip(), node
        expected = _expected(node)
        if expected is not None:
            assert text == expected, node
            checked += 1
    assert checked >= 1


def test_pdf_structure_and_provenance(tmp_path: Path) -> None:
    sub = json.loads(project(tmp_path, "report-pdf")[0])
    nodes = sub["nodes"]
    sections = [(n["properties"]["heading"], n["properties"]["level"]) for n in nodes
                if n["labels"] == ["SECTION"]]  # fmt: skip
    assert sections == [
        ("1 Introduction", 1), ("1.1 Scope", 2), ("2 Results", 1), ("3 Data", 1),
        ("3.1 Terms", 2),
    ]  # fmt: skip
    text = sub["canonicalText"]
    assert "operations in all regions" in text  # de-hyphenated across the line break
    assert "ACME Corporation" not in text
    assert "Page 1 of 3" not in text
    assert sub["stats"]["page_headers"] == 3
    assert sub["stats"]["page_footers"] == 3
    # Two columns: the whole left column comes before the right one.
    assert text.index("Costs fell") < text.index("Revenue grew")
    table = next(n for n in nodes if n["labels"] == ["TABLE"])
    assert table["properties"]["header"] == ["Region", "Units", "Revenue"]
    assert table["properties"]["rows"][0] == ["North", "1200", "4.1"]
    assert [n["properties"]["marker"] for n in nodes if n["labels"] == ["LIST_ITEM"]] == [
        "-", "-", "-", "1.", "2.",
    ]  # fmt: skip
    footnote = next(n for n in nodes if n["labels"] == ["FOOTNOTE"])
    assert _span_text(sub, footnote) == "1 The board met in Lisbon."
    for node in nodes[1:]:
        props = node["properties"]
        if node["labels"] not in (["LIST"], ["DATE_REFERENCE"]):
            assert 1 <= props["page"] <= 3, node
            left, bottom, right, top = props["bbox"]
            assert 0 <= left < right <= 595.3, node
            assert 0 <= bottom < top <= 841.9, node
    document = nodes[0]["properties"]
    assert document["page_count"] == 3
    assert document["authors"] == ["Dana Example"]


def test_docling_json_bbox_from_top_left_origin(tmp_path: Path) -> None:
    sub = json.loads(project(tmp_path, "docling-provenance")[0])
    heading = next(n for n in sub["nodes"] if n["labels"] == ["SECTION"])
    # top-left (72, 72)-(300, 90) on a 792 pt page is (72, 702)-(300, 720) from the bottom.
    assert heading["properties"]["bbox"] == [72.0, 702.0, 300.0, 720.0]
    assert "Page 1" not in sub["canonicalText"]


def test_sections_nest_by_contains_with_index(tmp_path: Path) -> None:
    sub = json.loads(project(tmp_path, "report-docx")[0])
    nodes = sub["nodes"]
    edges = [(e["fromRef"], e["toRef"], e["properties"]["index"]) for e in sub["relationships"]
             if e["type"] == "CONTAINS"]  # fmt: skip
    heading = {i: n["properties"]["heading"] for i, n in enumerate(nodes)
               if n["labels"] == ["SECTION"]}  # fmt: skip
    by_name = {v: k for k, v in heading.items()}
    assert (0, by_name["1 Parties"], 0) in edges
    assert any(f == by_name["1 Parties"] and t == by_name["1.1 Term"] for f, t, _ in edges)
    for parent in {f for f, _, _ in edges}:
        indices = sorted(i for f, _, i in edges if f == parent)
        assert indices == list(range(len(indices)))


@pytest.mark.parametrize(
    "name", ["report-pdf", "report-docx", "report-html", "docling-tables", "service-json"]
)
def test_deterministic_across_processes(name: str, tmp_path: Path) -> None:
    fmt, _ = CORPUS[name]
    check_determinism(
        "docling_worker:handle", write(tmp_path, name), format=fmt, options={"clarify": True}
    )


def test_fixture_bytes_are_stable() -> None:
    # samples/ is written from these: the same call gives the same bytes.
    assert corpus.report_pdf() == corpus.report_pdf()
    assert corpus.report_docx() == corpus.report_docx()


def test_committed_samples_are_what_the_corpus_makes() -> None:
    import make_samples

    assert make_samples.main(["--check"]) == 0


def _ambiguities(tmp_path: Path, name: str) -> dict[str, list[dict[str, Any]]]:
    sub = json.loads(project(tmp_path, name)[0])
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in sub.get("ambiguities", []):
        out.setdefault(entry["kind"], []).append(entry)
    return out


def test_conflicting_effective_dates_best_first(tmp_path: Path) -> None:
    (conflict,) = _ambiguities(tmp_path, "report-docx")["conflicting_dates"]
    labels = [c["label"] for c in conflict["candidates"]]
    assert labels[0].startswith("2026-03-01 ('effective as of 1 March 2026' in '1.1 Term')")
    assert labels[1].startswith("2026-04-01 ('with effect from 1 April 2026'")
    assert conflict["nodeRef"] == 0


def test_relative_dates_anchor_to_the_documents_own_date(tmp_path: Path) -> None:
    # The DOCX was created on 2026-02-20: "within 30 days of signing" is 2026-03-22.
    (within,) = _ambiguities(tmp_path, "report-docx")["relative_date"]
    assert within["candidates"][0]["label"] == "2026-03-22 (within 30 days of signing)"
    # The Markdown file has no metadata: its first explicit date (3 February 2026, a
    # Tuesday) anchors "next Monday".
    (monday,) = _ambiguities(tmp_path, "report-md")["relative_date"]
    assert monday["candidates"][0]["label"].startswith("2026-02-09")


def test_missing_date(tmp_path: Path) -> None:
    (missing,) = _ambiguities(tmp_path, "missing-date-md")["missing_date"]
    assert missing["appliedCandidateConfidence"] == 0.0
    assert missing["candidates"][0]["validFrom"] == 0


def test_no_ambiguities_without_clarify(tmp_path: Path) -> None:
    sub = json.loads(project(tmp_path, "report-docx", clarify=False)[0])
    assert not sub.get("ambiguities")
    assert any(n["labels"] == ["DATE_REFERENCE"] for n in sub["nodes"])


def _in_a_fresh_python(code: str) -> str:
    """What `code` prints, run by a new interpreter beside these tests (sys.modules empty)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
        cwd=Path(__file__).parent,
    )  # fmt: skip
    return done.stdout


def test_default_install_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from docling_worker.handler import convert\n"
        "import docling_corpus as c\n"
        "convert(c.simple_pdf(), 'pdf', {}); convert(c.report_docx(), 'docx', {})\n"
        "convert(c.REPORT_HTML.encode(), 'html', {}); convert(c.REPORT_MD.encode(), 'md', {})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'transformers', 'huggingface_hub', 'onnxruntime')))\n"
    )
    assert _in_a_fresh_python(code).strip() == "[]"


def test_each_format_imports_only_its_readers() -> None:
    # Start-up cost: the worker imports a format's readers at its first job, so a PDF job
    # never loads docling's DOCX/HTML/Markdown backends, and a DOCX job never docling-parse.
    code = (
        "import sys\n"
        "from docling_worker.handler import convert\n"
        "start = set(sys.modules)\n"
        "import docling_corpus as c\n"  # python-docx and fpdf: the corpus's writers
        "convert(c.simple_pdf(), 'pdf', {})\n"
        "pdf = set(sys.modules)\n"
        "convert(c.report_docx(), 'docx', {})\n"
        "docx = set(sys.modules)\n"
        "top = {n.split('.')[0] for n in start}\n"
        "print(sorted(top & {'docling', 'docling_parse', 'pypdfium2', 'docx', 'bs4'}))\n"
        "print('docling.backend.msword_backend' in pdf, 'docling.datamodel.document' in pdf,"
        " 'bs4' in pdf)\n"
        "print('docling_parse' in pdf, 'pypdfium2' in pdf,"
        " 'docling.backend.msword_backend' in docx)\n"
    )
    assert _in_a_fresh_python(code).split("\n")[:3] == ["[]", "False False False", "True True True"]


def test_a_hidden_slide_is_left_out_and_a_visible_one_kept(tmp_path: Path) -> None:
    """Impress hides a slide through its drawing-page style (presentation:visibility):
    docling moves it to the invisible layer, and the projection leaves that layer out."""
    import io
    import zipfile

    from hostile import replaced

    deck = corpus.deck_odp()
    content = zipfile.ZipFile(io.BytesIO(deck)).read("content.xml").decode()
    hidden = (
        '<style:style style:name="dpHidden" style:family="drawing-page">'
        '<style:drawing-page-properties presentation:visibility="hidden"/></style:style>'
    )
    content = content.replace("<office:automatic-styles>", "<office:automatic-styles>" + hidden)
    content = content.replace(
        '<draw:page draw:id="page2"', '<draw:page draw:style-name="dpHidden" draw:id="page2"'
    )
    path = tmp_path / "deck.odp"
    path.write_bytes(replaced(deck, "content.xml", content.encode()))
    sub = json.loads(run_handler(handle, path, format="odp", name="deck", options={})[0])
    text = sub["canonicalText"]
    assert "Prepared for the board" in text
    assert "Questions welcome" in text
    assert "Highlights" not in text
    assert "Revenue up 12%" not in text


@pytest.mark.parametrize("name", ["notes-docx", "notes-odt"])
def test_footnotes_and_endnotes_are_text_and_running_headers_are_not(
    name: str, tmp_path: Path
) -> None:
    """docling's DOCX and OpenDocument readers put a note's body in the furniture layer,
    beside the running header and footer: the notes are read (FOOTNOTE nodes, after the
    body), the header and footer are not."""
    sub = json.loads(project(tmp_path, name)[0])
    text = sub["canonicalText"]
    notes = [n for n in sub["nodes"] if "FOOTNOTE" in n["labels"]]
    expected = ["Indirect damage includes lost profit and lost data."]
    if name == "notes-docx":
        expected.append("See the framework agreement of 2024, clause 9.")
    assert [_span_text(sub, n) for n in notes] == expected
    assert text.index("Either party may end") < text.index("Indirect damage")
    assert "Confidential draft header" not in text
    assert "Page footer of the draft" not in text
