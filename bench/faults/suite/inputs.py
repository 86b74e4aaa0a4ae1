"""Input files made by code: the crash loop's mixed stream and the per-format seeds."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

CRLF = "\r\n"


def as_list(out: str) -> list[dict[str, Any]]:
    doc = json.loads(out)
    return doc if isinstance(doc, list) else [doc]


def text(i: int) -> bytes:
    paras = [f"Note {i}, paragraph {p}: the quick brown fox — ünïcödé {p * i}." for p in range(6)]
    return "\n\n".join(paras).encode() + b"\n"


def csv(rows: int, seed: int = 0) -> bytes:
    lines = ["id,name,amount,date"]
    lines += [
        f"{r},item {r + seed},{(r * 37) % 1000}.{r % 100:02d},2026-0{1 + r % 9}-1{r % 10}"
        for r in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()


def eml(i: int, attachments: list[tuple[str, str, bytes]]) -> bytes:
    """A multipart/mixed message with a text body and base64 attachments."""
    boundary = f"b{i}x"
    head = [
        f"Message-ID: <crash-{i}@example.com>",
        "From: Alice <alice@example.com>",
        "To: Bob <bob@example.com>",
        f"Subject: Crash loop message {i}",
        "Date: Mon, 2 Mar 2026 09:00:00 +0000",
        "MIME-Version: 1.0",
        f'Content-Type: multipart/mixed; boundary="{boundary}"',
    ]
    parts = [
        f"--{boundary}{CRLF}Content-Type: text/plain; charset=utf-8{CRLF}{CRLF}"
        f"Hello Bob,{CRLF}{CRLF}message {i} with {len(attachments)} attachments.{CRLF}"
    ]
    for name, mime, data in attachments:
        body = base64.encodebytes(data).decode().replace("\n", CRLF)
        parts.append(
            f'--{boundary}{CRLF}Content-Type: {mime}; name="{name}"{CRLF}'
            f'Content-Disposition: attachment; filename="{name}"{CRLF}'
            f"Content-Transfer-Encoding: base64{CRLF}{CRLF}{body}"
        )
    return (CRLF.join(head) + CRLF + CRLF + "".join(parts) + f"--{boundary}--{CRLF}").encode()


def crash_inputs(folder: Path) -> dict[str, list[Path]]:
    """Files for the crash loop, by CLI group (txt, csv, eml)."""
    folder.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: bytes) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return {
        "txt": [put(f"note-{i}.txt", text(i)) for i in range(3)],
        "csv": [put("table-a.csv", csv(300)), put("table-b.csv", csv(200, seed=7))],
        "eml": [
            put(
                f"mail-{i}.eml",
                eml(
                    i,
                    [
                        (f"notes-{i}.txt", "text/plain", text(100 + i)),
                        (f"sheet-{i}.csv", "text/csv", csv(30, seed=i)),
                    ],
                ),
            )
            for i in range(2)
        ],
    }
