"""mbox files through the real handler: the split, the MAILBOX node, one eml child job
per distinct message (named by its bytes' hash), the CONTAINS edges to the ids the
children's own jobs give their MESSAGE nodes, and the typed failures."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import blake3
import pytest

from email_worker import handle
from email_worker.mailbox import handle_mbox, mailbox_id, split_mbox
from workers_common import InvalidInput, TooLarge
from workers_common.conformance import check_submissions, run_handler

from email_corpus import eml, mbox


def _message(n: int, *, message_id: bool = True, body: str = "") -> bytes:
    headers = [
        ("From", "Alice <alice@example.com>"),
        ("To", "bob@example.com"),
        ("Subject", f"Note {n}"),
        ("Date", f"Mon, {n + 1} Mar 2026 10:00:00 +0000"),
    ]
    if message_id:
        headers.append(("Message-ID", f"<note{n}@Example.COM>"))
    return eml(headers, body or f"Body of note {n}.\r\n")


def _run(tmp_path: Path, data: bytes, **options: Any) -> list[dict[str, Any]]:
    path = tmp_path / "Inbox.mbox"
    path.write_bytes(data)
    subs = run_handler(handle_mbox, path, format="mbox", name="Inbox.mbox", options=options)
    check_submissions(subs)
    return [json.loads(raw) for raw in subs]


def _children(subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [child for sub in subs for child in sub.get("childJobs", [])]


def test_each_message_is_an_eml_child_named_by_its_bytes(tmp_path: Path) -> None:
    messages = [_message(1), _message(2, body="From here on, read carefully.\r\n"), _message(3)]
    subs = _run(tmp_path, mbox(messages), clarify=True)
    [mailbox] = subs[0]["nodes"]
    assert mailbox["labels"] == ["MAILBOX"]
    assert mailbox["id"] == "email:mailbox:Inbox.mbox"
    assert (mailbox["properties"]["messages"], mailbox["properties"]["enqueued"]) == (3, 3)
    children = _children(subs)
    assert [c["format"] for c in children] == ["eml", "eml", "eml"]
    for child in children:
        content = base64.b64decode(child["contentB64"])
        assert child["name"] == f"message:{blake3.blake3(content).hexdigest()}"
        assert child["options"] == {"clarify": True}  # inherited
    second = base64.b64decode(children[1]["contentB64"])
    assert b"\n>From here on" in second  # the writer's quoting is kept as written
    contains = [r["toId"] for s in subs for r in s["relationships"] if r["type"] == "CONTAINS"]
    # The ids the children's own jobs give their MESSAGE nodes (domain lower-cased).
    assert contains == [f"email:msg:note{n}@example.com" for n in (1, 2, 3)]


def test_a_child_projects_to_the_message_id_the_mailbox_links(tmp_path: Path) -> None:
    subs = _run(tmp_path, mbox([_message(7)]))
    [child] = _children(subs)
    path = tmp_path / "child.eml"
    path.write_bytes(base64.b64decode(child["contentB64"]))
    projected = json.loads(run_handler(handle, path, format="eml")[0])
    ids = {n["id"] for n in projected["nodes"]}
    [edge] = [r for s in subs for r in s["relationships"] if r["type"] == "CONTAINS"]
    assert edge["toId"] in ids
    assert edge["fromId"] == mailbox_id("Inbox.mbox")


def test_duplicates_empty_and_message_id_less_messages_are_counted(tmp_path: Path) -> None:
    data = mbox([_message(1), _message(1), _message(2, message_id=False)])
    data += b"From empty@example.com Mon Mar  2 09:30:00 2026\n\n"
    subs = _run(tmp_path, data)
    props = subs[0]["nodes"][0]["properties"]
    assert props["messages"] == 4
    assert (props["duplicates"], props["empty"], props["without_message_id"]) == (1, 1, 1)
    assert props["enqueued"] == 2
    assert len(_children(subs)) == 2
    contains = [r for s in subs for r in s["relationships"] if r["type"] == "CONTAINS"]
    assert len(contains) == 1


def test_crlf_mailboxes_split_the_same_way(tmp_path: Path) -> None:
    messages = [_message(1), _message(2)]
    plain = _children(_run(tmp_path, mbox(messages)))
    windows = _children(_run(tmp_path, mbox(messages, crlf=True)))
    assert len(plain) == len(windows) == 2
    for child in windows:
        assert not base64.b64decode(child["contentB64"]).endswith(b"\r")


def test_a_message_over_max_bytes_is_skipped_and_counted(tmp_path: Path) -> None:
    big = _message(2, body="x" * 5000 + "\r\n")
    subs = _run(tmp_path, mbox([_message(1), big]), max_bytes=2000)
    props = subs[0]["nodes"][0]["properties"]
    assert (props["too_large"], props["enqueued"]) == (1, 1)


def test_an_empty_file_is_a_mailbox_without_messages(tmp_path: Path) -> None:
    subs = _run(tmp_path, b"")
    assert subs[0]["nodes"][0]["properties"]["messages"] == 0
    assert _children(subs) == []


@pytest.mark.parametrize(
    "data",
    [
        b"Subject: not an mbox\r\n\r\nbody\r\n",
        b"\x00\x01binary",
        b"%PDF-1.7\n",
        b"From the author of this note: hello.\n",
    ],
)
def test_a_file_that_is_not_an_mbox_is_invalid_input(data: bytes, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="not an mbox file"):
        _run(tmp_path, data)


def test_over_max_messages_is_too_large_with_nothing_enqueued(tmp_path: Path) -> None:
    path = tmp_path / "big.mbox"
    path.write_bytes(mbox([_message(n) for n in range(5)]))
    with pytest.raises(TooLarge, match="5 messages is over max_messages=4"):
        run_handler(handle_mbox, path, format="mbox", options={"max_messages": 4})


@pytest.mark.parametrize("crlf", [False, True])
def test_the_split_keeps_each_message_exactly(crlf: bool) -> None:
    """Each message as written, without the separator's blank line, the same wherever it
    is in the file (so its child's name is too); a last message without one keeps its
    own final line break."""
    messages = [_message(1), _message(2)]
    data = mbox(messages, crlf=crlf)
    newline = b"\r\n" if crlf else b"\n"
    expected = [m.replace(b"\r\n", newline).rstrip(newline) + newline for m in messages]
    assert [data[a:b] for a, b in split_mbox(io.BytesIO(data))] == expected
    unterminated = data.rstrip(newline) + newline  # no blank line after the last one
    assert [unterminated[a:b] for a, b in split_mbox(io.BytesIO(unterminated))] == expected


def test_many_messages_are_sent_in_partials_under_the_caps(tmp_path: Path) -> None:
    subs = _run(tmp_path, mbox([_message(n) for n in range(4500)]))
    per_partial = [len(s.get("childJobs", [])) for s in subs]
    assert max(per_partial) <= 2000
    assert sum(per_partial) == 4500


def test_an_unquoted_from_line_in_a_body_does_not_split_its_message() -> None:
    """Writers quote a body line that begins with `From ` (`>From `); one that did not
    must not cut the message: a separator follows a blank line and carries a time."""
    body = (
        "Shall we meet on Friday?\r\nFrom my side the draft is ready.\r\n"
        "\r\nFrom here on, all good.\r\n"
    )
    first = _message(1, body=body)
    data = b"From a@example.com Mon Mar  2 09:30:00 2026\n" + first.replace(b"\r\n", b"\n")
    data += b"\nFrom b@example.com Mon Mar  2 09:31:00 2026\n" + _message(2).replace(b"\r\n", b"\n")
    parts = [data[a:b] for a, b in split_mbox(io.BytesIO(data))]
    assert len(parts) == 2
    assert b"From my side the draft is ready." in parts[0]
    assert b"From here on, all good." in parts[0]
