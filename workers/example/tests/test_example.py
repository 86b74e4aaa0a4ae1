"""The example worker: golden submissions for small texts, each byte there for a reason."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from example_worker import HANDLERS, handle
from example_worker.projection import paragraph_ranges, project
from workers_common import SUBMISSION_CAPS, InvalidInput, TooLarge, normalize_canonical
from workers_common.conformance import check_determinism, check_submissions, run_handler
from workers_common.pytest_plugin import GoldenDir

# name -> input bytes. The golden file golden/<name>.json holds the expected submission.
CORPUS: dict[str, bytes] = {
    # Two paragraphs, LF only: the plain case.
    "two-paragraphs": b"First paragraph,\nstill the first.\n\nSecond paragraph.\n",
    # Windows line endings and a lone CR: canonical text must come out LF-only.
    "crlf-and-cr": b"Line one\r\nline two\r\n\r\nMac line\rnext\r",
    # Decomposed e + combining acute (NFD) becomes one code point; an emoji is 4 bytes:
    # span offsets count UTF-8 bytes of the normalized text.
    "unicode": "Cafe\u0301 \U0001f600\n\n\u00fcber \u2014 nai\u0308ve\n".encode(),
    # Leading BOM dropped; blank lines of spaces and tabs separate paragraphs; paragraph
    # spans are trimmed of their surrounding whitespace.
    "bom-and-blank-lines": b"\xef\xbb\xbf  indented start\n \t \n\n\ttabbed  \n",
    # Nothing at all: one DOCUMENT, no spans.
    "empty": b"",
}


Write = Callable[[str, bytes], Path]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def write(name: str, data: bytes) -> Path:
        path = tmp_path / f"{name}.txt"
        path.write_bytes(data)
        return path

    return write


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_golden(name: str, write: Write, golden: GoldenDir) -> None:
    subs = run_handler(handle, write(name, CORPUS[name]), format="txt", name=f"{name}.txt")
    golden.check(name, subs)


def test_deterministic_across_processes(write: Write) -> None:
    path = write("unicode", CORPUS["unicode"])
    check_determinism("example_worker:handle", path, format="txt", name="unicode.txt")


def test_paragraph_spans_cut_the_paragraphs(write: Write) -> None:
    [raw] = run_handler(handle, write("u", CORPUS["unicode"]), format="txt")
    body = json.loads(raw)
    text = body["canonicalText"].encode()
    cut = [text[s["start"] : s["end"]].decode() for s in body["spans"] if s["kind"] == "paragraph"]
    assert cut == ["Caf\u00e9 \U0001f600", "\u00fcber \u2014 na\u00efve"]
    assert [n["labels"] for n in body["nodes"]] == [["DOCUMENT"], ["PARAGRAPH"], ["PARAGRAPH"]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a", [(0, 1)]),
        ("\n\n a b \n\n", [(3, 6)]),
        ("x\ny\n\nz", [(0, 3), (5, 6)]),
        ("é\n\nü", [(0, 2), (4, 6)]),
        (" \n\t\n", []),
    ],
)
def test_paragraph_ranges(text: str, expected: list[tuple[int, int]]) -> None:
    assert list(paragraph_ranges(text)) == expected


# The paragraph rule as a regex (what projection.py used before it went linear): the
# reference the line scan is held to.
_PARAGRAPH = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")


def _regex_ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for match in _PARAGRAPH.finditer(text):
        body = match.group()
        start = match.start() + len(body) - len(body.lstrip())
        end = match.end() - (len(body) - len(body.rstrip()))
        out.append((len(text[:start].encode()), len(text[:end].encode())))
    return out


@given(
    st.lists(
        st.sampled_from(["a", "é", "😀", " ", "\t", "\n", "\n\n", "\u2028", "\x1c", "\u3000"]),
        max_size=40,
    ).map("".join)
)
def test_paragraph_ranges_match_the_regex_rule(text: str) -> None:
    assert list(paragraph_ranges(text)) == _regex_ranges(text)


@pytest.mark.parametrize(
    "text",
    [" " * (4 << 20), "\t \u3000" * (1 << 20), " \n" * (2 << 20), "A" * (4 << 20)],
    ids=["spaces", "mixed-whitespace", "blank-lines", "one-line"],
)
def test_paragraph_ranges_are_linear(text: str) -> None:
    # A few MB in well under a second (the regex took a minute for 64 KiB of spaces).
    started = time.monotonic()
    ranges = list(paragraph_ranges(text))
    assert time.monotonic() - started < 5
    assert ranges == ([(0, len(text))] if text[0] == "A" else [])


def _document(write: Write, name: str, data: bytes) -> tuple[str, dict[str, object]]:
    [sub] = run_handler(handle, write(name, data), format="txt", name=f"{name}.txt")
    body = json.loads(sub)
    [document] = [n["properties"] for n in body["nodes"] if "DOCUMENT" in n["labels"]]
    return body["canonicalText"], document


def test_text_in_a_legacy_code_page_is_decoded_and_says_so(write: Write) -> None:
    """A .txt file saved in Windows-1252 was invalid_input ("not valid utf-8-sig": found
    on csvkit's issue-647.csv.txt); legacy code pages are most of the text files that are
    not UTF-8."""
    text, document = _document(write, "latin1", "Café crème, naïve façade.\n".encode("cp1252"))
    assert text == "Café crème, naïve façade.\n"
    assert (document["encoding"], document["encoding_source"]) == ("cp1252", "detected")
    russian = "Привет, как дела в городе?\n"
    text, document = _document(write, "cyrillic", russian.encode("cp1251"))
    assert text == russian
    assert document["encoding"] == "cp1251"


def test_utf16_with_its_mark_is_decoded(write: Write) -> None:
    """Notepad's "Unicode": UTF-16 LE after a byte-order mark."""
    text, document = _document(
        write, "notepad", "\ufeffFirst\r\n\r\nSecond €\r\n".encode("utf-16-le")
    )
    assert text == "First\n\nSecond €\n"
    assert (document["encoding"], document["encoding_source"]) == ("utf-16-le", "bom")
    assert document["paragraphs"] == 2


def test_utf8_with_a_broken_byte_stays_utf8_and_counts_it(write: Write) -> None:
    text, document = _document(write, "broken", "Größe ".encode() + b"\xff" + "über".encode())
    assert text == "Größe \ufffdüber"
    assert document["replaced_bytes"] == 1
    assert "encoding" not in document


def test_binary_data_is_invalid_input(write: Write) -> None:
    with pytest.raises(InvalidInput, match="binary data"):
        run_handler(handle, write("binary", b"\x7fELF\x02\x01\x01\x00\x00"), format="txt")


def test_a_file_over_one_submissions_text_is_too_large_before_it_is_read(
    tmp_path: Path,
) -> None:
    """An 86 MB .txt ran the worker out of memory five times (the pool's 512 MB) before the
    job was dead; over the canonical-text cap of one submission it is too_large at once."""
    path = tmp_path / "huge.txt"
    with path.open("wb") as sparse:  # never read
        sparse.truncate(SUBMISSION_CAPS["max_text_bytes"] + 1)
    with pytest.raises(TooLarge, match=f"max_bytes={SUBMISSION_CAPS['max_text_bytes']}"):
        run_handler(handle, path, format="txt")


def test_max_bytes_option_is_too_large(write: Write) -> None:
    path = write("big", b"12345")
    with pytest.raises(TooLarge, match="max_bytes=4"):
        run_handler(handle, path, format="txt", options={"max_bytes": 4})
    run_handler(handle, path, format="txt", options={"max_bytes": 5})


def test_serves_txt_and_text() -> None:
    assert sorted(HANDLERS) == ["text", "txt"]


@given(
    st.lists(
        st.sampled_from(["a", "é", "e\u0301", "😀", " ", "\t", "\n", "\r\n", "\r", "\u2028"])
        | st.characters(exclude_categories=["Cs"]),
        max_size=60,
    ).map("".join)
)
def test_any_text_projects_to_a_conforming_submission(text: str) -> None:
    raw = project(text, name="any.txt")
    check_submissions([raw])
    body = json.loads(raw)
    encoded = body["canonicalText"].encode()
    paragraphs = [encoded[s["start"] : s["end"]].decode() for s in body["spans"][1:]]
    assert paragraphs == [p.strip() for p in paragraphs]
    assert all(paragraphs)
    # The paragraphs hold every word of the text, in order, and nothing else.
    assert " ".join(paragraphs).split() == normalize_canonical(text).split()
