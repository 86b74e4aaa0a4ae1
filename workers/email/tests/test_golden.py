"""The golden corpus: small messages built by code, each byte there for a reason, and the
exact submission each one projects to (golden/<name>.json). Also determinism across
interpreters with different TZ, locale and hash seed, for both containers."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fidelity_corpus
import pytest

from email_worker import handle
from workers_common.conformance import check_determinism, run_handler
from workers_common.pytest_plugin import GoldenDir

from email_corpus import Msg, MsgAttachment, MsgRecipient, eml, msg, multipart, part

THREAD_HEADERS = [
    ("Message-ID", "<m2@example.com>"),
    ("In-Reply-To", "<m1@Example.COM> (Bob's message)"),
    ("References", "<m0@example.com>\r\n <m1@example.com>"),
    ("Date", "Mon, 2 Mar 2026 10:00:00 -0800"),
    ("From", "Alice Example <Alice@Example.com>"),
    ("To", "Bob <bob@example.com>, carol@bücher.example"),
    ("Cc", '"Doe, John" <john@example.com>, Bob Again <BOB@example.com>'),
    ("Subject", "Re: AW: re: Fwd: Quarterly numbers"),
]


@dataclass(frozen=True)
class Case:
    data: bytes
    format: str = "eml"
    options: dict[str, Any] = field(default_factory=lambda: {"clarify": True})


CORPUS: dict[str, Case] = {
    # A reply: threading headers (comment, folded References, id case), duplicate person
    # in To and Cc (one PERSON, two edges), IDNA domain, quoted block with a "tomorrow"
    # that must not be detected, relative dates anchored to Monday 2 March 2026 at -0800.
    "reply-thread": Case(
        eml(
            THREAD_HEADERS,
            "Hi Bob,\n\nCan we meet tomorrow or next Friday? Numbers due by end of month,\n"
            "and the review is in two weeks.\n\n"
            "On Sun, Mar 1, 2026 at 9:00 AM Bob <bob@example.com> wrote:\n"
            "> Let's meet tomorrow.\n> Thanks\n",
        )
    ),
    # HTML only: entities, a script to drop, a Gmail-style quote rendered with "> ".
    "html-only": Case(
        eml(
            [
                ("Message-ID", "<html-1@example.com>"),
                ("Date", "Fri, 6 Mar 2026 17:30:00 +0100"),
                ("From", "news@example.com"),
                ("To", "dana@example.com"),
                ("Subject", "Weekly update"),
                ("Content-Type", 'text/html; charset="utf-8"'),
            ],
            "<html><head><style>p{}</style><script>x()</script></head><body>"
            "<p>Hello&nbsp;Dana &amp; team,</p><p>Deadline: <b>next week</b>.</p>"
            "<div>On Thu, Dana wrote:<blockquote><p>Any news yesterday?</p></blockquote></div>"
            "<ul><li>one</li><li>two</li></ul></body></html>",
        )
    ),
    # Encoded words (UTF-8 B, ISO-8859-1 Q) in Subject and names; an ISO-8859-1 body
    # declared as such; a UTF-8 part that lies (declared us-ascii); multipart/alternative
    # whose plain part wins over the HTML one.
    "charsets": Case(
        eml(
            [
                ("Message-ID", "<cs@example.de>"),
                ("Date", "Tue, 3 Mar 2026 08:00:00 +0100"),
                ("From", "=?ISO-8859-1?Q?J=F6rg_M=FCller?= <joerg@example.de>"),
                ("To", "=?UTF-8?B?w4lsb2RpZQ==?= <elodie@example.fr>"),
                ("Subject", "=?UTF-8?B?UmU6IENhZsOpIOKYlQ==?="),
                ("MIME-Version", "1.0"),
                ("Content-Type", 'multipart/mixed; boundary="outer"'),
            ],
            multipart(
                "outer",
                [
                    part(
                        [("Content-Type", 'multipart/alternative; boundary="alt"')],
                        multipart(
                            "alt",
                            [
                                part(
                                    [("Content-Type", "text/plain; charset=iso-8859-1")],
                                    "Grüße aus Köln.".encode("latin-1"),
                                ),
                                part([("Content-Type", "text/html")], "<p>HTML twin</p>"),
                            ],
                        ),
                    ),
                    part(
                        [("Content-Type", "text/plain; charset=us-ascii")],
                        "Noch ein Teil: naïve café.".encode(),
                    ),
                ],
            ),
        )
    ),
    # Charsets per part (issue 16): a Windows-1251 body with one byte that charset leaves
    # undefined (0x98: replaced and counted, the rest stays Cyrillic), GBK text labelled
    # gb2312 (read as GB 18030, its superset) in the body and in an encoded-word Subject,
    # Windows-1252 quotes labelled iso-8859-1 (read as 1252). Before: each of these parts
    # came out as Windows-1252 or Latin-1 mojibake.
    "charsets-per-part": Case(
        eml(
            [
                ("Message-ID", "<cpp@example.cn>"),
                ("Date", "Tue, 3 Mar 2026 08:00:00 +0800"),
                ("From", "li@example.cn"),
                ("To", "ivan@example.ru"),
                (
                    "Subject",
                    "=?gb2312?B?" + base64.b64encode("朱镕基说".encode("gbk")).decode() + "?=",
                ),
                ("MIME-Version", "1.0"),
                ("Content-Type", 'multipart/mixed; boundary="p"'),
            ],
            multipart(
                "p",
                [
                    part(
                        [("Content-Type", "text/plain; charset=windows-1251")],
                        "Привет, мир".encode("cp1251") + b"\x98",
                    ),
                    part(
                        [("Content-Type", 'text/plain; charset="gb2312"')],
                        "朱镕基说你好".encode("gbk"),
                    ),
                    part(
                        [("Content-Type", "text/plain; charset=iso-8859-1")],
                        b"\x93Quoted\x94 \x96 caf\xe9",
                    ),
                ],
            ),
        )
    ),
    # Attachments: a CSV (routed to tabular), the same CSV again (one child job), a PDF
    # named .bin (routed by its signature), an inline image (not routed), a file named
    # .xlsx whose bytes are not a zip (not routed), and a forwarded message/rfc822
    # (routed as eml, plus ENCLOSES to its own MESSAGE id).
    "attachments": Case(
        eml(
            [
                ("Message-ID", "<att@example.com>"),
                ("Date", "Wed, 4 Mar 2026 12:00:00 +0000"),
                ("From", "ops@example.com"),
                ("To", "finance@example.com"),
                ("Subject", "Fwd: files"),
                ("MIME-Version", "1.0"),
                ("Content-Type", 'multipart/mixed; boundary="m"'),
            ],
            multipart(
                "m",
                [
                    part([("Content-Type", "text/plain")], "See attached."),
                    part(
                        [
                            ("Content-Type", "text/csv"),
                            ("Content-Disposition", 'attachment; filename="q1.csv"'),
                        ],
                        "region,amount\nnorth,10\n",
                    ),
                    part(
                        [
                            ("Content-Type", "text/csv"),
                            ("Content-Disposition", 'attachment; filename="copy.csv"'),
                        ],
                        "region,amount\nnorth,10\n",
                    ),
                    part(
                        [
                            ("Content-Type", "application/octet-stream"),
                            ("Content-Disposition", 'attachment; filename="scan.bin"'),
                            ("Content-Transfer-Encoding", "base64"),
                        ],
                        base64.b64encode(b"%PDF-1.4\n%fake\n").decode(),
                    ),
                    part(
                        [
                            ("Content-Type", "image/png"),
                            ("Content-Disposition", 'inline; filename="logo.png"'),
                            ("Content-Transfer-Encoding", "base64"),
                        ],
                        base64.b64encode(b"\x89PNG\r\n\x1a\n").decode(),
                    ),
                    part(
                        [
                            ("Content-Type", "application/octet-stream"),
                            ("Content-Disposition", 'attachment; filename="book.xlsx"'),
                        ],
                        "not a zip",
                    ),
                    part(
                        [("Content-Type", "message/rfc822")],
                        eml(
                            [
                                ("Message-ID", "<inner@example.com>"),
                                ("Date", "Tue, 3 Mar 2026 09:00:00 +0000"),
                                ("From", "vendor@example.net"),
                                ("To", "ops@example.com"),
                                ("Subject", "Invoice"),
                            ],
                            "Invoice attached.",
                        ),
                    ),
                ],
            ),
        )
    ),
    # No Message-ID (fallback id from headers + body) and no Date: missing_date, with the
    # Received hops as candidates (first hop first); "tomorrow" stays unresolved.
    "no-id-no-date": Case(
        eml(
            [
                ("Received", "from b by c; Thu, 5 Mar 2026 10:00:02 +0000"),
                ("Received", "from a by b; Thu, 5 Mar 2026 10:00:00 +0000"),
                ("From", "anon@example.org"),
                ("To", "list@example.org"),
                ("Subject", "ping"),
            ],
            "see you tomorrow",
        )
    ),
    # A Date the RFC parser refuses: day-first and month-first candidates.
    "numeric-date": Case(
        eml(
            [
                ("Message-ID", "<num@example.com>"),
                ("Date", "03/04/2026 14:05"),
                ("From", "a@example.com"),
                ("Subject", "numeric"),
            ],
            "body",
        )
    ),
    # The body dates itself three weeks after the header: conflicting_dates.
    "conflicting-dates": Case(
        eml(
            [
                ("Message-ID", "<conf@example.com>"),
                ("Date", "Mon, 2 Mar 2026 09:00:00 +0000"),
                ("From", "memo@example.com"),
                ("Subject", "Memo"),
            ],
            "Date: 23 March 2026\n\nToday, March 23, 2026, the board met.",
        )
    ),
    # Truncated MIME: the closing boundary never comes and the last part stops mid-way;
    # its attachment is kept as a node, flagged truncated, and not routed.
    "truncated": Case(
        eml(
            [
                ("Message-ID", "<trunc@example.com>"),
                ("Date", "Mon, 2 Mar 2026 09:00:00 +0000"),
                ("From", "a@example.com"),
                ("Subject", "cut"),
                ("Content-Type", 'multipart/mixed; boundary="t"'),
            ],
            multipart(
                "t",
                [
                    part([("Content-Type", "text/plain")], "Complete part."),
                    part(
                        [
                            ("Content-Type", "text/csv"),
                            ("Content-Disposition", 'attachment; filename="half.csv"'),
                        ],
                        "a,b\n1,",
                    ),
                ],
                close=False,
            ),
        ),
        options={},
    ),
    # Outlook .msg: transport headers for ids and Date, the recipient table for To, Cc
    # and Bcc (Bcc exists only there), a CSV attachment identical to the .eml one
    # above (same child job name), and the submit time (consistent, no conflict).
    "outlook": Case(
        msg(
            Msg(
                subject="RE: Quarterly numbers",
                sender_name="Bob",
                sender_address="bob@example.com",
                body="Thanks Alice, see you on Friday.\r\n\r\n-----Original Message-----\r\n"
                "From: Alice\r\nSee you tomorrow.\r\n",
                transport_headers=(
                    "Message-ID: <m3@example.com>\r\n"
                    "In-Reply-To: <m2@example.com>\r\n"
                    "References: <m0@example.com> <m1@example.com> <m2@example.com>\r\n"
                    "Date: Tue, 3 Mar 2026 08:15:00 -0800\r\n"
                    "From: Bob <bob@example.com>\r\n\r\n"
                ),
                submit_time=datetime(2026, 3, 3, 16, 15, tzinfo=UTC),
                recipients=[
                    MsgRecipient("Alice Example", "alice@example.com", 1),
                    MsgRecipient("Carol", "carol@xn--bcher-kva.example", 2),
                    MsgRecipient("Audit", "audit@example.com", 3),
                ],
                attachments=[MsgAttachment("q1.csv", b"region,amount\nnorth,10\n", "text/csv")],
            )
        ),
        format="msg",
    ),
    # A .msg Outlook composed: no transport headers, so the submit time is the Date;
    # HTML-only body.
    "outlook-html-only": Case(
        msg(
            Msg(
                subject="Draft",
                sender_name="Eve",
                sender_address="eve@example.com",
                html=b"<html><body><p>Call me <i>tomorrow</i>.</p></body></html>",
                message_id="<draft-1@example.com>",
                submit_time=datetime(2026, 3, 7, 9, 0, tzinfo=UTC),
                recipients=[MsgRecipient("Frank", "frank@example.com", 1)],
            )
        ),
        format="msg",
    ),
    # Issue 16's real-world classes (fidelity_corpus.py says why each byte is there).
    "bounce": Case(fidelity_corpus.bounce()),
    "named-body": Case(fidelity_corpus.named_body()),
    "named-html-body": Case(fidelity_corpus.named_html_body()),
    "addresses": Case(fidelity_corpus.addresses()),
    "outlook-exchange": Case(fidelity_corpus.outlook_exchange(), format="msg"),
    "outlook-ndr": Case(fidelity_corpus.outlook_ndr(), format="msg"),
    "enclosed-base64": Case(fidelity_corpus.encoded_enclosed("base64")),
    "enclosed-quoted-printable": Case(fidelity_corpus.encoded_enclosed("quoted-printable")),
}


@pytest.fixture
def write(tmp_path: Path) -> Any:
    def write(name: str) -> Path:
        case = CORPUS[name]
        path = tmp_path / f"{name}.{case.format}"
        path.write_bytes(case.data)
        return path

    return write


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_golden(name: str, write: Any, golden: GoldenDir) -> None:
    case = CORPUS[name]
    subs = run_handler(
        handle, write(name), format=case.format, name=f"{name}.{case.format}", options=case.options
    )
    golden.check(name, subs)


@pytest.mark.parametrize(
    "name", ["reply-thread", "charsets", "outlook", "bounce", "outlook-exchange"]
)
def test_deterministic_across_processes(name: str, write: Any) -> None:
    case = CORPUS[name]
    check_determinism("email_worker:handle", write(name), format=case.format, options=case.options)
