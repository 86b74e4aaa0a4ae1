"""The pieces one by one: ids, subjects, charsets, HTML, quotes, dates, attachment routing."""

from __future__ import annotations

import codecs
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from email_worker.attachments import detect_format, routed_formats
from email_worker.charsets import clean_text, decode_bytes
from email_worker.dates import find_explicit_dates, loose_date_candidates, parse_date_header
from email_worker.html_text import html_to_text
from email_worker.identity import (
    message_ids_in,
    message_node_id,
    normalize_address,
    normalize_message_id,
    person_node_id,
    subject_normalized,
)
from email_worker.quotes import quote_ranges
from email_worker.rtf import DEENCAPSULATE_MAX_BYTES, rtf_body
from workers_common.temporal import relative_mentions, self_dates


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<abc@Example.COM>", "abc@example.com"),
        ("  <AbC@x.org> (comment)", "AbC@x.org"),
        ("<a b@x.org>", "ab@x.org"),  # folding whitespace inside is not part of the id
        ("bare@host", "bare@host"),
        ("", None),
        ("<>", None),
    ],
)
def test_normalize_message_id(raw: str, expected: str | None) -> None:
    assert normalize_message_id(raw) == expected


def test_message_ids_in_reply_headers() -> None:
    assert message_ids_in("<a@x> <b@X> (c) <a@x>") == ["a@x", "b@x"]
    assert message_ids_in("a@x b@y") == ["a@x", "b@y"]
    assert message_ids_in("Bob's message of Monday") == []


def test_long_message_ids_are_hashed_to_a_bounded_id() -> None:
    node_id = message_node_id("x" * 300 + "@example.com")
    assert node_id.startswith("email:msg:b3:")
    assert len(node_id) < 100
    assert message_node_id("short@example.com") == "email:msg:short@example.com"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Bob@Example.COM", "bob@example.com"),
        ("carol@bücher.example", "carol@xn--bcher-kva.example"),
        ("carol@XN--BCHER-KVA.example", "carol@xn--bcher-kva.example"),
        ("<dan@example.org.>", "dan@example.org"),
        ("undisclosed", "undisclosed"),
        ("@nolocal", None),
        ("", None),
    ],
)
def test_normalize_address(raw: str, expected: str | None) -> None:
    assert normalize_address(raw) == expected


def test_person_ids_meet_across_spellings() -> None:
    spellings = ["Carol@Bücher.example", "carol@xn--bcher-kva.EXAMPLE"]
    ids = {person_node_id(normalize_address(s) or "") for s in spellings}
    assert ids == {"email:person:carol@xn--bcher-kva.example"}


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Re: Re: RE: hello", "hello"),
        ("AW: SV: Fwd: FW: Vs: hello", "hello"),
        ("re[2]: Re^3: hello  world", "hello world"),
        ("[list] Re: Fwd: topic", "[list] topic"),
        ("Antw: TR: RIF: Odp: ΑΠ: 回复\uff1atopic", "topic"),
        ("Regarding: Rebates", "Regarding: Rebates"),  # not a prefix, just a word
        ("", ""),
    ],
)
def test_subject_normalized(subject: str, expected: str) -> None:
    assert subject_normalized(subject) == expected


def test_decode_bytes_repairs_lying_charsets() -> None:
    assert decode_bytes("café".encode(), "us-ascii") == ("café", "charset:us-ascii->utf-8")
    assert decode_bytes("café".encode("cp1252"), "utf-8") == ("café", "charset:utf-8->cp1252")
    assert decode_bytes(b"caf\xe9", "x-made-up") == ("café", "charset:x-made-up->cp1252")
    assert decode_bytes(b"\x81\x8d", "utf-8") == ("\x81\x8d", "charset:utf-8->latin-1")
    assert decode_bytes("Grüße".encode("latin-1"), "ISO-8859-1") == ("Grüße", None)
    assert decode_bytes(b"plain", None) == ("plain", None)


@pytest.mark.parametrize("declared", [None, "us-ascii", "x-made-up"])
@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        (
            "Здравствуйте, коллеги! Отчёт за прошлый месяц во вложении. Проверьте цифры.",
            "cp1251",
        ),
        ("Здравствуйте, коллеги! Отчёт за прошлый месяц во вложении.", "koi8_r"),
        (
            "いつもお世話になっております。先月の売上報告書を添付いたしましたので、"
            "ご確認のほどよろしくお願い申し上げます。",
            "cp932",
        ),
    ],
)
def test_undeclared_or_lying_legacy_text_is_detected_not_read_as_1252(
    text: str, encoding: str, declared: str | None
) -> None:
    """Old mail without a charset (or with a wrong one): these came out as Windows-1252
    mojibake ("Çäðàâñòâóéòå"); the encoding is now detected when there are enough 8-bit
    bytes to tell, and the repair is recorded."""
    decoded, defect = decode_bytes(text.encode(encoding), declared)
    used = codecs.lookup(encoding).name
    assert (decoded, defect) == (text, f"charset:{declared or 'none'}->{used}")


def test_a_few_8bit_bytes_stay_windows_1252_without_a_defect() -> None:
    """A header's few smuggled bytes are too few to tell code pages apart."""
    assert decode_bytes("Grüße".encode("cp1252"), None) == ("Grüße", None)


def test_decode_bytes_replaces_only_the_bad_bytes_of_a_declared_charset() -> None:
    # One byte Windows-1251 leaves undefined (0x98) in a Cyrillic body: the body stays
    # Cyrillic, the byte becomes U+FFFD and is counted (was: the whole body as 1252).
    cyrillic = "Привет, мир".encode("cp1251") + b"\x98!"
    assert decode_bytes(cyrillic, "windows-1251") == (
        "Привет, мир\ufffd!",
        "charset:windows-1251:replaced:1",
    )
    # A cut-off multi-byte character in a long UTF-8 body is one replacement too.
    assert decode_bytes("Grüße aus Köln".encode() + b"\xc3", "utf-8") == (
        "Grüße aus Köln\ufffd",
        "charset:utf-8:replaced:1",
    )


def test_decode_bytes_reads_known_supersets() -> None:
    # 镕 is GBK, not GB 2312: mail clients write GBK/GB 18030 and call it gb2312.
    assert decode_bytes("朱镕基说".encode("gbk"), "gb2312") == (
        "朱镕基说",
        "charset:gb2312->gb18030",
    )
    assert decode_bytes("纯文本".encode("gb2312"), "gb2312") == ("纯文本", None)
    # Windows-1252 quotes labelled iso-8859-1 are quotes, not C1 control characters.
    assert decode_bytes(b"\x93quoted\x94 \x96 dash", "iso-8859-1") == (
        "\u201cquoted\u201d \u2013 dash",
        "charset:iso-8859-1->cp1252",
    )
    assert decode_bytes("ｶﾀｶﾅ①".encode("cp932"), "shift_jis") == (
        "ｶﾀｶﾅ①",
        "charset:shift_jis->cp932",
    )
    assert decode_bytes(b"caf\xe9", "windows-874") == ("caf\u0e49", None)  # a WHATWG label


def test_clean_text_turns_smuggled_bytes_back_into_text() -> None:
    smuggled = b"caf\xc3\xa9".decode("ascii", "surrogateescape")
    assert clean_text(smuggled) == "café"
    assert clean_text("a\x00b\x07c\td\ne") == "abc\td\ne"
    assert clean_text("\ud800x") == "?x"


def test_html_to_text() -> None:
    html = (
        "<html><head><title>t</title></head><body><p>Hi&nbsp;<b>all</b>,</p>"
        "<p>line<br>break</p><blockquote><p>quoted</p><p>two</p></blockquote>"
        "<ul><li>a</li><li>b</li></ul><table><tr><td>x</td><td>y</td></tr></table>"
        "<pre>  keep\n  this</pre><script>no()</script></body></html>"
    )
    assert html_to_text(html) == (
        "Hi all,\n\nline\nbreak\n\n> quoted\n>\n> two\n\n- a\n- b\n\nx\ty\n\n  keep\n  this"
    )


def test_quote_ranges() -> None:
    body = "Hello\n\nOn Mon, 2 Mar 2026\nBob wrote:\n> one\n>\n> two\nafter\n> again"
    ranges = [body[s:e] for s, e in quote_ranges(body)]
    assert ranges == ["On Mon, 2 Mar 2026\nBob wrote:\n> one\n>\n> two", "> again"]
    outlook = "Reply\n\n________________\nFrom: Alice\nSent: x\nold\n"
    assert [outlook[s:e] for s, e in quote_ranges(outlook)] == [
        "________________\nFrom: Alice\nSent: x\nold"
    ]
    assert quote_ranges("no quotes here") == []


def test_parse_date_header() -> None:
    moment, defect = parse_date_header("Mon, 2 Mar 2026 10:00:00 -0800")
    assert moment == datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
    assert defect is None
    assert moment is not None
    assert moment.utcoffset() == timedelta(hours=-8)
    moment, defect = parse_date_header("Mon, 2 Mar 2026 10:00:00 -0000")
    assert moment == datetime(2026, 3, 2, 10, tzinfo=UTC)
    assert defect == "date:no_zone"
    assert parse_date_header("next tuesday") == (None, "date:unparseable")
    assert parse_date_header("Mon, 2 Mar 1066 10:00:00 +0000") == (None, "date:unparseable")


def test_loose_date_candidates() -> None:
    assert [d for _, d in loose_date_candidates("2026-03-04T10:00:00Z")] == [
        datetime(2026, 3, 4, 10, tzinfo=UTC)
    ]
    days = [d.date() for _, d in loose_date_candidates("03/04/2026")]
    assert days == [date(2026, 4, 3), date(2026, 3, 4)]
    assert [d.date() for _, d in loose_date_candidates("25/12/2026")] == [date(2026, 12, 25)]
    assert loose_date_candidates("whenever") == []


def test_find_explicit_dates() -> None:
    text = "On 5 March 2026, then March 6th, 2026 and 2026-03-07; not 31 February 2026."
    assert [d.day for d in find_explicit_dates(text)] == [
        date(2026, 3, 5),
        date(2026, 3, 6),
        date(2026, 3, 7),
    ]


# Monday 2 March 2026, 23:30 at -08:00: already Tuesday in UTC, so a wrong zone shows.
ANCHOR = datetime(2026, 3, 2, 23, 30, tzinfo=timezone(timedelta(hours=-8)))


@pytest.mark.parametrize(
    ("text", "first_day", "readings"),
    [
        ("see you tomorrow", date(2026, 3, 3), 1),
        ("the day after tomorrow works", date(2026, 3, 4), 1),
        ("as discussed yesterday", date(2026, 3, 1), 1),
        ("due by Friday", date(2026, 3, 6), 2),
        ("next Friday", date(2026, 3, 13), 2),
        ("next Monday", date(2026, 3, 9), 1),
        ("last Friday", date(2026, 2, 27), 1),
        ("this Wednesday", date(2026, 3, 4), 1),
        ("in two weeks", date(2026, 3, 16), 1),
        ("in 3 days", date(2026, 3, 5), 1),
        ("two months from now", date(2026, 5, 2), 1),
        ("a week ago", date(2026, 2, 23), 1),
        ("by end of month", date(2026, 3, 31), 1),
        ("by EOW", date(2026, 3, 6), 2),
        ("end of next month", date(2026, 4, 30), 1),
        ("end of the quarter", date(2026, 3, 31), 1),
        ("next week", date(2026, 3, 9), 1),
        ("this morning", date(2026, 3, 2), 1),
    ],
)
def test_relative_phrases_anchor_to_the_senders_day(
    text: str, first_day: date, readings: int
) -> None:
    [mention] = relative_mentions(text, ANCHOR)
    first = mention.readings[0]
    assert first.start.date() == first_day
    assert first.start.utcoffset() == timedelta(hours=-8)
    assert len(mention.readings) == readings
    assert text[mention.start : mention.end] == mention.phrase


def test_relative_phrases_skip_quotes_and_prefer_the_longest() -> None:
    text = "the day after tomorrow\n> tomorrow"
    mentions = relative_mentions(text, ANCHOR, skip=[(23, len(text))])
    assert [m.phrase for m in mentions] == ["the day after tomorrow"]


def test_self_dates_conflict_only_when_far_from_the_header() -> None:
    body = "Date: 23 March 2026\nToday, March 3, 2026, fine. Mentioned 30 March 2026."
    assert [d.day for d in self_dates(body, ANCHOR)] == [date(2026, 3, 23)]


@pytest.mark.parametrize(
    ("filename", "content_type", "data", "expected"),
    [
        ("q.csv", "text/csv", b"a,b\n1,2\n", "csv"),
        ("q.CSV", "application/octet-stream", b"a,b\n", "csv"),
        ("noext", "text/csv", b"a,b\n", "csv"),
        ("q.csv", "text/csv", b"PK\x03\x04zip", None),
        ("x.bin", "application/octet-stream", b"%PDF-1.7", "pdf"),
        ("report.pdf", "application/pdf", b"not pdf", None),
        ("book.xlsx", "", b"PK\x03\x04....", "xlsx"),
        ("data.parquet", "", b"PAR1....PAR1", "parquet"),
        ("fwd.eml", "", b"From: a@b\r\n\r\nx", "eml"),
        ("mail.msg", "", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "msg"),
        ("mail.msg", "", b"From: a@b", None),
        ("pic.png", "image/png", b"\x89PNG", None),
        # Issue 16: the spreadsheet variants and compressed csv the tabular pool reads.
        ("old.xls", "", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "xls"),
        ("old.xls", "", b"a,b\n", None),
        ("big.xlsb", "", b"PK\x03\x04....", "xlsb"),
        ("macro.xlsm", "", b"PK\x03\x04....", "xlsx"),
        ("plan.ods", "", b"PK\x03\x04....", "ods"),
        ("q.csv.gz", "application/gzip", b"\x1f\x8b\x08rest", "csv"),
        ("q.tsv.zst", "", b"\x28\xb5\x2f\xfdrest", "tsv"),
        ("q.csv.gz", "", b"a,b\n", None),
        ("notes.txt.gz", "", b"\x1f\x8b\x08rest", None),
    ],
)
def test_detect_format(filename: str, content_type: str, data: bytes, expected: str | None) -> None:
    assert detect_format(filename, content_type, data).format == expected


def test_routed_formats_come_from_the_environment() -> None:
    assert "pdf" in routed_formats({})
    assert routed_formats({"EMAIL_ATTACHMENT_FORMATS": "csv, EML,bogus"}) == {"csv", "eml"}
    assert routed_formats({"EMAIL_ATTACHMENT_FORMATS": ""}) == frozenset()


def test_wrapped_rtf_past_the_unwrap_budget_is_stripped_not_lost() -> None:
    """RTFDE parses at about 100 KB/s: a wrapped body past DEENCAPSULATE_MAX_BYTES is read
    with striprtf (the HTML tags are an ignorable destination), with a defect."""
    paragraph = (
        rb"{\*\htmltag64 <p>}\htmlrtf {\htmlrtf0 Line %d of the minutes."
        rb"\htmlrtf }\htmlrtf0 {\*\htmltag72 </p>}"
    )
    body = b"".join(paragraph % n for n in range(DEENCAPSULATE_MAX_BYTES // 60))
    rtf = rb"{\rtf1\ansi\ansicpg1252\fromhtml1 {\*\htmltag19 <html>}" + body + b"}"
    assert len(rtf) > DEENCAPSULATE_MAX_BYTES
    text, source, defects = rtf_body(rtf)
    assert (source, defects) == ("text/rtf", ["rtf:unwrap_over_budget"])
    assert text.startswith("Line 0 of the minutes.")
    assert "<p>" not in text
    assert f"Line {DEENCAPSULATE_MAX_BYTES // 60 - 1} of the minutes." in text


def test_rtf_that_is_not_rtf_is_stripped_with_a_defect_not_raised() -> None:
    text, source, defects = rtf_body(b"{\\rtf1\\fromhtml1 {\\*\\htmltag19 <html>} unterminated")
    assert source in {"text/rtf", "none"}
    assert defects[0].startswith("rtf:unwrap_failed:")
    assert "<html>" not in text


def test_an_event_without_uid_is_kept_and_named_by_its_content() -> None:
    """RFC 5545 requires a UID; old exports lack it. The event is kept (defect), and two
    such events are two."""
    from email_worker.event_projection import _event_id
    from email_worker.invitations import read_calendar

    ics = (
        b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:Site visit\r\nDTSTART:20260504T090000Z\r\n"
        b"END:VEVENT\r\nBEGIN:VEVENT\r\nSUMMARY:Review\r\nDTSTART:20260505T090000Z\r\n"
        b"END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    read = read_calendar(ics)
    events, defects = read.events, read.defects
    assert [e.summary for e in events] == ["Site visit", "Review"]
    assert [e.start for e in events] == ["2026-05-04T09:00:00+00:00", "2026-05-05T09:00:00+00:00"]
    assert defects == ["calendar:event_without_uid"] * 2
    ids = {_event_id(e) for e in events}
    assert len(ids) == 2
    assert all(i.startswith("email:event:b3:") for i in ids)


def test_a_calendar_part_past_its_budget_is_not_read() -> None:
    from email_worker.invitations import MAX_CALENDAR_BYTES, read_calendar

    big = b"BEGIN:VCALENDAR\r\n" + b"X-PAD:" + b"x" * MAX_CALENDAR_BYTES + b"\r\nEND:VCALENDAR\r\n"
    read = read_calendar(big)
    assert (read.events, read.defects, read.readable) == ([], ["calendar:over_budget"], False)
