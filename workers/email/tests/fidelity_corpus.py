"""Messages for the real-world classes of issue 16, built by code: each is the smallest
message that shows one class (a bounce, a named body part, run-together addresses, an
Exchange-only sender, a transfer-encoded enclosed message). test_golden.py holds their
projections as golden files; test_email_real_world.py asserts what each class must become."""

from __future__ import annotations

import base64
import quopri
from datetime import UTC, datetime

from email_corpus import Msg, MsgRecipient, eml, msg, multipart, part

ORIGINAL_ID = "<orig-42@example.com>"
"""The Message-ID of the message the bounce returns."""

INNER = eml(
    [
        ("Message-ID", "<inner-enc@example.net>"),
        ("Date", "Tue, 3 Mar 2026 09:00:00 +0000"),
        ("From", "vendor@example.net"),
        ("To", "ops@example.com"),
        ("Subject", "=?UTF-8?Q?Rechnung_f=C3=BCr_M=C3=A4rz?="),
    ],
    "Invoice attached, a line long enough that quoted-printable must break it softly "
    "somewhere in the middle = and an equals sign.",
)
"""The message enclosed transfer-encoded in `encoded_enclosed`."""


def bounce() -> bytes:
    """A multipart/report delivery status notification (RFC 3464): the human-readable
    part, a delivery-status with the reporting MTA and two recipients (one failed with a
    diagnostic, one delayed), and the returned message's headers (text/rfc822-headers)."""
    return eml(
        [
            ("Message-ID", "<dsn-1@mx.example.com>"),
            ("Date", "Wed, 4 Mar 2026 12:00:05 +0000"),
            ("From", "Mail Delivery System <MAILER-DAEMON@mx.example.com>"),
            ("To", "alice@example.com"),
            ("Subject", "Undelivered Mail Returned to Sender"),
            ("MIME-Version", "1.0"),
            ("Content-Type", 'multipart/report; report-type=delivery-status; boundary="r"'),
        ],
        multipart(
            "r",
            [
                part(
                    [("Content-Type", "text/plain; charset=us-ascii")],
                    "Your message could not be delivered to one or more recipients.",
                ),
                part(
                    [("Content-Type", "message/delivery-status")],
                    "Reporting-MTA: dns; mx.example.com\n"
                    "Arrival-Date: Wed, 4 Mar 2026 12:00:00 +0000\n"
                    "\n"
                    "Final-Recipient: rfc822; bob@example.org\n"
                    "Original-Recipient: rfc822; Bob@Example.org\n"
                    "Action: failed\n"
                    "Status: 5.1.1 (user unknown)\n"
                    "Remote-MTA: dns; mail.example.org\n"
                    "Diagnostic-Code: smtp; 550 5.1.1 <bob@example.org>: user unknown\n"
                    "\n"
                    "Final-Recipient: rfc822; carol@example.net\n"
                    "Action: delayed\n"
                    "Status: 4.4.1\n",
                ),
                part(
                    [("Content-Type", "text/rfc822-headers")],
                    f"Message-ID: {ORIGINAL_ID}\n"
                    "Date: Wed, 4 Mar 2026 11:59:00 +0000\n"
                    "From: Alice <alice@example.com>\n"
                    "To: bob@example.org, carol@example.net\n"
                    "Subject: Lunch?\n",
                ),
            ],
        ),
    )


def named_body() -> bytes:
    """The body is a text/plain part with a file name and an inline disposition (what
    some clients write); a second named text part after it is a file; the HTML twin of a
    named HTML part without any disposition is the other alternative."""
    return eml(
        [
            ("Message-ID", "<named@example.com>"),
            ("Date", "Thu, 5 Mar 2026 10:00:00 +0000"),
            ("From", "dana@example.com"),
            ("To", "eve@example.com"),
            ("Subject", "notes"),
            ("MIME-Version", "1.0"),
            ("Content-Type", 'multipart/mixed; boundary="n"'),
        ],
        multipart(
            "n",
            [
                part(
                    [
                        ("Content-Type", "text/plain; charset=utf-8"),
                        ("Content-Disposition", 'inline; filename="body.txt"'),
                    ],
                    "The body, in a part that has a file name.",
                ),
                part(
                    [
                        ("Content-Type", "text/plain"),
                        ("Content-Disposition", 'inline; filename="notes.txt"'),
                    ],
                    "A second named text part: a file.",
                ),
            ],
        ),
    )


def named_html_body() -> bytes:
    """A single text/html part with a name and no disposition: it is the body."""
    return eml(
        [
            ("Message-ID", "<named-html@example.com>"),
            ("From", "news@example.com"),
            ("Subject", "page"),
            ("Content-Type", 'text/html; charset=utf-8; name="page.html"'),
        ],
        "<p>Hello from <b>a named</b> HTML part.</p>",
    )


def addresses() -> bytes:
    """A display name and a bare address run together in From (the stdlib parses the
    addr-spec `"Big Bug bb"@bug.com`); one recipient in To and again in Cc."""
    return eml(
        [
            ("Message-ID", "<addr@bug.com>"),
            ("Date", "Fri, 6 Mar 2026 08:00:00 +0000"),
            ("From", "Big Bug bb@bug.com"),
            ("To", "Dev <dev@bug.com>, qa@bug.com"),
            ("Cc", "DEV@bug.com"),
            ("Subject", "run together"),
        ],
        "body",
    )


EXCHANGE_SENDER = (
    "/O=EXCHANGELABS/OU=EXCHANGE ADMINISTRATIVE GROUP (FYDIBOHF23SPDLT)"
    "/CN=RECIPIENTS/CN=3F2504E0-Bob Jones"
)
EXCHANGE_RECIPIENT = "/o=ExchangeLabs/ou=Exchange Administrative Group/cn=Recipients/cn=carol"


def outlook_exchange() -> bytes:
    """A .msg whose sender and one recipient exist only in Exchange: X.500 names, address
    type EX, no SMTP address, no transport headers."""
    return msg(
        Msg(
            subject="Budget",
            sender_name="Bob Jones",
            sender_x500=EXCHANGE_SENDER,
            body="See the budget.",
            message_id="<ex-1@example.com>",
            submit_time=datetime(2026, 3, 6, 9, 0, tzinfo=UTC),
            recipients=[
                MsgRecipient("Carol", EXCHANGE_RECIPIENT, 1, address_type="EX"),
                MsgRecipient("Dan", "dan@example.com", 2),
            ],
        )
    )


def encoded_enclosed(encoding: str) -> bytes:
    """A forward whose message/rfc822 part is base64 or quoted-printable encoded."""
    body = base64.encodebytes(INNER) if encoding == "base64" else quopri.encodestring(INNER)
    return eml(
        [
            ("Message-ID", f"<fwd-{encoding}@example.com>"),
            ("Date", "Wed, 4 Mar 2026 12:00:00 +0000"),
            ("From", "ops@example.com"),
            ("To", "finance@example.com"),
            ("Subject", "Fwd: invoice"),
            ("MIME-Version", "1.0"),
            ("Content-Type", 'multipart/mixed; boundary="e"'),
        ],
        multipart(
            "e",
            [
                part([("Content-Type", "text/plain")], "Forwarding."),
                part(
                    [
                        ("Content-Type", "message/rfc822"),
                        ("Content-Transfer-Encoding", encoding),
                        ("Content-Disposition", 'attachment; filename="invoice.eml"'),
                    ],
                    body,
                ),
            ],
        ),
    )


def outlook_html_cp1251() -> bytes:
    """An HTML-only .msg written in Windows-1251, which only PR_INTERNET_CPID (1251) says:
    the HTML has no <meta charset>. Read without it, the body was Windows-1252 mojibake."""
    return msg(
        Msg(
            subject="Report",
            sender_name="Ivan",
            sender_address="ivan@example.ru",
            html="<html><body><p>Счёт оплачен.</p></body></html>".encode("cp1251"),
            message_id="<cp1251@example.ru>",
            submit_time=datetime(2026, 3, 6, 9, 0, tzinfo=UTC),
            internet_cpid=1251,
        )
    )


def outlook_ndr() -> bytes:
    """An Outlook non-delivery report (REPORT.IPM.Note.NDR) as Exchange writes one from a
    DSN (MS-OXCMAIL 2.2.3.7.1): the reporting MTA on the message; the recipient table lists
    the recipients reported on, each with PR_SUPPLEMENTARY_INFO (`<remote-mta #status
    diagnostic>`), PR_NDR_STATUS_CODE and the remote MTA; the addressee (the original
    sender) only in the transport headers. One recipient has no supplementary info: its
    status comes from the status code alone."""
    return msg(
        Msg(
            subject="Undeliverable: Quarterly numbers",
            message_class="REPORT.IPM.Note.NDR",
            reporting_mta="dns; mx1.example.com",
            sender_name="Microsoft Outlook",
            sender_address="postmaster@example.com",
            body="Delivery has failed to these recipients or groups.",
            message_id="<ndr-1@mx1.example.com>",
            submit_time=datetime(2026, 3, 8, 10, 0, tzinfo=UTC),
            transport_headers=(
                "From: Microsoft Outlook <postmaster@example.com>\r\n"
                "To: Alice <alice@example.com>\r\n"
                "Subject: Undeliverable: Quarterly numbers\r\n"
                "Message-ID: <ndr-1@mx1.example.com>\r\n"
                "Date: Sun, 8 Mar 2026 10:00:00 +0000\r\n"
            ),
            recipients=[
                MsgRecipient(
                    "bob@example.org",
                    "bob@example.org",
                    1,
                    supplementary_info="<mail.example.org #5.1.1 smtp;550 5.1.1 user unknown>",
                    ndr_status_code=511,
                    remote_mta="mail.example.org",
                ),
                MsgRecipient("Carol", "carol@example.net", 1, ndr_status_code=544),
            ],
        )
    )
