"""End to end through the real core: `telha serve`, real email worker processes, the CLI.

Tests that read the graph (`telha graph` / `telha node`), heal dangling edges or enqueue
child jobs need the core's graph store; on a core without it they are skipped with that
reason. The csv child jobs are served by a stand-in csv worker (tests/csv_stand_in.py)
until the tabular worker lands on main.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from email_worker import handle
from workers_common.conformance import run_handler, submission_hash

from email_corpus import deep_nesting, eml, mbox, multipart, part, tnef
from email_e2e import MISSING, TELHA_BIN, Core, has_graph_reads

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(MISSING, reason=f"core binary {TELHA_BIN} not built (cargo build)"),
    pytest.mark.timeout(180),
]
needs_graph = pytest.mark.skipif(
    not has_graph_reads(),
    reason="needs the core's graph store (branch graph-store): telha graph/node, "
    "dangling-edge healing and child jobs from childJobs",
)
CSV_STAND_IN = Path(__file__).with_name("csv_stand_in.py")


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Core]:
    running = Core(tmp_path / "core")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


ALICE = "Alice <alice@example.com>"
BOB = "Bob <bob@example.com>"


def thread_message(n: int, *, parent: int | None, sender: str, to: str) -> bytes:
    headers = [("Message-ID", f"<t{n}@example.com>")]
    if parent is not None:
        ancestors = " ".join(f"<t{i}@example.com>" for i in range(1, parent + 1))
        headers += [("In-Reply-To", f"<t{parent}@example.com>"), ("References", ancestors)]
    headers += [
        ("Date", f"Mon, {n + 1} Mar 2026 10:00:00 +0000"),
        ("From", sender),
        ("To", to),
        ("Subject", "Re: " * (n - 1) + "Plans"),
    ]
    return eml(headers, f"Message {n} of the thread.")


def test_a_message_succeeds_with_the_submission_the_handler_makes(
    core: Core, tmp_path: Path
) -> None:
    """The worker process's submission reaches the core byte for byte."""
    core.email_worker()
    source = write(tmp_path, "one.eml", thread_message(1, parent=None, sender=ALICE, to=BOB))
    job = core.finished(core.ingest(source)["id"])
    assert (job["state"], job["failures"]) == ("succeeded", [])
    [expected] = run_handler(handle, source, format="eml", name=job["name"])
    assert job["submission_hash"] == submission_hash([expected])


@needs_graph
def test_a_thread_ingested_newest_first_resolves_every_in_reply_to(
    core: Core, tmp_path: Path
) -> None:
    """t3 replies to t2 replies to t1, ingested t3, t2, t1: each IN_REPLY_TO dangles until
    its parent's job commits, then resolves; one PERSON per address across the thread."""
    core.email_worker()
    messages = {
        3: thread_message(3, parent=2, sender=ALICE, to=BOB),
        2: thread_message(2, parent=1, sender=BOB, to=ALICE),
        1: thread_message(1, parent=None, sender=ALICE, to=BOB),
    }
    first = core.finished(core.ingest(write(tmp_path, "t3.eml", messages[3]))["id"])
    assert first["state"] == "succeeded"
    early = core.node("email:msg:t3@example.com")
    assert early is not None
    [dangling] = [e for e in early["edgesOut"] if e["type"] == "IN_REPLY_TO"]
    assert (dangling["toId"], dangling["dangling"]) == ("email:msg:t2@example.com", True)

    for n in (2, 1):
        done = core.finished(core.ingest(write(tmp_path, f"t{n}.eml", messages[n]))["id"])
        assert done["state"] == "succeeded", done
    for child, parent in ((3, 2), (2, 1)):
        node = core.node(f"email:msg:t{child}@example.com")
        assert node is not None
        replies = [e for e in node["edgesOut"] if e["type"] == "IN_REPLY_TO"]
        assert [(e["toId"], e["dangling"]) for e in replies] == [
            (f"email:msg:t{parent}@example.com", False)
        ]
        assert all(not e["dangling"] for e in node["edgesOut"] if e["type"] == "REFERENCES")
    alice = core.node("email:person:alice@example.com")
    assert alice is not None
    assert alice["labels"] == ["PERSON"]
    senders = sorted(e["fromId"] for e in alice["edgesIn"] if e["type"] == "FROM")
    recipients = sorted(e["fromId"] for e in alice["edgesIn"] if e["type"] == "TO")
    assert senders == ["email:msg:t1@example.com", "email:msg:t3@example.com"]
    assert recipients == ["email:msg:t2@example.com"]
    assert len(alice["versions"]) == 1  # same properties in every message: no new version


@needs_graph
def test_an_mbox_fans_out_and_its_mailbox_contains_every_message(
    core: Core, tmp_path: Path
) -> None:
    """A thread saved as one mailbox: one eml child job per message, each MESSAGE linked
    from the MAILBOX (edges that heal as the children land) and replies resolved."""
    core.email_worker()
    messages = [
        thread_message(1, parent=None, sender=ALICE, to=BOB),
        thread_message(2, parent=1, sender=BOB, to=ALICE),
        thread_message(3, parent=2, sender=ALICE, to=BOB),
    ]
    box = core.finished(core.ingest(write(tmp_path, "Inbox.mbox", mbox(messages)))["id"])
    assert box["state"] == "succeeded", box
    assert len(box["children"]) == 3
    children = [core.finished(child) for child in box["children"]]
    assert [c["state"] for c in children] == ["succeeded"] * 3
    assert all(c["format"] == "eml" and c["name"].startswith("message:") for c in children)
    node = core.node(f"email:mailbox:{box['name']}")
    assert node is not None
    assert node["labels"] == ["MAILBOX"]
    contains = sorted((e["toId"], e["dangling"]) for e in node["edgesOut"])
    assert contains == [(f"email:msg:t{n}@example.com", False) for n in (1, 2, 3)]
    third = core.node("email:msg:t3@example.com")
    assert third is not None
    replies = [(e["toId"], e["dangling"]) for e in third["edgesOut"] if e["type"] == "IN_REPLY_TO"]
    assert replies == [("email:msg:t2@example.com", False)]


def csv_mail(n: int, csv_bytes: bytes) -> bytes:
    return eml(
        [
            ("Message-ID", f"<csv{n}@example.com>"),
            ("Date", "Wed, 4 Mar 2026 12:00:00 +0000"),
            ("From", ALICE),
            ("To", BOB),
            ("Subject", f"numbers {n}"),
            ("Content-Type", 'multipart/mixed; boundary="c"'),
        ],
        multipart(
            "c",
            [
                part([("Content-Type", "text/plain")], "attached"),
                part(
                    [
                        ("Content-Type", "text/csv"),
                        ("Content-Disposition", f'attachment; filename="copy{n}.csv"'),
                        ("Content-Transfer-Encoding", "base64"),
                    ],
                    base64.b64encode(csv_bytes).decode(),
                ),
            ],
        ),
    )


@needs_graph
def test_a_csv_inside_winmail_dat_becomes_its_own_child_job(core: Core, tmp_path: Path) -> None:
    """Outlook's TNEF wrapper is opened by the real email worker: the csv inside is a child
    job of its own, projected by the csv pool, and the message says what was read out."""
    core.email_worker()
    core.worker([sys.executable, str(CSV_STAND_IN)], "csv", "csv-1")
    table = b"region,amount\nnorth,10\nsouth,20\n"
    message = eml(
        [
            ("Message-ID", "<tnef1@example.com>"),
            ("From", ALICE),
            ("To", BOB),
            ("Subject", "figures"),
            ("Content-Type", 'multipart/mixed; boundary="t"'),
        ],
        multipart(
            "t",
            [
                part([("Content-Type", "text/plain")], "see attached"),
                part(
                    [
                        ("Content-Type", 'application/ms-tnef; name="winmail.dat"'),
                        ("Content-Disposition", 'attachment; filename="winmail.dat"'),
                        ("Content-Transfer-Encoding", "base64"),
                    ],
                    base64.b64encode(tnef([("figures.csv", table)])).decode(),
                ),
            ],
        ),
    )
    parent = core.finished(core.ingest(write(tmp_path, "tnef.eml", message))["id"])
    assert parent["state"] == "succeeded", parent
    [child] = core.wait(lambda: core.jobs(format="csv"), "the csv child job")
    assert core.finished(child["id"])["state"] == "succeeded"
    assert core.cli("graph", child["id"])["canonicalText"] == table.decode()
    graph = core.cli("graph", parent["id"])
    [msg] = [n for n in graph["nodes"] if "MESSAGE" in n["labels"]]
    assert "tnef:1_files_read_out" in msg["properties"]["defects"]
    files = [n["properties"]["filename"] for n in graph["nodes"] if "ATTACHMENT" in n["labels"]]
    assert files == ["figures.csv"]


@needs_graph
def test_the_same_csv_in_two_messages_is_one_child_job_with_a_tabular_projection(
    core: Core, tmp_path: Path
) -> None:
    core.email_worker()
    core.worker([sys.executable, str(CSV_STAND_IN)], "csv", "csv-1")
    table = b"region,amount\nnorth,10\nsouth,20\n"
    parents = [
        core.finished(core.ingest(write(tmp_path, f"c{n}.eml", csv_mail(n, table)))["id"])
        for n in (1, 2)
    ]
    assert [p["state"] for p in parents] == ["succeeded", "succeeded"]
    children = core.wait(lambda: core.jobs(format="csv"), "the csv child job")
    assert len(children) == 1
    [child] = children
    import blake3

    assert child["name"] == f"attachment:{blake3.blake3(table).hexdigest()}"
    done = core.finished(child["id"])
    assert done["state"] == "succeeded", done
    assert sorted(done["parents"]) == sorted(p["id"] for p in parents)
    projection = core.cli("graph", child["id"])
    labels = sorted(label for node in projection["nodes"] for label in node["labels"])
    assert labels == ["ROW", "ROW", "TABLE"]
    assert projection["canonicalText"] == table.decode()


def test_bad_inputs_end_as_stated(core: Core, tmp_path: Path) -> None:
    """Permanent invalid_input for what is not a message; the rest succeed, saying what
    they lost in the MESSAGE's defects."""
    core.email_worker()
    not_ole = write(tmp_path, "fake.msg", b"not OLE\r\nand no header either")
    not_mail = write(tmp_path, "junk.eml", b"\x00\x01 junk without headers")
    dead = [core.finished(core.ingest(path)["id"]) for path in (not_ole, not_mail)]
    for job, reason in zip(
        dead, ["does not start with the OLE2 signature", "not an email message"], strict=True
    ):
        assert job["state"] == "dead"
        [failure] = job["failures"]
        assert (failure["kind"], failure["permanent"]) == ("invalid_input", True)
        assert reason in failure["reason"]

    head = [("Message-ID", "<big@example.com>"), ("Date", "Mon, 2 Mar 2026 09:00:00 +0000")]
    many = ", ".join(f"p{i}@example.com" for i in range(10_000))
    lying = eml(
        [*head[:1], ("From", "a@example.com"), ("Content-Type", "text/plain; charset=us-ascii")],
        "caf\u00e9".encode(),
    )
    truncated = eml(
        [("From", "a@example.com"), ("Content-Type", 'multipart/mixed; boundary="t"')],
        multipart("t", [part([("Content-Type", "text/plain")], "half")], close=False),
    )
    succeeding = {
        "many.eml": eml([*head, ("From", "a@example.com"), ("To", many)], "all hands"),
        "lying.eml": lying,
        "truncated.eml": truncated,
        "deep.eml": deep_nesting(40, [("From", "a@example.com")]),
        "deeper.eml": deep_nesting(3000, [("From", "a@example.com")]),
    }
    for name, data in succeeding.items():
        job = core.finished(core.ingest(write(tmp_path, name, data))["id"])
        assert (job["state"], job["failures"]) == ("succeeded", []), (name, job)
        if name == "many.eml":
            assert job["node_count"] == 10_002  # MESSAGE + sender + 10,000 recipients


@needs_graph
def test_an_oversize_attachment_kills_the_child_as_too_large_not_the_parent(
    core: Core, tmp_path: Path
) -> None:
    core.email_worker()
    core.worker([sys.executable, str(CSV_STAND_IN)], "csv", "csv-1")
    parent = core.finished(
        core.ingest(
            write(tmp_path, "big.eml", csv_mail(9, b"a,b\n" * 64)), max_attachment_bytes=100
        )["id"]
    )
    assert (parent["state"], parent["failures"]) == ("succeeded", [])
    [child] = core.wait(lambda: core.jobs(format="csv"), "the csv child job")
    done = core.finished(child["id"])
    assert done["state"] == "dead"
    [failure] = done["failures"]
    assert (failure["kind"], failure["permanent"]) == ("too_large", True)
    assert "256 bytes is over the parent's limit of 100" in failure["reason"]
    attachment = core.node("email:msg:csv9@example.com#attachment-0")
    assert attachment is not None
    assert attachment["properties"]["too_large"] is True
    assert json.dumps(attachment["properties"]["child_job"]) == json.dumps(child["name"])
