"""normalize_canonical: NFC + LF-only, and the offset stability the builder relies on."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers_common import IngestionResultBuilder, normalize_canonical

# Text with the characters normalization is about: line breaks of every style, combining
# marks, precomposed letters, and multi-byte code points. Lone surrogates have no UTF-8
# form, so canonical text can never hold them (test_result checks the builder refuses them).
texts = st.text(
    alphabet=st.sampled_from(["a", "é", "e", "\u0301", "\u0323", "\r", "\n", " ", "😀", "ß", "Å"])
    | st.characters(exclude_categories=["Cs"]),
    max_size=40,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\r\nb", "a\nb"),  # CRLF
        ("a\rb", "a\nb"),  # lone CR (classic Mac)
        ("a\r\r\nb", "a\n\nb"),  # CR then CRLF: two line breaks
        ("a\n\rb", "a\n\nb"),  # LF then CR is two breaks, not one reversed CRLF
        ("e\u0301", "é"),  # decomposed -> composed
        ("\u212b", "\u00c5"),  # the angstrom sign is NFC-normalized to A-ring
        ("plain", "plain"),
        ("", ""),
    ],
)
def test_examples(raw: str, expected: str) -> None:
    assert normalize_canonical(raw) == expected


def test_rejects_bytes() -> None:
    with pytest.raises(TypeError):
        normalize_canonical(b"abc")  # type: ignore[arg-type]


@given(texts)
def test_output_is_nfc_and_lf_only(text: str) -> None:
    out = normalize_canonical(text)
    assert "\r" not in out
    assert unicodedata.is_normalized("NFC", out)


@given(texts)
def test_idempotent(text: str) -> None:
    once = normalize_canonical(text)
    assert normalize_canonical(once) == once


@given(
    st.lists(st.text(alphabet=st.characters(exclude_characters="\r\n"), max_size=10), max_size=6)
)
def test_line_ending_style_does_not_matter(lines: list[str]) -> None:
    """The same lines give the same canonical text whichever OS wrote them."""
    results = {normalize_canonical(sep.join(lines)) for sep in ("\n", "\r\n", "\r")}
    assert len(results) == 1


@given(st.lists(texts, min_size=1, max_size=8))
def test_span_bytes_decode_to_the_normalized_piece(pieces: list[str]) -> None:
    """Every span the builder records cuts exactly its own normalized piece out of the text."""
    builder = IngestionResultBuilder()
    spans = []
    for piece in pieces:
        if normalize_canonical(piece):
            spans.append((builder.add_span_text(piece), normalize_canonical(piece)))
        else:
            builder.add_text(piece)
    out = builder.build()
    encoded = out["canonicalText"].encode("utf-8")
    for ref, expected in spans:
        span = out["spans"][ref.index]
        assert encoded[span["start"] : span["end"]].decode("utf-8") == expected
    assert out["canonicalText"] == "".join(normalize_canonical(p) for p in pieces)


@given(
    st.lists(st.lists(texts.filter(lambda t: normalize_canonical(t) != ""), max_size=4), max_size=5)
)
def test_partials_concatenate_to_the_single_submission(partials: list[list[str]]) -> None:
    """Streaming with base_offset chaining gives the same text and offsets as one builder."""
    whole = IngestionResultBuilder()
    for pieces in partials:
        for piece in pieces:
            whole.add_span_text(piece)
    offset, text, spans = 0, "", []
    for pieces in partials:
        builder = IngestionResultBuilder(base_offset=offset)
        for piece in pieces:
            builder.add_span_text(piece)
        out = builder.build()
        text += out["canonicalText"]
        spans += out["spans"]
        offset = builder.end_offset
    assert text == whole.canonical_text
    assert spans == whole.build()["spans"]
    assert offset == whole.byte_length
