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


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("日本語のメールです。ISO-2022-JP で書かれています。\n", "iso2022_jp"),
        ("Python 의 개발은 1990 년 무렵부터 시작되었습니다.\n", "iso2022_kr"),
    ],
)
def test_seven_bit_text_with_iso2022_escapes_is_that_encoding(text: str, encoding: str) -> None:
    """Seven bits, so also valid UTF-8: read as such it was ASCII with ESC characters."""
    data = text.encode(encoding)
    assert data.isascii()
    decoded = decode_text(data)
    assert (decoded.text, decoded.encoding, decoded.source) == (text, encoding, "escapes")
    assert detect_encoding(data) == encoding  # the web worker's path too


def test_an_escape_that_announces_nothing_leaves_ascii_alone() -> None:
    assert decode_text(b"\x1b[1mbold\x1b[0m terminal text\n").encoding == "utf-8"


@pytest.mark.parametrize("encoding", ["cp949", "johab"])
def test_text_charset_normalizer_gives_up_on_is_tried_in_the_double_byte_code_pages(
    encoding: str,
) -> None:
    """The first lines of CPython's cjkencodings/cp949.txt: charset-normalizer finds no
    encoding for them (before, `binary data`), the strict fallback does."""
    text = "똠방각하 펲시콜라\n\n㉯㉯납!! 因九月패믤릔궈 ⓡⓖ훀¿¿¿ 긍뒙 ⓔ뎨 ㉯. .\n"
    decoded = decode_text(text.encode(encoding))
    assert (decoded.text, decoded.encoding, decoded.replaced) == (text, encoding, 0)


def test_random_bytes_without_nul_are_still_binary() -> None:
    data = bytes(range(1, 256)) * 8
    with pytest.raises(InvalidInput, match="binary data"):
        decode_text(data)


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        # windows-1252 used to win every near tie: these read as mojibake (ś → œ, ğ → ð).
        (
            "Litwo! Ojczyzno moja! ty jesteś jak zdrowie: Ile cię trzeba cenić, ten tylko się "
            "dowie, Kto cię stracił. Dziś piękność twą w całej ozdobie Widzę i opisuję, bo "
            "tęsknię po tobie.",
            "cp1250",
        ),
        (
            "Türkiye Cumhuriyeti, Anadolu ve Doğu Trakya'da yer alan bir ülkedir. Başkenti "
            "Ankara, en kalabalık şehri İstanbul'dur. Ülkenin resmî dili Türkçedir. "  # noqa: RUF001
            "Çoğu vatandaş Müslümandır; ışık, ağaç, göğüs ve şişe gibi kelimeler "  # noqa: RUF001
            "sık kullanılır.",  # noqa: RUF001
            "cp1254",
        ),
        # and Western text keeps windows-1252 when another code page is a little less chaotic
        (
            "Le prix de la maison a augmenté de façon considérable, déjà très cher à Noël. " * 4,
            "cp1252",
        ),
    ],
)
def test_the_most_coherent_common_code_page_wins(text: str, encoding: str) -> None:
    decoded = decode_text(text.encode(encoding))
    assert (decoded.text, decoded.encoding) == (text, encoding)


def test_a_code_page_that_reads_as_windows_1252_is_named_so() -> None:
    """German bytes come back from charset-normalizer as cp1250 only, whose letters they
    share: the same text, under the commoner name."""
    text = "Name;Straße;Größe\nJürgen Müller;Hauptstraße 5;1,82\nGünther Weiß;Bahnhof 7;1,75\n"
    decoded = decode_text(text.encode("cp1252"))
    assert (decoded.text, decoded.encoding) == (text, "cp1252")


def test_a_japanese_guess_of_half_width_katakana_is_taken_back() -> None:
    """charset-normalizer reads this short KOI8-R sentence as Shift_JIS 2004: its Cyrillic
    bytes are half-width katakana there, which real Japanese text hardly uses."""
    text = "Здравствуйте, коллеги! Отчёт за прошлый месяц во вложении."
    decoded = decode_text(text.encode("koi8_r"))
    assert (decoded.text, decoded.encoding) == (text, "koi8-r")
    japanese = "ｶﾀｶﾅの見出しと本文です。半角カナも少し混ざっています。"
    assert decode_text(japanese.encode("cp932")).text == japanese  # some is fine


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_its_mark_is_read_not_refused_as_binary(encoding: str) -> None:
    """Some Windows tools write UTF-16 with no byte-order mark: every other byte a NUL.
    It was "binary data"; binary data keeps being refused (its NULs are not so regular)."""
    text = "Name\tStadt\r\nJürgen Müller\tMünchen\r\nZoë\tKöln\r\n" * 3
    decoded = decode_text(text.encode(encoding))
    assert (decoded.text, decoded.encoding, decoded.source) == (text, encoding, "detected")
    with pytest.raises(InvalidInput, match="binary data"):
        decode_text(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)


def test_meta_charset_reads_an_html_pages_declaration() -> None:
    from workers_common.text import codec_name, meta_charset

    assert meta_charset(b'<html><head><meta charset="Windows-1251"></head>') == "windows-1251"
    page = b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
    assert meta_charset(page) == "iso-8859-1"
    assert meta_charset(b"<html>" + b" " * 5000 + b'<meta charset="koi8-r">') is None
    assert meta_charset(b"<p>no declaration</p>") is None
    assert codec_name("ISO-8859-1") == "iso8859-1"
    assert codec_name(" UTF-8 ") == "utf-8"
    assert codec_name("x-no-such-charset") is None
    assert codec_name(None) is None
