"""Bad input ends as stated: a clear typed failure, or a projection that says what it lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from email_worker import handle
from workers_common import InvalidInput, TooLarge
from workers_common.conformance import check_submissions, run_handler

from email_corpus import Msg, deep_nesting, eml, msg, multipart, ole_not_a_message, part


def project(tmp_path: Path, data: bytes, fmt: str = "eml", **options: Any) -> dict[str, Any]:
    path = tmp_path / f"in.{fmt}"
    path.write_bytes(data)
    subs = run_handler(handle, path, format=fmt, options=options)
    check_submissions(subs)
    [raw] = subs
    body: dict[str, Any] = json.loads(raw)
    return body


def labelled(body: dict[str, Any], label: str) -> list[dict[str, Any]]:
    return [node for node in body["nodes"] if label in node["labels"]]


HEAD = [("Message-ID", "<bad@example.com>"), ("Date", "Mon, 2 Mar 2026 09:00:00 +0000")]


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x01\x02 binary garbage \xff\xfe", b"just some text\nwithout headers\n"],
    ids=["empty", "binary", "text"],
)
def test_bytes_that_are_not_a_message_are_invalid_input(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(InvalidInput, match="not an email message"):
        project(tmp_path, data)


def test_a_mime_entity_without_identifying_headers_is_read_with_a_defect(
    tmp_path: Path,
) -> None:
    """CPython's test_email data has six such entities (msg_18, msg_37, msg_40, ...): a
    part saved on its own, a message a tool stripped of its envelope. They were
    `invalid_input`; their body and attachments are the message's, flagged."""
    entity = eml(
        [("Content-Type", 'multipart/mixed; boundary="z"'), ("MIME-Version", "1.0")],
        multipart(
            "z",
            [
                part([("Content-Type", "text/plain")], "the body text"),
                part([("Content-Disposition", 'attachment; filename="t.csv"')], b"a,b\n1,2\n"),
            ],
        ),
    )
    body = project(tmp_path, entity)
    [message] = labelled(body, "MESSAGE")
    assert "message:no_identifying_headers" in message["properties"]["defects"]
    assert message["id"].startswith("email:msg:nomid:")
    assert "the body text" in body["canonicalText"]
    assert [child["format"] for child in body["childJobs"]] == ["csv"]


def test_the_bytes_decide_the_reader_not_the_format(tmp_path: Path) -> None:
    """An Outlook .msg saved as .eml was `invalid_input` ("no From, To, ... header": found
    on mail-parser's mail_outlook_1), and an .eml renamed .msg too: each is now read by
    what its bytes are, and gives what it gives under its own format."""
    mime = eml([*HEAD, ("From", "a@example.com"), ("Subject", "renamed")], "an .eml renamed")
    assert project(tmp_path, mime, "msg") == project(tmp_path, mime, "eml")
    outlook = msg(Msg(subject="saved as eml", sender_address="b@example.com", body="hi"))
    as_eml = project(tmp_path, outlook, "eml")
    assert as_eml == project(tmp_path, outlook, "msg")
    [message] = labelled(as_eml, "MESSAGE")
    assert message["properties"]["subject"] == "saved as eml"


def test_a_msg_that_is_neither_ole_nor_mime_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not start with the OLE2 signature"):
        project(tmp_path, b"\x00\x01 neither OLE nor headers", "msg")


def test_an_ole_file_that_is_not_a_message_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"not a readable Outlook \.msg"):
        project(tmp_path, ole_not_a_message(), "msg")


def test_ten_thousand_recipients_are_ten_thousand_people(tmp_path: Path) -> None:
    to = ", ".join(f'"Person {i}" <p{i}@example.com>' for i in range(10_000))
    body = project(tmp_path, eml([*HEAD, ("From", "boss@example.com"), ("To", to)], "all hands"))
    assert len(labelled(body, "PERSON")) == 10_001
    assert sum(r["type"] == "TO" for r in body["relationships"]) == 10_000
    [message] = labelled(body, "MESSAGE")
    assert message["properties"]["recipient_count"] == 10_000
    assert "recipients_dropped" not in message["properties"]


def test_recipients_past_the_cap_are_counted_not_projected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import email_worker.eml

    monkeypatch.setattr(email_worker.eml, "MAX_RECIPIENTS", 3)
    to = ", ".join(f"p{i}@example.com" for i in range(5))
    body = project(tmp_path, eml([*HEAD, ("From", "a@example.com"), ("To", to)], "x"))
    [message] = labelled(body, "MESSAGE")
    assert message["properties"]["recipients_dropped"] == 3
    assert len(labelled(body, "PERSON")) == 3


def nested(levels: int) -> bytes:
    return deep_nesting(levels, [*HEAD, ("From", "a@example.com"), ("Subject", "deep")])


def test_nesting_past_the_depth_cap_is_skipped_and_recorded(tmp_path: Path) -> None:
    body = project(tmp_path, nested(40))
    [message] = labelled(body, "MESSAGE")
    assert "mime:depth_cap" in message["properties"]["defects"]
    assert "deep text" not in body["canonicalText"]
    shallow = project(tmp_path, nested(5))
    assert "deep text" in shallow["canonicalText"]


def test_nesting_too_deep_for_the_parser_keeps_the_headers(tmp_path: Path) -> None:
    body = project(tmp_path, nested(3000))
    [message] = labelled(body, "MESSAGE")
    assert message["id"] == "email:msg:bad@example.com"
    assert message["properties"]["defects"] == ["mime:nesting_too_deep"]


def with_attachment(data: bytes, filename: str = "big.csv") -> bytes:
    return eml(
        [*HEAD, ("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="z"')],
        multipart(
            "z",
            [
                part([("Content-Type", "text/plain")], "see attached"),
                part(
                    [
                        ("Content-Type", "text/csv"),
                        ("Content-Disposition", f'attachment; filename="{filename}"'),
                    ],
                    data,
                ),
            ],
        ),
    )


def test_an_attachment_over_the_cap_is_a_too_large_child_not_a_failed_parent(
    tmp_path: Path,
) -> None:
    # 100 lines of "a,b" with CRLF (as the message carries them): 500 bytes.
    body = project(tmp_path, with_attachment(b"a,b\n" * 100), max_attachment_bytes=100)
    [child] = body["childJobs"]
    assert "contentB64" not in child
    assert child["format"] == "csv"
    assert child["name"].startswith("attachment:")
    oversize = child["options"]["oversize"]
    assert (oversize["bytes"], oversize["limit"]) == (500, 100)
    [attachment] = labelled(body, "ATTACHMENT")
    assert attachment["properties"]["too_large"] is True
    assert child["options"]["max_attachment_bytes"] == 100  # inherited by the child


def test_the_inline_budget_makes_later_attachments_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import email_worker.projection

    monkeypatch.setattr(email_worker.projection, "INLINE_BUDGET_BYTES", 1000)
    two = eml(
        [*HEAD, ("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="z"')],
        multipart(
            "z",
            [
                part([("Content-Disposition", 'attachment; filename="1.csv"')], b"1" * 600),
                part([("Content-Disposition", 'attachment; filename="2.csv"')], b"2" * 600),
            ],
        ),
    )
    body = project(tmp_path, two)
    first, second = body["childJobs"]
    assert "contentB64" in first
    assert "oversize" not in first.get("options", {})
    assert "contentB64" not in second
    assert second["options"]["oversize"]["limit"] == 400


def test_a_text_part_past_the_body_budget_is_an_attachment_not_the_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real size: a ~90 MB text body ran the worker out of memory (oom five times) while
    # it was decoded, cleaned and joined into canonical text.
    import email_worker.eml

    monkeypatch.setattr(email_worker.eml, "BODY_BUDGET_BYTES", 1000)
    big = b"log line\n" * 200  # 2,000 bytes decoded, over the budget of 1,000
    message = eml(
        [*HEAD, ("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="z"')],
        multipart(
            "z",
            [
                part([("Content-Type", "text/plain")], "the short note"),
                part([("Content-Type", "text/plain")], big),
            ],
        ),
    )
    body = project(tmp_path, message, max_attachment_bytes=1500)
    [msg_node] = labelled(body, "MESSAGE")
    assert "body:over_budget" in msg_node["properties"]["defects"]
    assert body["canonicalText"].count("log line") == 0
    assert "the short note" in body["canonicalText"]
    [attachment] = labelled(body, "ATTACHMENT")
    assert attachment["properties"]["content_type"] == "text/plain"
    assert attachment["properties"]["too_large"] is True
    [child] = body["childJobs"]
    assert child["format"] == "txt"
    assert child["options"]["oversize"]["limit"] == 1500


def test_an_outlook_body_past_the_budget_is_an_attachment_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import email_worker.outlook

    monkeypatch.setattr(email_worker.outlook, "BODY_BUDGET_BYTES", 1000)
    outlook = msg(Msg(subject="log", sender_address="b@example.com", body="log line\n" * 200))
    body = project(tmp_path, outlook, "msg")
    [message] = labelled(body, "MESSAGE")
    assert "body:over_budget" in message["properties"]["defects"]
    assert "log line" not in body["canonicalText"]
    [attachment] = labelled(body, "ATTACHMENT")
    assert (attachment["properties"]["filename"], attachment["properties"]["size"]) == (
        "body.txt",
        1800,
    )
    assert [child["format"] for child in body["childJobs"]] == ["txt"]


def test_a_message_over_max_bytes_is_too_large(tmp_path: Path) -> None:
    with pytest.raises(TooLarge, match="over max_bytes=10"):
        project(tmp_path, eml([*HEAD, ("From", "a@example.com")], "hello"), max_bytes=10)


def test_enclosed_messages_stop_routing_at_the_depth_cap(tmp_path: Path) -> None:
    inner = eml([("Message-ID", "<in@x>"), ("From", "b@example.com")], "inner")
    outer = eml(
        [*HEAD, ("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="q"')],
        multipart("q", [part([("Content-Type", "message/rfc822")], inner)]),
    )
    routed = project(tmp_path, outer, email_depth=7)
    assert [c["options"]["email_depth"] for c in routed["childJobs"]] == [8]
    capped = project(tmp_path, outer, email_depth=8)
    assert "childJobs" not in capped
    [attachment] = labelled(capped, "ATTACHMENT")
    assert attachment["properties"]["route"] == "enclosed more than 8 messages deep"
    assert {"type": "ENCLOSES", "fromRef": 0, "toId": "email:msg:in@x", "properties": {}} in (
        capped["relationships"]
    )


def test_without_clarify_nothing_is_recorded_but_date_references_stay(tmp_path: Path) -> None:
    data = eml([*HEAD, ("From", "a@example.com")], "tomorrow, then next week")
    quiet = project(tmp_path, data)
    assert "ambiguities" not in quiet
    assert len(labelled(quiet, "DATE_REFERENCE")) == 2
    loud = project(tmp_path, data, clarify=True)
    assert [a["kind"] for a in loud["ambiguities"]] == ["relative_date", "relative_date"]


def test_a_missing_date_without_any_evidence_is_a_placeholder_with_zero_confidence(
    tmp_path: Path,
) -> None:
    body = project(tmp_path, eml([("From", "a@example.com")], "hi tomorrow"), clarify=True)
    [ambiguity] = body["ambiguities"]
    assert ambiguity["kind"] == "missing_date"
    assert ambiguity["appliedCandidateConfidence"] == 0.0
    assert ambiguity["candidates"][0]["validFrom"] == 0
    assert labelled(body, "DATE_REFERENCE") == []  # nothing to anchor "tomorrow" to
