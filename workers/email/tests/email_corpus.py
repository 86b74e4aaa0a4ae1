"""Test messages built by code, so a reader sees why each byte is there.

`eml(...)` writes an RFC 5322 message with CRLF line endings; `msg(...)` writes an
Outlook .msg with extract-msg's OleWriter: string properties as `__substg1.0_XXXX001F`
streams (UTF-16-LE), fixed-size ones in the `__properties_version1.0` stream (a 32-byte
header at the top level, 8 bytes in recipient and attachment storages, then 16 bytes per
property: tag, flags, value), one storage per recipient and attachment, and the named
property storage extract-msg insists on.
"""

from __future__ import annotations

import struct
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import compressed_rtf
from extract_msg.ole_writer import OleWriter

CRLF = b"\r\n"


def eml(headers: Sequence[tuple[str, str]], body: bytes | str = b"") -> bytes:
    """A message: the headers in order, a blank line, the body (LF turned into CRLF)."""
    raw = body.encode("utf-8") if isinstance(body, str) else body
    head = b"".join(f"{name}: {value}".encode() + CRLF for name, value in headers)
    return head + CRLF + raw.replace(b"\r\n", b"\n").replace(b"\n", CRLF)


def multipart(boundary: str, parts: Sequence[bytes], *, close: bool = True) -> bytes:
    """A multipart body: each part is its own headers + body (already CRLF)."""
    out = b"".join(f"--{boundary}".encode() + CRLF + part + CRLF for part in parts)
    return out + (f"--{boundary}--".encode() + CRLF if close else b"")


def deep_nesting(levels: int, headers: Sequence[tuple[str, str]]) -> bytes:
    """`levels` multiparts inside each other with one text part ("deep text") at the bottom."""
    out = b"--b0\r\n"
    for level in range(1, levels):
        out += f'Content-Type: multipart/mixed; boundary="b{level}"\r\n\r\n--b{level}\r\n'.encode()
    out += b"Content-Type: text/plain\r\n\r\ndeep text\r\n"
    for level in reversed(range(levels)):
        out += f"--b{level}--\r\n".encode()
    return eml([*headers, ("Content-Type", 'multipart/mixed; boundary="b0"')]) + out


def part(headers: Sequence[tuple[str, str]], body: bytes | str) -> bytes:
    return eml(headers, body)


# -- Outlook .msg -------------------------------------------------------------------------

_PT_UNICODE = 0x001F
_PT_BINARY = 0x0102
_PT_LONG = 0x0003
_PT_SYSTIME = 0x0040


def _variable(tag: int, size: int) -> bytes:
    return struct.pack("<IIII", tag, 6, size, 0)


def _fixed(tag: int, value: int) -> bytes:
    return struct.pack("<IIQ", tag, 6, value)


def _filetime(moment: datetime) -> int:
    # 100 ns ticks since 1601-01-01 UTC.
    delta = moment - datetime(1601, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 10_000_000 + delta.microseconds * 10


@dataclass
class MsgRecipient:
    name: str
    address: str
    kind: int  # 1 To, 2 Cc, 3 Bcc
    address_type: str = "SMTP"  # "EX": `address` is an X.500 name, no SMTP address stream
    supplementary_info: str | None = None
    """PR_SUPPLEMENTARY_INFO (0x0C1B) on a report's recipient: `<mta #5.1.1 diagnostic>`."""
    ndr_status_code: int | None = None
    """PR_NDR_STATUS_CODE (0x0C20): the status as class, subject, detail digits (511)."""
    remote_mta: str | None = None
    """PR_DSN_REMOTE_MTA (0x0C21)."""


@dataclass
class MsgAttachment:
    filename: str
    data: bytes
    mimetype: str = ""


@dataclass
class MsgMeeting:
    """The named properties Outlook keeps a meeting in (PSETID_Appointment, PSETID_Meeting)."""

    start: datetime
    end: datetime
    location: str = ""
    global_object_id: bytes = b""
    all_day: bool = False


_PSETID_APPOINTMENT = "00062002-0000-0000-C000-000000000046"
_PSETID_MEETING = "6ED8DA90-450B-101B-98DA-00AA003F1305"


def _named(writer: OleWriter, meeting: MsgMeeting) -> bytes:
    """The name-to-id map (GUID and entry streams) for the meeting's named properties,
    written into the writer; returns their entries in the top-level property stream."""
    guids = [uuid.UUID(_PSETID_APPOINTMENT).bytes_le, uuid.UUID(_PSETID_MEETING).bytes_le]
    # (LID, GUID index: 3 is the GUID stream's first), in property index order 0, 1, ...
    named = [(0x820D, 3), (0x820E, 3), (0x8208, 3), (0x8215, 3), (0x0003, 4)]
    entries = b"".join(
        struct.pack("<IHH", lid, guid << 1, index) for index, (lid, guid) in enumerate(named)
    )
    writer.addEntry("__nameid_version1.0/__substg1.0_00020102", b"".join(guids))
    writer.addEntry("__nameid_version1.0/__substg1.0_00030102", entries)
    writer.addEntry("__nameid_version1.0/__substg1.0_00040102", b"")
    props = _fixed(0x8000 << 16 | _PT_SYSTIME, _filetime(meeting.start))
    props += _fixed(0x8001 << 16 | _PT_SYSTIME, _filetime(meeting.end))
    location = meeting.location.encode("utf-16-le")
    writer.addEntry("__substg1.0_8002001F", location)
    props += _variable(0x8002 << 16 | _PT_UNICODE, len(location) + 2)
    props += _fixed(0x8003 << 16 | 0x000B, int(meeting.all_day))
    writer.addEntry("__substg1.0_80040102", meeting.global_object_id)
    props += _variable(0x8004 << 16 | _PT_BINARY, len(meeting.global_object_id))
    return props


@dataclass
class Msg:
    subject: str = ""
    sender_name: str = ""
    sender_address: str = ""
    sender_x500: str = ""
    """An Exchange-only sender: PR_SENDER_EMAIL_ADDRESS is this X.500 name, type EX, and
    there is no SMTP address (sender_address stays empty)."""
    body: str | None = None
    html: bytes | None = None
    rtf: bytes | None = None
    """PR_RTF_COMPRESSED's uncompressed RTF (written compressed, as Outlook stores it)."""
    transport_headers: str | None = None
    message_id: str | None = None
    in_reply_to: str | None = None
    submit_time: datetime | None = None
    internet_cpid: int | None = None
    """PR_INTERNET_CPID: the code page of the HTML body."""
    message_class: str = "IPM.Note"
    """PR_MESSAGE_CLASS: REPORT.IPM.Note.NDR for a non-delivery report."""
    reporting_mta: str | None = None
    """PidTagReportingMessageTransferAgent (0x6820) of a report."""
    recipients: list[MsgRecipient] = field(default_factory=list)
    attachments: list[MsgAttachment] = field(default_factory=list)
    meeting: MsgMeeting | None = None
    """An Outlook meeting item's named properties (message class IPM.Schedule.Meeting.*)."""


def _strings(writer: OleWriter, prefix: str, values: dict[int, str | None]) -> bytes:
    props = b""
    for prop_id, value in values.items():
        if value is None:
            continue
        data = value.encode("utf-16-le")
        writer.addEntry(f"{prefix}__substg1.0_{prop_id:04X}001F", data)
        props += _variable(prop_id << 16 | _PT_UNICODE, len(data) + 2)
    return props


def _bodies(writer: OleWriter, spec: Msg) -> bytes:
    """The HTML and compressed RTF body streams; their property entries."""
    props = b""
    if spec.html is not None:
        writer.addEntry("__substg1.0_10130102", spec.html)
        props += _variable(0x1013 << 16 | _PT_BINARY, len(spec.html))
    if spec.rtf is not None:
        packed = compressed_rtf.compress(spec.rtf)
        writer.addEntry("__substg1.0_10090102", packed)
        props += _variable(0x1009 << 16 | _PT_BINARY, len(packed))
    return props


def msg(spec: Msg) -> bytes:
    """The bytes of a .msg file for `spec`."""
    writer = OleWriter()
    writer.addEntry("__nameid_version1.0", storage=True)
    props = _strings(
        writer,
        "",
        {
            0x001A: spec.message_class,
            0x6820: spec.reporting_mta,
            0x0037: spec.subject,
            0x0C1A: spec.sender_name or None,
            0x0C1E: "EX" if spec.sender_x500 else None,
            0x0C1F: spec.sender_x500 or spec.sender_address or None,
            0x5D01: spec.sender_address or None,
            0x1000: spec.body,
            0x007D: spec.transport_headers,
            0x1035: spec.message_id,
            0x1042: spec.in_reply_to,
        },
    )
    props += _bodies(writer, spec)
    if spec.meeting is not None:
        props += _named(writer, spec.meeting)
    if spec.submit_time is not None:
        props += _fixed(0x0039 << 16 | _PT_SYSTIME, _filetime(spec.submit_time))
    if spec.internet_cpid is not None:
        props += _fixed(0x3FDE << 16 | _PT_LONG, spec.internet_cpid)
    for index, recipient in enumerate(spec.recipients):
        storage = f"__recip_version1.0_#{index:08X}"
        writer.addEntry(storage, storage=True)
        recipient_props = b"\0" * 8 + _strings(
            writer,
            f"{storage}/",
            {
                0x3001: recipient.name,
                0x3002: recipient.address_type,
                0x3003: recipient.address,
                0x39FE: recipient.address if recipient.address_type == "SMTP" else None,
                0x0C1B: recipient.supplementary_info,
                0x0C21: recipient.remote_mta,
            },
        )
        recipient_props += _fixed(0x0C15 << 16 | _PT_LONG, recipient.kind)
        if recipient.ndr_status_code is not None:
            recipient_props += _fixed(0x0C20 << 16 | _PT_LONG, recipient.ndr_status_code)
        writer.addEntry(f"{storage}/__properties_version1.0", recipient_props)
    for index, attachment in enumerate(spec.attachments):
        storage = f"__attach_version1.0_#{index:08X}"
        writer.addEntry(storage, storage=True)
        attachment_props = b"\0" * 8 + _strings(
            writer,
            f"{storage}/",
            {0x3707: attachment.filename, 0x3704: attachment.filename,
             0x370E: attachment.mimetype or None},
        )  # fmt: skip
        writer.addEntry(f"{storage}/__substg1.0_37010102", attachment.data)
        attachment_props += _variable(0x3701 << 16 | _PT_BINARY, len(attachment.data))
        attachment_props += _fixed(0x3705 << 16 | _PT_LONG, 1)  # ATTACH_BY_VALUE
        writer.addEntry(f"{storage}/__properties_version1.0", attachment_props)
    header = struct.pack(
        "<8sIIII8s",
        b"",
        len(spec.recipients),
        len(spec.attachments),
        len(spec.recipients),
        len(spec.attachments),
        b"",
    )
    writer.addEntry("__properties_version1.0", header + props)
    if spec.meeting is None:  # the named property map extract-msg insists on, empty
        for stream in ("00020102", "00030102", "00040102"):
            writer.addEntry(f"__nameid_version1.0/__substg1.0_{stream}", b"")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.msg"
        writer.write(path)
        return path.read_bytes()


def ole_not_a_message() -> bytes:
    """A valid OLE compound file that holds no message (as a renamed .doc would)."""
    writer = OleWriter()
    writer.addEntry("WordDocument", b"\x00" * 64)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.msg"
        writer.write(path)
        return path.read_bytes()


def mbox(messages: Sequence[bytes], *, crlf: bool = False) -> bytes:
    """An mbox of `messages` (mboxrd: a body line starting with `From ` quoted `>From `),
    each after a `From ` separator line and followed by a blank line, as mail clients
    write it."""
    out = bytearray()
    for n, message in enumerate(messages):
        text = message.replace(b"\r\n", b"\n")
        text = b"\n".join(
            b">" + line if line.lstrip(b">").startswith(b"From ") else line
            for line in text.split(b"\n")
        )
        out += b"From sender%d@example.com Mon Mar  2 09:30:00 2026\n" % n
        out += text.rstrip(b"\n") + b"\n\n"
    data = bytes(out)
    return data.replace(b"\n", b"\r\n") if crlf else data


# -- TNEF (winmail.dat) ---------------------------------------------------------------------


def _tnef_attribute(level: int, attribute: int, kind: int, data: bytes) -> bytes:
    """One TNEF attribute: level, id (its low word, then its type), length, data, and the
    data's checksum (the sum of its bytes, mod 65536)."""
    head = struct.pack("<BHHI", level, attribute, kind, len(data))
    return head + data + struct.pack("<H", sum(data) & 0xFFFF)


def tnef(
    files: Sequence[tuple[str, bytes]], *, body: str | None = None, rtf: bytes | None = None
) -> bytes:
    """A TNEF container as Outlook writes one for a non-Outlook recipient: its version and
    code page, its body (attBody in code page 1252; or PR_RTF_COMPRESSED among its MAPI
    properties, `rtf` uncompressed here), then per file its rendering data, title (the
    8.3-style name) and bytes."""
    out = struct.pack("<IH", 0x223E9F78, 0x0001)
    out += _tnef_attribute(1, 0x9006, 0x0008, struct.pack("<I", 0x00010000))
    out += _tnef_attribute(1, 0x9007, 0x0006, struct.pack("<II", 1252, 0))
    if body is not None:
        out += _tnef_attribute(1, 0x800C, 0x0002, body.encode("cp1252"))
    if rtf is not None:
        packed = compressed_rtf.compress(rtf)
        # One MAPI property: count, then type PT_BINARY and id 0x1009, one value, its
        # length and bytes padded to four.
        prop = struct.pack("<IHHII", 1, _PT_BINARY, 0x1009, 1, len(packed))
        prop += packed + b"\0" * (-len(packed) % 4)
        out += _tnef_attribute(1, 0x9003, 0x0006, prop)
    for name, data in files:
        out += _tnef_attribute(2, 0x9002, 0x0006, bytes(14))
        out += _tnef_attribute(2, 0x8010, 0x0001, name.encode("cp1252") + b"\x00")
        out += _tnef_attribute(2, 0x800F, 0x0006, data)
    return out


# -- meeting invitations (text/calendar) ----------------------------------------------------

# What Exchange writes: its Windows zone name with a VTIMEZONE giving the rules.
_EXCHANGE_ZONE = """BEGIN:VTIMEZONE
TZID:W. Europe Standard Time
BEGIN:STANDARD
DTSTART:16010101T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010101T020000
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3
END:DAYLIGHT
END:VTIMEZONE
"""


def invitation(
    method: str = "REQUEST",
    *,
    uid: str = "040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5",
    status: str = "CONFIRMED",
    sequence: int = 0,
    when: str = "DTSTART;TZID=W. Europe Standard Time:20260504T090000\n"
    "DTEND;TZID=W. Europe Standard Time:20260504T100000",
    extra: str = "",
) -> str:
    """An iCalendar invitation as Exchange sends one (CRLF lines): an organizer, a
    required and an optional attendee, a place with an escaped comma."""
    lines = (
        "BEGIN:VCALENDAR\nMETHOD:" + method + "\nPRODID:Microsoft Exchange Server 2010\n"
        "VERSION:2.0\n" + _EXCHANGE_ZONE + "BEGIN:VEVENT\n"
        "ORGANIZER;CN=Erin Example:mailto:erin@example.com\n"
        "ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE;CN=Ada Lovelace:"
        "mailto:ada@example.com\n"
        'ATTENDEE;ROLE=OPT-PARTICIPANT;PARTSTAT=ACCEPTED;CN="Hopper, Grace":'
        "mailto:grace@example.com\n"
        f"UID:{uid}\nSUMMARY;LANGUAGE=en-US:Pump station review\n{when}\n"
        f"DTSTAMP:20260420T081500Z\nSTATUS:{status}\nSEQUENCE:{sequence}\n"
        "LOCATION;LANGUAGE=en-US:Room 4\\, Harbour building\n"
        + extra
        + "END:VEVENT\nEND:VCALENDAR\n"
    )
    return lines.replace("\n", "\r\n")
