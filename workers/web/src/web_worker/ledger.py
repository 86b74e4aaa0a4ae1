"""The crawl ledger: which URLs a crawl has already handed out as child jobs.

A crawl's budget (`crawl_budget`, crawl.py) bounds its pages; but a share given to a link
that another page of the same crawl already claimed is lost when the core dedups the
child by name, and on a site whose pages all link to each other (a book's previous/next
links, a sidebar) the crawl would starve after a few hops. The ledger lets a page skip
links the crawl already planned, so its budget goes to new pages only.

One file per crawl (`crawl-<id>.urls` in the politeness directory, shared by the pool's
workers, under `flock`), a line per URL with the job that claimed it. A URL claimed by
the job asking again (a retried attempt) is still its own. The ledger only saves budget:
without it (another host's worker, a lost file) the crawl is still bounded by the budget.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CrawlLedger"]

_ID = re.compile(r"^[0-9a-f]{16,64}$")
_MAX_BYTES = 64 << 20


class CrawlLedger:
    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def claim(self, crawl_id: str, job_id: str, urls: Sequence[str], limit: int) -> list[str]:
        """The first `limit` URLs of `urls` not claimed by another job of the crawl, in
        order; they are recorded as this job's."""
        if not _ID.match(crawl_id) or not urls or limit <= 0:
            return list(urls[: max(limit, 0)])
        path = self.dir / f"crawl-{crawl_id}.urls"
        handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            claimed = _read(handle)
            mine = [u for u in urls if claimed.get(u, job_id) == job_id][:limit]
            new = [u for u in mine if u not in claimed]
            if new and os.fstat(handle).st_size < _MAX_BYTES:
                os.write(handle, "".join(f"{u}\t{job_id}\n" for u in new).encode())
            return mine
        finally:
            os.close(handle)


def _read(handle: int) -> dict[str, str]:
    os.lseek(handle, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(handle, 1 << 20):
        chunks.append(chunk)
    claimed: dict[str, str] = {}
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        url, _, job = line.partition("\t")
        claimed.setdefault(url, job)
    return claimed
