"""The `ics` format: an iCalendar file on its own (calendar_file.py), made by code as
Outlook and Google export them."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

import pytest

from email_worker.handler import HANDLERS
from workers_common import InvalidInput
from workers_common.conformance import run_handler

from email_corpus import invitation


def project(tmp_path: Path, data: bytes) -> dict[str, Any]:
    path = tmp_path / "team.ics"
    path.write_bytes(data)
    (sub,) = run_handler(HANDLERS["ics"], path, format="ics", name=path.name, options={})
    result: dict[str, Any] = json.loads(sub)
    return result


def _export() -> bytes:
    """Two events and the first one again (exports repeat a moved meeting's master), with
    the byte-order mark Windows tools write."""
    first = invitation().replace("METHOD:REQUEST\r\n", "X-WR-CALNAME:Operations team\r\n")
    second = invitation(uid="site-visit-2026@example.com", when="DTSTART:20260601T070000Z")
    events = [
        text.split("BEGIN:VEVENT", 1)[1].rsplit("END:VEVENT", 1)[0]
        for text in (first, second, first)
    ]
    head = first.split("BEGIN:VEVENT", 1)[0]
    body = "".join(f"BEGIN:VEVENT{event}END:VEVENT\r\n" for event in events)
    return codecs.BOM_UTF8 + (head + body + "END:VCALENDAR\r\n").encode()


def test_calendar_export_is_a_calendar_of_events(tmp_path: Path) -> None:
    sub = project(tmp_path, _export())
    (calendar,) = [n for n in sub["nodes"] if "CALENDAR" in n["labels"]]
    assert calendar["properties"]["name"] == "Operations team"
    assert calendar["properties"]["event_count"] == 2
    assert calendar["properties"]["defects"] == ["calendar:duplicate_event"]
    events = {n["id"]: n for n in sub["nodes"] if "EVENT" in n["labels"]}
    # The same ids as the invitations' in a mailbox: one node per meeting across formats.
    assert set(events) == {
        "email:event:040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5",
        "email:event:site-visit-2026@example.com",
    }
    assert events["email:event:site-visit-2026@example.com"]["properties"]["start"] == (
        "2026-06-01T07:00:00+00:00"
    )
    assert sum(r["type"] == "HAS_EVENT" for r in sub["relationships"]) == 2
    assert sub["canonicalText"].startswith("Calendar: Operations team\n\nEvent: Pump station")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"Subject: not a calendar\r\n\r\nhello", "no BEGIN:VCALENDAR"),
        (b"BEGIN:VCALENDAR\r\n\x00\x01 binary \r\n", "not a readable iCalendar file"),
    ],
    ids=["not-a-calendar", "damaged"],
)
def test_what_is_not_a_calendar_is_invalid_input(tmp_path: Path, data: bytes, says: str) -> None:
    path = tmp_path / "bad.ics"
    path.write_bytes(data)
    with pytest.raises(InvalidInput, match=says):
        run_handler(HANDLERS["ics"], path, format="ics", options={})
