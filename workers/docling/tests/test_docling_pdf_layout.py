"""PDF layout heuristics on PDFs made by code, one rule per test: bold lines at body size,
heading levels, wrapped cells in tables without rules, images as figures with their
captions; and the catalog's language."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docling_worker import handle
from workers_common.conformance import run_handler

import docling_corpus as corpus


def submission(tmp_path: Path, data: bytes, name: str = "layout") -> dict[str, Any]:
    path = tmp_path / f"{name}.pdf"
    path.write_bytes(data)
    sub: dict[str, Any] = json.loads(run_handler(handle, path, format="pdf", name=name)[0])
    return sub


def labelled(sub: dict[str, Any], label: str) -> list[dict[str, Any]]:
    return [n for n in sub["nodes"] if n["labels"] == [label]]


def span_text(sub: dict[str, Any], node: dict[str, Any]) -> str:
    raw = sub["canonicalText"].encode()
    (index,) = node["spanRefs"]
    span = sub["spans"][index]
    return str(raw[span["start"] : span["end"]].decode())


def test_bold_body_lines_stay_in_their_paragraphs(tmp_path: Path) -> None:
    sub = submission(tmp_path, corpus.bold_lines_pdf())
    headings = [n["properties"]["heading"] for n in labelled(sub, "SECTION")]
    # The short bold line standing alone before body text is a heading; the bold lines
    # that run to the edge mid-sentence are not.
    assert headings == ["Scope of the elements"]
    paragraphs = [span_text(sub, n) for n in labelled(sub, "PARAGRAPH")]
    assert paragraphs == [
        "Each alias element names another type by which the same data is sometimes known, "
        "and a reader that meets an alias resolves it before anything else is compared. Note "
        "that no mime-type element may be defined for an alias; a single element defines the "
        "canonical name and lists all its aliases.",
        "treematch elements can be nested, meaning that both the outer and the inner one must "
        "be satisfied for a match to be reported.",
        "A closing paragraph in plain type.",
    ]


def test_wrapped_cells_of_tables_without_rules_are_joined(tmp_path: Path) -> None:
    sub = submission(tmp_path, corpus.wrapped_table_pdf())
    tables = labelled(sub, "TABLE")
    assert len(tables) == 2  # cells centred on their rows, then cells at the rows' tops
    header, *rows = [list(row) for row in corpus.PARTS]
    for table in tables:
        assert table["properties"]["header"] == header
        assert table["properties"]["rows"] == rows
        assert span_text(sub, table) == "\n".join("\t".join(row) for row in corpus.PARTS)
    paragraphs = [span_text(sub, n) for n in labelled(sub, "PARAGRAPH")]
    assert paragraphs == ["Prices are per unit (middle).", "Prices are per unit (top)."]


def test_images_become_figures_with_their_captions(tmp_path: Path) -> None:
    sub = submission(tmp_path, corpus.figure_pdf())
    nodes = sub["nodes"]
    figures = labelled(sub, "FIGURE")
    # Three pictures; the 2 pt mark before a line of text is not a figure.
    assert [f["properties"]["page"] for f in figures] == [1, 1, 2]
    for figure in figures:
        left, bottom, right, top = figure["properties"]["bbox"]
        assert 0 <= left < right <= 595.3, figure
        assert 0 <= bottom < top <= 841.9, figure
    # fpdf2 placed the first picture at x=20 mm, 80 x 40 mm: 56.69..283.46 pt across.
    assert figures[0]["properties"]["bbox"][0] == 56.69
    assert figures[0]["properties"]["bbox"][2] == 283.46
    captions = labelled(sub, "CAPTION")
    assert [span_text(sub, c) for c in captions] == [
        "Figure 1: Output by region", "Fig. 2 Costs by quarter",
    ]  # fmt: skip
    index = {id(n): i for i, n in enumerate(nodes)}
    edges = {(e["fromRef"], e["toRef"]) for e in sub["relationships"] if e["type"] == "CAPTION_OF"}
    assert edges == {
        (index[id(captions[0])], index[id(figures[0])]),
        (index[id(captions[1])], index[id(figures[2])]),
    }
    assert [c["properties"]["page"] for c in captions] == [1, 2]
    # Captions leave the paragraphs; the text keeps reading order (page 2's caption sits
    # above its picture, so it comes before the text below the picture).
    paragraphs = [span_text(sub, n) for n in labelled(sub, "PARAGRAPH")]
    assert not any(p.startswith(("Figure", "Fig.")) for p in paragraphs)
    text = sub["canonicalText"]
    assert text.index("chart below shows") < text.index("Figure 1") < text.index("second picture")
    assert text.index("Fig. 2") < text.index("small mark")
    assert sub["stats"]["nodes_figure"] == 3


def test_unnumbered_headings_smaller_than_a_numbered_one_nest_under_it(tmp_path: Path) -> None:
    sub = submission(tmp_path, corpus.reference_pdf())
    sections = [(n["properties"]["heading"], n["properties"]["level"])
                for n in labelled(sub, "SECTION")]  # fmt: skip
    assert sections == [
        ("1 Reference", 1), ("1.1 Parser functions", 2), ("parse tree", 3), ("parse array", 3),
        ("2 Index", 1),
    ]  # fmt: skip


def test_catalog_language_is_the_documents(tmp_path: Path) -> None:
    # PDFium writes /Lang as UTF-16 code units: a byte buffer was refused by ctypes
    # (valgrind's manual failed as a crash, not a typed failure).
    sub = submission(tmp_path, corpus.language_pdf())
    assert sub["nodes"][0]["properties"]["language"] == "en-US"


def test_a_page_of_image_tiles_gives_no_figures(tmp_path: Path) -> None:
    sub = submission(tmp_path, corpus.tiled_pdf())
    assert labelled(sub, "FIGURE") == []
    assert sub["stats"]["pages_with_image_tiles"] == 1
    assert "Text below the tiles." in sub["canonicalText"]
