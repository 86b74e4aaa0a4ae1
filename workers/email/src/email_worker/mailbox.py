"""A mailbox file (`mbox`: Thunderbird's folders, Gmail Takeout, `mutt`, Apple Mail's
export) fanned out into one `eml` child job per message.

The file is split at its `From ` separator lines (mboxo and mboxrd alike: a message line
that begins with `From ` is quoted by the writer as `>From `, and is left as written). A
separator follows a blank line (or starts the file) and carries a time, so a body line a
careless writer left unquoted does not split its message.
Each message's bytes become a child job named `message:<blake3 of its bytes>`, so the same
message in two mailboxes, or in a re-export of one, is one job and one MESSAGE node. The
mailbox itself is a MAILBOX node, `email:mailbox:<job name>` (so a grown mailbox ingested
again is the same node with a new version), with a CONTAINS edge to each message's
MESSAGE id: the id its own job gives it, computed here from its Message-ID header (a
message without one is counted, and its job links nothing back).

Nothing is enqueued unless the whole file was read first: a file over `max_messages`
is too_large with no child job. A message over `max_bytes` is skipped and counted.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator, Sequence
from email import policy
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any, BinaryIO

import blake3

from workers_common import IngestionResultBuilder, InvalidInput, Job, TooLarge, batches

from .headers import first_header
from .identity import message_node_id, normalize_message_id
from .options import DEFAULT_MAX_BYTES, int_option

__all__ = ["DEFAULT_MAX_MESSAGES", "MAILBOX_PREFIX", "handle_mbox", "mailbox_id", "split_mbox"]

DEFAULT_MAX_MESSAGES = 200_000
MAILBOX_PREFIX = "email:mailbox:"
CHILDREN_PER_PARTIAL = 2000
"""Child jobs per partial (the core takes at most 10,000 per submission by default)."""
BYTES_PER_PARTIAL = 24 * 1024 * 1024
"""Child contents per partial, before base64 (a submission is at most 64 MiB)."""
_MAX_ID_BYTES = 200
_INHERITED = ("clarify", "max_attachment_bytes", "max_bytes")
_TIME = re.compile(rb"\b\d{1,2}:\d{2}\b")


def mailbox_id(name: str) -> str:
    """`email:mailbox:<name>`; a name too long for an id, or with control characters, by
    its blake3 (`email:mailbox:b3:<hex>`)."""
    if name and len(name.encode()) <= _MAX_ID_BYTES and name.isprintable():
        return MAILBOX_PREFIX + name
    return f"{MAILBOX_PREFIX}b3:{blake3.blake3(name.encode()).hexdigest()}"


def _first_separator(head: bytes) -> int:
    """Where the first `From ` line starts (after a UTF-8 BOM and blank lines), or -1."""
    start = 3 if head[:3] == b"\xef\xbb\xbf" else 0
    while head[start : start + 1] in (b"\n", b"\r") and start < 64:
        start += 1
    return start if head[start : start + 5] == b"From " else -1


def split_mbox(stream: BinaryIO) -> Iterator[tuple[int, int]]:
    """The (start, end) byte range of each message in a seekable binary stream: after its
    `From ` line, up to the line break that ends its last line. The blank line that ends a
    message belongs to the mbox: before the next separator, the line break before it; at
    the end of the file, the last one when the message's own last line ended too. The
    file is read a line at a time (a mailbox can be larger than memory)."""
    stream.seek(0)
    at = _first_separator(stream.read(128))
    if at < 0:
        raise InvalidInput("not an mbox file: it does not start with a 'From ' line")
    stream.seek(at)
    if not _is_separator(stream.readline(), b"\n"):
        raise InvalidInput("not an mbox file: its first 'From ' line carries no time")
    stream.seek(at)
    position, body, previous = at, -1, b"\n"
    for line in stream:
        if _is_separator(line, previous):
            if body >= 0:
                stop = position - 1 - (1 if previous.endswith(b"\r\n") else 0)
                yield body, max(body, stop)
            body = position + len(line)
        position += len(line)
        previous = line
    if body < 0:
        return
    stream.seek(max(body, position - 4))
    tail = stream.read()
    stop = position
    if (tail.endswith(b"\n\n") or tail.endswith(b"\r\n\r\n")) and stop > body:
        stop -= 1
    if stop > body and tail[: len(tail) - (position - stop)].endswith(b"\r"):
        stop -= 1
    yield body, max(body, stop)


def _is_separator(line: bytes, previous: bytes) -> bool:
    """A `From ` line after a blank line (or first in the file) that carries a time, as
    every writer's separator does (`From - Mon Mar 02 09:12:00 2026`, `From 1234@xxx Mon
    Mar 02 09:12:00 +0000 2026`): a body line a writer left unquoted (`From my side…`)
    is not one."""
    return (
        line.startswith(b"From ")
        and previous in (b"\n", b"\r\n")
        and _TIME.search(line, 5, 200) is not None
    )


def _read(stream: BinaryIO, start: int, end: int) -> bytes:
    stream.seek(start)
    return stream.read(end - start)


def _message_node(data: bytes) -> str | None:
    """The MESSAGE id this message's own job will give it, when it has a Message-ID."""
    headers = BytesHeaderParser(policy=policy.default).parsebytes(data)
    raw = first_header(headers, "message-id")
    normalized = normalize_message_id(raw or "")
    return message_node_id(normalized) if normalized else None


def handle_mbox(job: Job) -> Generator[dict[str, Any], Sequence[str], None]:
    """The MAILBOX node, then its messages as `eml` child jobs in partials (typed
    failures: invalid_input when the file is not an mbox, too_large over max_messages).
    The file is read twice: once to count, name and identify every message (nothing is
    enqueued before the whole file is known), once to send their bytes batch by batch (a
    mailbox is never all in memory)."""
    limit = int_option(job.options, "max_messages", DEFAULT_MAX_MESSAGES)
    max_bytes = int_option(job.options, "max_bytes", DEFAULT_MAX_BYTES)
    inherited = {key: job.options[key] for key in _INHERITED if key in job.options}
    box = mailbox_id(job.name)
    with job.content_path() as path, Path(path).open("rb") as stream:
        size = Path(path).stat().st_size
        ranges = list(split_mbox(stream)) if size else []
        if len(ranges) > limit:
            raise TooLarge(f"mbox of {len(ranges)} messages is over max_messages={limit}")
        counts = {"too_large": 0, "duplicates": 0, "without_message_id": 0, "empty": 0}
        seen: set[str] = set()
        children: list[tuple[str, int, int, str | None]] = []
        for start, end in ranges:
            if end - start > max_bytes:
                counts["too_large"] += 1
                continue
            message = _read(stream, start, end)
            if not message.strip():
                counts["empty"] += 1
                continue
            name = f"message:{blake3.blake3(message).hexdigest()}"
            if name in seen:
                counts["duplicates"] += 1
                continue
            seen.add(name)
            node = _message_node(message)
            if node is None:
                counts["without_message_id"] += 1
            children.append((name, start, end, node))
        props: dict[str, Any] = {"name": job.name, "messages": len(ranges), "bytes": size}
        props.update({key: value for key, value in sorted(counts.items()) if value})
        props["enqueued"] = len(children)
        head = IngestionResultBuilder(options=job.options)
        head.add_node(["MAILBOX"], props, id=box)
        head.set_stats({"messages": len(ranges), "enqueued": len(children), **counts})
        yield head.build()
        for part in batches(
            children,
            lambda child: child[2] - child[1],
            max_items=CHILDREN_PER_PARTIAL,
            max_weight=BYTES_PER_PARTIAL,
        ):
            builder = IngestionResultBuilder(options=job.options)
            for name, start, end, node in part:
                if node is not None:
                    builder.add_relationship("CONTAINS", from_id=box, to_id=node)
                builder.add_child_job(
                    "eml", name, options=inherited or None, content=_read(stream, start, end)
                )
            yield builder.build()
    yield IngestionResultBuilder(options=job.options).build(partial=False)
