"""Fixtures for workers_common's tests: a scripted core, and workers as threads or processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from workers_common import Handler, WorkerConfig, WorkerConsumer
from workers_common.backoff import Backoff

from running import ConsumerThread, WorkerProcess
from scripted_core import TOKEN, ScriptedCore


@pytest.fixture
def core() -> Iterator[ScriptedCore]:
    scripted = ScriptedCore()
    yield scripted
    scripted.stop()


@pytest.fixture
def start_consumer(core: ScriptedCore) -> Iterator[Callable[..., ConsumerThread]]:
    started: list[ConsumerThread] = []

    def start(handlers: dict[str, Handler], **kwargs: Any) -> ConsumerThread:
        config = WorkerConfig(core.addr, "w-thread", kwargs.pop("token", TOKEN), tuple(handlers))
        kwargs.setdefault("backoff", Backoff(initial=0.05, maximum=0.2))
        running = ConsumerThread(WorkerConsumer(handlers, config=config, **kwargs))
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(addr: str, formats: str, **kwargs: Any) -> WorkerProcess:
        worker = WorkerProcess(addr, kwargs.pop("token", TOKEN), formats, tmp_path, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()
