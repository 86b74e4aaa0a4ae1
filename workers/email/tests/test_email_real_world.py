# ruff: noqa: RUF001  (Cyrillic test text looks like Latin letters on purpose)
"""What each real-world class of issue 16 must become, asserted on the projection (the
golden files hold the whole submissions; these say which parts matter and why). Every
test here failed before the fix of its class."""

from __future__ import annotations

import base64
import email
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import compressed_rtf
import fidelity_corpus
import pytest

from email_worker import handle
from workers_common.conformance import run_handler

from email_corpus import (
    Msg,
    MsgMeeting,
    MsgRecipient,
    eml,
    invitation,
    msg,
    multipart,
    part,
    tnef,
)


def project(tmp_path: Path, data: bytes, fmt: str = "eml") -> dict[str, Any]:
    path = tmp_path / f"message.{fmt}"
    path.write_bytes(data)
    subs = run_handler(handle, path, format=fmt, name=path.name, options={})
    assert len(subs) == 1
    result: dict[str, Any] = json.loads(subs[0])
    return result


def nodes(sub: dict[str, Any], label: str) -> list[dict[str, Any]]:
    return [n for n in sub["nodes"] if label in n["labels"]]


def edges(sub: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in sub["relationships"] if r["type"] == kind]


def message(sub: dict[str, Any]) -> dict[str, Any]:
    (found,) = nodes(sub, "MESSAGE")
    return found


# -- 1. charsets per part -------------------------------------------------------------------


def test_cyrillic_part_with_one_bad_byte_stays_cyrillic(tmp_path: Path) -> None:
    data = (
        eml(
            [
                ("From", "a@example.ru"),
                ("Subject", "x"),
                ("Content-Type", "text/plain; charset=koi8-r"),
            ],
            "Привет".encode("koi8-r"),
        )
        + b""
    )
    sub = project(tmp_path, data)
    assert sub["canonicalText"].endswith("\n\nПривет")
    bad = eml(
        [("From", "a@example.ru"), ("Content-Type", "text/plain; charset=windows-1251")],
        "Счёт оплачен".encode("cp1251") + b"\x98",
    )
    sub = project(tmp_path, bad)
    assert sub["canonicalText"].endswith("\n\nСчёт оплачен\ufffd")
    assert message(sub)["properties"]["defects"] == ["charset:windows-1251:replaced:1"]


def test_outlook_html_body_uses_its_code_page(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.outlook_html_cp1251(), fmt="msg")
    assert sub["canonicalText"].endswith("\n\nСчёт оплачен.")
    assert message(sub)["properties"]["defects"] == []


# -- 2. bounce and report messages ----------------------------------------------------------


def test_delivery_status_is_projected_per_recipient(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.bounce())
    statuses = nodes(sub, "DELIVERY_STATUS")
    assert [s["properties"]["final_recipient"] for s in statuses] == [
        "bob@example.org",
        "carol@example.net",
    ]
    failed = statuses[0]["properties"]
    assert failed["action"] == "failed"
    assert failed["status"] == "5.1.1"
    assert failed["reporting_mta"] == "dns; mx.example.com"
    assert failed["diagnostic"] == "smtp; 550 5.1.1 <bob@example.org>: user unknown"
    assert failed["remote_mta"] == "dns; mail.example.org"
    assert statuses[1]["properties"]["action"] == "delayed"
    # Linked to the MESSAGE, and each to its final recipient's PERSON.
    assert [e["properties"]["position"] for e in edges(sub, "HAS_DELIVERY_STATUS")] == [0, 1]
    people = {n["id"] for n in nodes(sub, "PERSON")}
    assert "email:person:bob@example.org" in people
    assert len(edges(sub, "FINAL_RECIPIENT")) == 2
    # The report's text is in the canonical text, under a span of the status node.
    text = sub["canonicalText"].encode()
    span = sub["spans"][statuses[0]["spanRefs"][0]]
    assert (
        text[span["start"] : span["end"]]
        .decode()
        .startswith("Final-Recipient: rfc822; bob@example.org\n")
    )


def _stdlib_msg_16() -> Path:
    return Path(email.__file__).parent.parent / "test" / "test_email" / "data" / "msg_16.txt"


@pytest.mark.parametrize("source", ["by code", "stdlib"])
def test_report_spelled_as_old_mailers_do_is_projected(tmp_path: Path, source: str) -> None:
    """CPython's email test message msg_16 (a 2001 Sun Internet Mail Server bounce): type
    names upper-cased (`message/DELIVERY-STATUS`, `MESSAGE/RFC822`), header names in
    lower case after the first letter, Action before Final-recipient, a comment after the
    status. Named `.txt`, `telha run` routes it by its extension to the txt pool, which is
    why it showed no DELIVERY_STATUS there; as an eml job it has one."""
    if source == "stdlib":
        if not _stdlib_msg_16().exists():
            pytest.skip("this Python has no email test data")
        data = _stdlib_msg_16().read_bytes()
    else:
        data = eml(
            [
                ("From", "Internet Mail Delivery <postmaster@ucla.edu>"),
                ("To", "scr-admin@socal-raves.org"),
                ("Subject", "Delivery Notification: Delivery has failed"),
                ("Message-id", "<0GK500B04D0B8X@cougar.noc.ucla.edu>"),
                ("MIME-version", "1.0"),
                ("Content-Type", 'multipart/report; boundary="B"'),
            ],
            multipart(
                "B",
                [
                    part([("Content-type", "text/plain; charset=ISO-8859-1")], "Cannot deliver."),
                    part(
                        [("Content-type", "message/DELIVERY-STATUS")],
                        "Original-envelope-id: 0GK500B4HD0888@cougar.noc.ucla.edu\n"
                        "Reporting-MTA: dns; cougar.noc.ucla.edu\n\n"
                        "Action: failed\n"
                        "Status: 5.0.0 (recipient reached disk quota)\n"
                        "Original-recipient: rfc822;jangel1@cougar.noc.ucla.edu\n"
                        "Final-recipient: rfc822;jangel1@cougar.noc.ucla.edu\n",
                    ),
                    part(
                        [("Content-type", "MESSAGE/RFC822")],
                        "From: henryi@oxy.edu\nMessage-id: <002001c144a6$8752e060$56104586@oxy.edu>"
                        "\nSubject: yeah\n\nbody\n",
                    ),
                ],
            ),
        )
    sub = project(tmp_path, data)
    [status] = [s["properties"] for s in nodes(sub, "DELIVERY_STATUS")]
    assert status["reporting_mta"] == "dns; cougar.noc.ucla.edu"
    assert status["final_recipient"] == "jangel1@cougar.noc.ucla.edu"
    assert (status["action"], status["status"]) == ("failed", "5.0.0")
    assert [e["toId"] for e in edges(sub, "ENCLOSES")] == [
        "email:msg:002001c144a6$8752e060$56104586@oxy.edu"
    ]


def test_returned_headers_point_at_the_returned_message(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.bounce())
    assert [e["toId"] for e in edges(sub, "RETURNS")] == ["email:msg:orig-42@example.com"]
    assert nodes(sub, "ATTACHMENT") == []  # not an empty attachment any more
    assert "Returned message:\nFrom: Alice <alice@example.com>\n" in sub["canonicalText"]
    kinds = {sub["spans"][i]["kind"] for i in message(sub)["spanRefs"]}
    assert {"delivery_status", "returned_headers"} <= kinds


def test_outlook_ndr_is_projected_per_recipient(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.outlook_ndr(), fmt="msg")
    statuses = [s["properties"] for s in nodes(sub, "DELIVERY_STATUS")]
    assert statuses == [
        {
            "reporting_mta": "dns; mx1.example.com",
            "final_recipient": "bob@example.org",
            "original_recipient": None,
            "action": "failed",
            "status": "5.1.1",
            "diagnostic": "<mail.example.org #5.1.1 smtp;550 5.1.1 user unknown>",
            "remote_mta": "mail.example.org",
        },
        {
            "reporting_mta": "dns; mx1.example.com",
            "final_recipient": "carol@example.net",
            "original_recipient": None,
            "action": "failed",
            "status": "5.4.4",
            "diagnostic": None,
            "remote_mta": None,
        },
    ]
    assert len(edges(sub, "HAS_DELIVERY_STATUS")) == 2
    assert len(edges(sub, "FINAL_RECIPIENT")) == 2
    # The reported recipients are not the report's addressees: the transport headers' To is.
    to = [e for e in edges(sub, "TO")]
    assert [e.get("toId") or sub["nodes"][e["toRef"]]["id"] for e in to] == [
        "email:person:alice@example.com"
    ]
    assert "Final-Recipient: rfc822; bob@example.org\nAction: failed\n" in sub["canonicalText"]


def test_outlook_message_that_is_no_report_has_no_delivery_status(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.outlook_exchange(), fmt="msg")
    assert nodes(sub, "DELIVERY_STATUS") == []


# -- 3. body parts with a file name ---------------------------------------------------------


def test_named_inline_text_part_is_the_body(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.named_body())
    assert sub["canonicalText"].endswith("\n\nThe body, in a part that has a file name.")
    assert message(sub)["properties"]["body_source"] == "text/plain"
    (attachment,) = nodes(sub, "ATTACHMENT")
    assert attachment["properties"]["filename"] == "notes.txt"
    assert len(sub["childJobs"]) == 1


def test_named_html_part_without_disposition_is_the_body(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.named_html_body())
    assert sub["canonicalText"].endswith("\n\nHello from a named HTML part.")
    assert nodes(sub, "ATTACHMENT") == []
    assert "childJobs" not in sub or sub["childJobs"] == []


def test_named_text_attachment_stays_a_file(tmp_path: Path) -> None:
    data = eml(
        [("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="m"')],
        multipart(
            "m",
            [
                part(
                    [
                        ("Content-Type", "text/plain"),
                        ("Content-Disposition", 'attachment; filename="a.txt"'),
                    ],
                    "file",
                )
            ],
        ),
    )
    sub = project(tmp_path, data)
    assert message(sub)["properties"]["body_source"] == "none"
    assert len(nodes(sub, "ATTACHMENT")) == 1


def _with_winmail(container: bytes) -> bytes:
    return eml(
        [("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="m"')],
        multipart(
            "m",
            [
                part([("Content-Type", "text/plain")], "See the attached figures."),
                part(
                    [
                        ("Content-Type", 'application/ms-tnef; name="winmail.dat"'),
                        ("Content-Transfer-Encoding", "base64"),
                        ("Content-Disposition", 'attachment; filename="winmail.dat"'),
                    ],
                    base64.encodebytes(container).decode("ascii"),
                ),
            ],
        ),
    )


def test_winmail_dat_files_are_the_messages_attachments(tmp_path: Path) -> None:
    """Outlook wraps the files it sends to a non-Outlook recipient in a TNEF winmail.dat:
    read as one opaque file, the attachments were lost to the graph. Its files are now the
    message's attachments, routed and made child jobs by their own names."""
    figures = b"region,total\r\nnorth,12\r\nsouth,9\r\n"
    notes = b"Meeting notes: the pump station review is on 4 May.\n"
    sub = project(
        tmp_path, _with_winmail(tnef([("Q1 figures.csv", figures), ("notes.txt", notes)]))
    )
    files = {n["properties"]["filename"]: n["properties"] for n in nodes(sub, "ATTACHMENT")}
    assert sorted(files) == ["Q1 figures.csv", "notes.txt"]
    assert files["Q1 figures.csv"]["format"] == "csv"
    assert files["notes.txt"]["size"] == len(notes)
    assert "tnef:2_files_read_out" in message(sub)["properties"]["defects"]
    children = {c["name"]: c for c in sub.get("childJobs", [])}
    assert {files[f]["child_job"] for f in files} <= set(children)
    assert base64.b64decode(children[files["notes.txt"]["child_job"]]["contentB64"]) == notes


@pytest.mark.parametrize(
    ("container", "defect"),
    [
        # Cut inside the file's bytes: tnefparse would give its first bytes as the file.
        (tnef([("notes.txt", b"some notes\n" * 20)])[:-60], "tnef:unreadable"),
        (tnef([("notes.txt", b"some notes\n")])[:45], "tnef:unreadable"),
        (tnef([]), "tnef:no_files"),  # only the formatted body, no files
    ],
    ids=["cut-in-file", "cut-in-header", "no-files"],
)
def test_a_damaged_or_empty_winmail_dat_stays_one_attachment(
    container: bytes, defect: str, tmp_path: Path
) -> None:
    sub = project(tmp_path, _with_winmail(container))
    assert [n["properties"]["filename"] for n in nodes(sub, "ATTACHMENT")] == ["winmail.dat"]
    assert defect in message(sub)["properties"]["defects"]


# -- 4. addresses ---------------------------------------------------------------------------


def test_run_together_sender_keeps_the_parsed_addr_spec(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.addresses())
    properties = message(sub)["properties"]
    assert properties["sender"] == '"big bug bb"@bug.com'
    ids = [n["id"] for n in nodes(sub, "PERSON")]
    assert ids[0] == 'email:person:"big bug bb"@bug.com'
    # dev@bug.com is in To and in Cc: one distinct recipient, qa@ the other.
    assert properties["recipient_count"] == 2


def test_exchange_only_sender_gets_a_person(tmp_path: Path) -> None:
    sub = project(tmp_path, fidelity_corpus.outlook_exchange(), fmt="msg")
    sender = "x500:" + " ".join(fidelity_corpus.EXCHANGE_SENDER.split()).lower()
    assert message(sub)["properties"]["sender"] == sender
    people = {n["id"]: n["properties"] for n in nodes(sub, "PERSON")}
    assert people[f"email:person:{sender}"]["name"] == "Bob Jones"
    recipient = "x500:" + fidelity_corpus.EXCHANGE_RECIPIENT.lower()
    assert f"email:person:{recipient}" in people
    assert len(edges(sub, "FROM")) == 1


# -- 5. encoded enclosed messages -----------------------------------------------------------


@pytest.mark.parametrize("encoding", ["base64", "quoted-printable"])
def test_encoded_enclosed_message_is_decoded_for_its_child_job(
    tmp_path: Path, encoding: str
) -> None:
    sub = project(tmp_path, fidelity_corpus.encoded_enclosed(encoding))
    (child,) = sub["childJobs"]
    assert child["format"] == "eml"
    assert base64.b64decode(child["contentB64"]) == fidelity_corpus.INNER
    assert [e["toId"] for e in edges(sub, "ENCLOSES")] == ["email:msg:inner-enc@example.net"]
    # The child is a message its own worker can read.
    (inner,) = nodes(project(tmp_path, fidelity_corpus.INNER), "MESSAGE")
    assert inner["id"] == "email:msg:inner-enc@example.net"
    assert inner["properties"]["subject"] == "Rechnung für März"


# -- .msg bodies kept only as RTF (PR_RTF_COMPRESSED) ----------------------------------------

_WRAPPED_HTML = (
    rb"{\rtf1\ansi\ansicpg1252\fromhtml1 \deff0{\fonttbl{\f0\fswiss Arial;}}"
    rb"{\*\htmltag19 <html>}{\*\htmltag34 <body>}{\*\htmltag64 <p>}\htmlrtf {\htmlrtf0 "
    rb"The pump station review moved to {\*\htmltag84 <b>}\htmlrtf\b\htmlrtf0 Thursday"
    rb"{\*\htmltag92 </b>}\htmlrtf\b0\htmlrtf0 , caf\'e9 at nine.\htmlrtf }\htmlrtf0 "
    rb"{\*\htmltag72 </p>}{\*\htmltag64 <p>}\htmlrtf {\htmlrtf0 Bring the figures."
    rb"\htmlrtf }\htmlrtf0 {\*\htmltag72 </p>}{\*\htmltag72 </body>}{\*\htmltag27 </html>}}"
)
_WRAPPED_TEXT = (
    rb"{\rtf1\ansi\ansicpg1252\fromtext \deff0{\fonttbl{\f0\fswiss Arial;}}"
    rb"The pump station review moved to Thursday.\par Bring the figures.}"
)
# As Outlook's own rich-text editor writes a Russian message: a Cyrillic code page and
# font, \'xx bytes, a \uN character, a picture (hex data, no text) and a two-cell table.
_NATIVE = (
    rb"{\rtf1\ansi\ansicpg1251\deff0{\fonttbl{\f0\fswiss\fcharset204 Arial;}}"
    rb"{\colortbl;\red0\green0\blue0;}\pard\f0\fs20 \'c4\'ee\'e1\'f0\'fb\'e9 \'e4\'e5\'ed\'fc,"
    rb"\par\par The review moved to \b Thursday\b0  \u8212? see the table.\par"
    rb"{\pict\pngblip 89504e470d0a1a0a}\par"
    rb"\trowd\cellx2000\cellx4000 north\cell 12\cell\row Regards\par}"
)


def _rtf_only(rtf: bytes) -> bytes:
    return msg(
        Msg(
            subject="review",
            sender_address="a@example.com",
            rtf=rtf,
            recipients=[MsgRecipient("B", "b@example.com", 1)],
        )
    )


@pytest.mark.parametrize(
    ("rtf", "source", "expected"),
    [
        (
            _WRAPPED_HTML,
            "text/html",
            "The pump station review moved to Thursday, café at nine.\n\nBring the figures.",
        ),
        (
            _WRAPPED_TEXT,
            "text/plain",
            "The pump station review moved to Thursday.\nBring the figures.",
        ),
        (
            _NATIVE,
            "text/rtf",
            "Добрый день,\n\nThe review moved to Thursday — see the table.\n\nnorth|12|\nRegards",
        ),
    ],
    ids=["wrapped-html", "wrapped-text", "native-cp1251"],
)
def test_msg_body_kept_only_as_rtf_is_read(
    tmp_path: Path, rtf: bytes, source: str, expected: str
) -> None:
    """A .msg whose body Outlook kept only as compressed RTF (no PR_BODY, no PR_HTML) had
    no body at all: extract-msg unwraps plain text only. HTML wrapped in RTF is now taken
    back out and read as HTML; native rich text is read with its code page."""
    sub = project(tmp_path, _rtf_only(rtf), fmt="msg")
    props = message(sub)["properties"]
    assert props["body_source"] == source
    assert sub["canonicalText"].endswith("\n\n" + expected)
    assert props["defects"] == []


def test_msg_with_a_damaged_rtf_body_keeps_the_rest(tmp_path: Path) -> None:
    """A compressed RTF stream that does not decompress costs the body only."""
    data = _rtf_only(_NATIVE)
    packed = compressed_rtf.compress(_NATIVE)
    damaged = packed[:16] + b"\xff" * (len(packed) - 16)
    assert data.count(packed) == 1
    sub = project(tmp_path, data.replace(packed, damaged), fmt="msg")
    props = message(sub)["properties"]
    assert props["body_source"] == "none"
    assert [d.split(":")[0:2] for d in props["defects"]] == [["rtf", "undecompressable"]]
    assert props["subject"] == "review"


def _only_winmail(container: bytes) -> bytes:
    """A message whose one part is winmail.dat: what a non-Outlook client receives from an
    Exchange that takes it for Outlook (the text is nowhere but inside the container)."""
    return eml(
        [
            ("From", "a@example.com"),
            ("Subject", "review"),
            ("Content-Type", 'application/ms-tnef; name="winmail.dat"'),
            ("Content-Transfer-Encoding", "base64"),
            ("Content-Disposition", 'attachment; filename="winmail.dat"'),
        ],
        base64.encodebytes(container).decode("ascii"),
    )


@pytest.mark.parametrize(
    ("container", "source", "expected"),
    [
        (
            tnef([], body="The pump station review moved to Thursday, café at nine."),
            "application/ms-tnef:text/plain",
            "The pump station review moved to Thursday, café at nine.",
        ),
        (
            tnef([("notes.txt", b"notes\n")], rtf=_NATIVE),
            "application/ms-tnef:text/rtf",
            "Добрый день,\n\nThe review moved to Thursday — see the table.\n\nnorth|12|\nRegards",
        ),
    ],
    ids=["plain", "rtf-with-a-file"],
)
def test_a_message_that_is_only_a_winmail_dat_gets_its_body(
    tmp_path: Path, container: bytes, source: str, expected: str
) -> None:
    """The body was lost with the container before: the message had none."""
    sub = project(tmp_path, _only_winmail(container))
    props = message(sub)["properties"]
    assert props["body_source"] == source
    assert sub["canonicalText"].endswith("\n\n" + expected)


def test_a_winmail_dat_body_does_not_replace_the_mime_body(tmp_path: Path) -> None:
    container = tnef([("notes.txt", b"notes\n")], body="The container's copy.")
    sub = project(tmp_path, _with_winmail(container))
    assert message(sub)["properties"]["body_source"] == "text/plain"
    assert "The container's copy." not in sub["canonicalText"]
    assert "See the attached figures." in sub["canonicalText"]


def test_legacy_office_rtf_and_saved_page_attachments_become_their_child_jobs(
    tmp_path: Path,
) -> None:
    """Word 97-2003, RTF and MHTML attachments were ATTACHMENT nodes only (no format
    named them); they are child jobs of `doc`, `rtf` and `mhtml` now, routed by name or
    content type and checked against their bytes. HTML saved under a .doc name is not."""
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    attached = [
        ("agreement.doc", "application/msword", ole),
        ("letter.rtf", "application/rtf", b"{\\rtf1\\ansi Site visit\\par}"),
        (
            "download",
            "application/x-mimearchive",
            b"MIME-Version: 1.0\r\nContent-Type: text/html\r\n\r\n<p>x</p>",
        ),
        ("page.doc", "application/msword", b"<html><body>a page saved as .doc</body></html>"),
    ]
    parts = [part([("Content-Type", "text/plain")], "The files.")]
    for name, kind, data in attached:
        parts.append(
            part(
                [
                    ("Content-Type", kind),
                    ("Content-Transfer-Encoding", "base64"),
                    ("Content-Disposition", f'attachment; filename="{name}"'),
                ],
                base64.encodebytes(data).decode("ascii"),
            )
        )
    data = eml(
        [("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="m"')],
        multipart("m", parts),
    )
    sub = project(tmp_path, data)
    files = {n["properties"]["filename"]: n["properties"] for n in nodes(sub, "ATTACHMENT")}
    assert files["agreement.doc"]["format"] == "doc"
    assert files["letter.rtf"]["format"] == "rtf"
    assert files["download"]["format"] == "mhtml"
    assert files["page.doc"]["format"] is None
    assert files["page.doc"]["child_job"] is None
    children = {c["name"]: c for c in sub.get("childJobs", [])}
    assert {c["format"] for c in children.values()} == {"doc", "rtf", "mhtml"}


# -- meeting invitations ----------------------------------------------------------------------


def _invitation_message(ics: str, *, attach_ics: bool = True) -> bytes:
    """As Outlook sends one: text and calendar alternatives, and invite.ics attached."""
    method = ics.split("METHOD:", 1)[1].split("\r", 1)[0]
    alternatives = multipart(
        "a",
        [
            part([("Content-Type", "text/plain; charset=utf-8")], "When: Monday 09:00\nRoom 4"),
            part([("Content-Type", f'text/calendar; charset="utf-8"; method={method}')], ics),
        ],
    )
    parts = [part([("Content-Type", 'multipart/alternative; boundary="a"')], alternatives)]
    if attach_ics:
        parts.append(
            part(
                [
                    ("Content-Type", 'application/ics; name="invite.ics"'),
                    ("Content-Disposition", 'attachment; filename="invite.ics"'),
                ],
                ics,
            )
        )
    return eml(
        [
            ("From", "Erin Example <erin@example.com>"),
            ("To", "ada@example.com"),
            ("Subject", "Pump station review"),
            ("Message-ID", f"<{method.lower()}-1@example.com>"),
            ("Content-Type", 'multipart/mixed; boundary="m"'),
        ],
        multipart("m", parts),
    )


def _edges_from(sub: dict[str, Any], node_index: int, kind: str) -> list[dict[str, Any]]:
    return [r for r in edges(sub, kind) if r["fromRef"] == node_index]


def test_meeting_invitation_is_an_event_with_its_people(tmp_path: Path) -> None:
    """The calendar alternative was dropped with the other alternatives and the .ics kept
    as an opaque file: the meeting's time, place and attendees were nowhere in the graph."""
    sub = project(tmp_path, _invitation_message(invitation()))
    (event,) = nodes(sub, "EVENT")
    props = event["properties"]
    assert event["id"] == "email:event:040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5"
    assert props["summary"] == "Pump station review"
    assert (props["start"], props["end"]) == (
        "2026-05-04T09:00:00+02:00",
        "2026-05-04T10:00:00+02:00",
    )
    assert props["location"] == "Room 4, Harbour building"
    assert (props["status"], props["sequence"], props["attendee_count"]) == ("CONFIRMED", 0, 2)
    (about,) = edges(sub, "ABOUT_EVENT")
    assert about["properties"] == {"method": "REQUEST"}
    index = sub["nodes"].index(event)
    people = {n["id"]: i for i, n in enumerate(sub["nodes"]) if "PERSON" in n["labels"]}
    (organizer,) = _edges_from(sub, index, "ORGANIZED_BY")
    assert organizer["toRef"] == people["email:person:erin@example.com"]
    attendees = {r["toRef"]: r["properties"] for r in _edges_from(sub, index, "ATTENDEE")}
    assert attendees[people["email:person:grace@example.com"]] == {
        "role": "OPT-PARTICIPANT", "answer": "ACCEPTED", "name": "Hopper, Grace",
    }  # fmt: skip
    assert "Event: Pump station review\nWhen: 2026-05-04T09:00:00+02:00 to" in sub["canonicalText"]
    assert len(nodes(sub, "ATTACHMENT")) == 1  # invite.ics stays the file it is


def test_cancellation_and_occurrences_upsert_the_same_event(tmp_path: Path) -> None:
    cancel = project(
        tmp_path, _invitation_message(invitation("CANCEL", status="CANCELLED", sequence=1))
    )
    (event,) = nodes(cancel, "EVENT")
    assert event["id"] == "email:event:040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5"
    assert event["properties"]["status"] == "CANCELLED"
    assert edges(cancel, "ABOUT_EVENT")[0]["properties"] == {"method": "CANCEL"}
    moved = invitation(
        extra="RECURRENCE-ID;TZID=W. Europe Standard Time:20260511T090000\n",
        when="DTSTART;TZID=W. Europe Standard Time:20260512T140000",
    )
    (occurrence,) = nodes(project(tmp_path, _invitation_message(moved, attach_ics=False)), "EVENT")
    assert occurrence["id"].endswith("F5#2026-05-11T09:00:00+02:00")
    assert occurrence["properties"]["start"] == "2026-05-12T14:00:00+02:00"


def test_all_day_event_keeps_its_dates(tmp_path: Path) -> None:
    ics = invitation(when="DTSTART;VALUE=DATE:20260504\nDTEND;VALUE=DATE:20260505")
    (event,) = nodes(project(tmp_path, _invitation_message(ics)), "EVENT")
    props = event["properties"]
    assert (props["start"], props["end"], props["all_day"]) == ("2026-05-04", "2026-05-05", True)


def test_a_damaged_calendar_part_costs_only_the_event(tmp_path: Path) -> None:
    sub = project(
        tmp_path, _invitation_message("METHOD:REQUEST\r\nnot a calendar", attach_ics=False)
    )
    assert nodes(sub, "EVENT") == []
    defects = message(sub)["properties"]["defects"]
    assert any(d.startswith("calendar:unreadable:") for d in defects)
    assert "When: Monday 09:00" in sub["canonicalText"]


# A meeting's global object id as Exchange makes one: class id, no instance date, creation
# time, reserved, size, data. Its iCalendar UID is the whole id in upper-case hex.
_GOID = bytes.fromhex(
    "040000008200E00074C5B7101A82E008"
    "00000000"
    "A0B1C2D3E4F5D601"
    "0000000000000000"
    "10000000"
    "7F8E9DACBBCADAE9F807162534435261"
)


def _meeting_msg(message_class: str, subject: str, goid: bytes = _GOID) -> bytes:
    return msg(
        Msg(
            subject=subject,
            sender_name="Erin Example",
            sender_address="erin@example.com",
            message_class=message_class,
            recipients=[
                MsgRecipient("Ada Lovelace", "ada@example.com", 1),
                MsgRecipient("Grace Hopper", "grace@example.com", 2),
            ],
            meeting=MsgMeeting(
                datetime(2026, 5, 4, 7, 0, tzinfo=UTC),
                datetime(2026, 5, 4, 8, 0, tzinfo=UTC),
                "Room 4, Harbour building",
                goid,
            ),
        )
    )


def test_outlook_meeting_request_msg_is_the_same_event_as_its_invitation(tmp_path: Path) -> None:
    """An Outlook meeting item (.msg) keeps its meeting in named properties, which were not
    read: it was a plain message. It is now the EVENT its iCalendar invitation makes (the
    UID Outlook writes into iCalendar: the clean global object id in hex)."""
    sub = project(
        tmp_path, _meeting_msg("IPM.Schedule.Meeting.Request", "Pump station review"), "msg"
    )
    (event,) = nodes(sub, "EVENT")
    assert event["id"] == "email:event:" + _GOID.hex().upper()
    props = event["properties"]
    assert (props["start"], props["end"]) == (
        "2026-05-04T07:00:00+00:00",
        "2026-05-04T08:00:00+00:00",
    )
    assert (props["summary"], props["location"]) == (
        "Pump station review",
        "Room 4, Harbour building",
    )
    assert edges(sub, "ABOUT_EVENT")[0]["properties"] == {"method": "REQUEST"}
    roles = sorted(r["properties"]["role"] for r in edges(sub, "ATTENDEE"))
    assert roles == ["OPT-PARTICIPANT", "REQ-PARTICIPANT"]
    assert len(edges(sub, "ORGANIZED_BY")) == 1
    ics_uid = invitation(uid=_GOID.hex().upper())
    (same,) = nodes(project(tmp_path, _invitation_message(ics_uid)), "EVENT")
    assert same["id"] == event["id"]


def test_outlook_reply_and_cancellation_msgs(tmp_path: Path) -> None:
    reply = project(
        tmp_path,
        _meeting_msg("IPM.Schedule.Meeting.Resp.Tent", "Tentative: Pump station review"),
        "msg",
    )
    (event,) = nodes(reply, "EVENT")
    assert edges(reply, "ABOUT_EVENT")[0]["properties"] == {"method": "REPLY"}
    (answer,) = edges(reply, "ATTENDEE")
    assert answer["properties"]["answer"] == "TENTATIVE"
    # An instance's id (its date in bytes 16-19) names the series, as Outlook's UID does.
    instance = _GOID[:16] + bytes.fromhex("07EA0504") + _GOID[20:]
    cancel = project(
        tmp_path, _meeting_msg("IPM.Schedule.Meeting.Canceled", "Canceled: x", instance), "msg"
    )
    (cancelled,) = nodes(cancel, "EVENT")
    assert cancelled["id"] == event["id"]
    assert cancelled["properties"]["status"] == "CANCELLED"
    plain = project(tmp_path, _meeting_msg("IPM.Note", "Not a meeting"), "msg")
    assert nodes(plain, "EVENT") == []
