"""workers_common.text: what decides a text file's encoding, and what is binary."""

from __future__ import annotations

import codecs

import pytest

from workers_common import InvalidInput
from workers_common.text import decode_text, detect_encoding


@pytest.mark.parametrize(
    ("data", "text", "encoding", "source"),
    [
        (b"plain ASCII\n", "plain ASCII\n", "utf-8", "utf-8"),
        ("déjà vu ✓\n".encode(), "déjà vu ✓\n", "utf-8", "utf-8"),
        (codecs.BOM_UTF8 + b"mark", "mark", "utf-8", "bom"),
        (codecs.BOM_UTF16_LE + "mark €".encode("utf-16-le"), "mark €", "utf-16-le", "bom"),
        (codecs.BOM_UTF16_BE + "mark €".encode("utf-16-be"), "mark €", "utf-16-be", "bom"),
        # UTF-32 LE's mark starts with UTF-16 LE's: the longer one is tried first.
        (codecs.BOM_UTF32_LE + "wide 𝄞".encode("utf-32-le"), "wide 𝄞", "utf-32-le", "bom"),
        (
            "Les élèves ont étudié à la bibliothèque pendant des années.".encode("cp1252"),
            "Les élèves ont étudié à la bibliothèque pendant des années.",
            "cp1252",
            "detected",
        ),
    ],
)
def test_the_encoding_is_chosen_by_mark_then_utf8_then_guess(
    data: bytes, text: str, encoding: str, source: str
) -> None:
    decoded = decode_text(data)
    assert (decoded.text, decoded.encoding, decoded.source, decoded.replaced) == (
        text,
        encoding,
        source,
        0,
    )


def test_a_few_broken_bytes_in_utf8_are_replaced_not_a_reason_to_guess() -> None:
    data = "Größe und Länge: ".encode() + b"\xff\xfe" + " übrig".encode()
    decoded = decode_text(data)
    assert (decoded.encoding, decoded.replaced) == ("utf-8", 2)
    assert decoded.text == "Größe und Länge: \ufffd\ufffd übrig"


@pytest.mark.parametrize(
    "data",
    [b"\x00\x01\x02\x03 an executable", b"text, then a NUL \x00 and more"],
)
def test_a_nul_without_a_wide_mark_is_binary(data: bytes) -> None:
    with pytest.raises(InvalidInput, match="binary data"):
        decode_text(data)


def test_detect_encoding_takes_a_character_cut_at_the_end_for_utf8() -> None:
    """The web worker's rule, kept where it moved: a body whose last character was cut
    short (a truncated download) is still UTF-8."""
    assert detect_encoding("complete ä".encode()[:-1]) == "utf-8"
    assert detect_encoding("Les élèves ont étudié à la bibliothèque.".encode("cp1252")) == "cp1252"


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        # charset-normalizer's best guess for this sentence is Big5.
        ("Ça marche très bien, merci beaucoup.", "cp1252"),
        ("日本語のテキストです。ファイルの文字コードを調べます。", "cp932"),
        ("中文文本用于测试文件的编码。", "gb18030"),
        ("한국어 텍스트 파일의 인코딩을 확인합니다.", "cp949"),
    ],
)
def test_short_latin_text_is_not_taken_for_east_asian(text: str, encoding: str) -> None:
    decoded = decode_text(text.encode(encoding))
    assert decoded.text == text
