"""Fixtures of the web worker's tests: a real local site and a worker allowed to reach it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from web_worker.handler import WebWorker

from web_site import Site, make_worker, serve


@pytest.fixture
def site() -> Iterator[Site]:
    with serve() as running:
        yield running


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WebWorker]:
    running = make_worker(tmp_path)
    try:
        yield running
    finally:
        running.close()
