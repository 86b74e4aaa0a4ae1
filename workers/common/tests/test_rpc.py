"""CoreClient.submit_async: the answer, a refusal to deliver and the retries reach `done`
once each, as CoreClient.submit would have returned or raised them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import grpc
import pytest

from workers_common._proto import telha_pb2
from workers_common.config import WorkerConfig
from workers_common.rpc import CoreClient, SubmitError, Submitted

from scripted_core import TOKEN, ScriptedCore


class FlakyCore(ScriptedCore):
    """Answers the first `failures` submissions with `code` instead of taking them."""

    def __init__(self, failures: int, code: grpc.StatusCode) -> None:
        super().__init__()
        self.failures = failures
        self.code = code
        self.calls = 0
        self.finished["j1"] = threading.Event()  # the one job these tests submit for

    def SubmitIngestionResult(  # noqa: N802 (the generated servicer's name)
        self, request: telha_pb2.IngestionResult, context: grpc.ServicerContext
    ) -> telha_pb2.SubmitResponse:
        self.calls += 1
        if self.calls <= self.failures:
            context.abort(self.code, "not now")
        return super().SubmitIngestionResult(request, context)


@pytest.fixture
def make_client() -> Iterator[Callable[[ScriptedCore], CoreClient]]:
    made: list[tuple[ScriptedCore, CoreClient]] = []

    def make(core: ScriptedCore) -> CoreClient:
        config = WorkerConfig(core_addr=core.addr, worker_id="w1", token=TOKEN, formats=("txt",))
        client = CoreClient(config, retry_delay_secs=0.01)
        made.append((core, client))
        return client

    yield make
    for core, client in made:
        client.close()
        core.stop()


def _deliver(client: CoreClient) -> tuple[Callable[[], Submitted], list[str]]:
    answers: list[Callable[[], Submitted]] = []
    threads: list[str] = []
    arrived = threading.Event()

    def done(answer: Callable[[], Submitted]) -> None:
        answers.append(answer)
        threads.append(threading.current_thread().name)
        arrived.set()

    request = telha_pb2.IngestionResult(
        job_id="j1", success=True, result_json=b"{}", worker_id="w1", attempt=1
    )
    client.submit_async(request, done)
    assert arrived.wait(10), "done was never called"
    assert len(answers) == 1
    return answers[0], threads


def test_an_accepted_submission_gives_its_answer(
    make_client: Callable[[ScriptedCore], CoreClient],
) -> None:
    answer, _ = _deliver(make_client(FlakyCore(0, grpc.StatusCode.UNAVAILABLE)))
    assert answer().accepted


def test_an_unavailable_core_is_retried_on_a_thread_of_its_own(
    make_client: Callable[[ScriptedCore], CoreClient],
) -> None:
    core = FlakyCore(2, grpc.StatusCode.UNAVAILABLE)
    answer, threads = _deliver(make_client(core))
    assert threads == ["telha-resubmit"]
    assert answer().accepted
    assert core.calls == 3


def test_a_refused_call_raises_submit_error_without_retrying(
    make_client: Callable[[ScriptedCore], CoreClient],
) -> None:
    core = FlakyCore(1, grpc.StatusCode.FAILED_PRECONDITION)
    answer, _ = _deliver(make_client(core))
    with pytest.raises(SubmitError, match="FAILED_PRECONDITION"):
        answer()
    assert core.calls == 1


def test_retries_run_out_as_submit_s_do(
    make_client: Callable[[ScriptedCore], CoreClient],
) -> None:
    core = FlakyCore(10, grpc.StatusCode.UNAVAILABLE)
    answer, _ = _deliver(make_client(core))
    with pytest.raises(SubmitError, match="UNAVAILABLE"):
        answer()
    assert core.calls == 4  # submit_attempts


def test_a_call_that_cannot_start_reaches_done_as_submit_error(
    make_client: Callable[[ScriptedCore], CoreClient],
) -> None:
    client = make_client(FlakyCore(0, grpc.StatusCode.UNAVAILABLE))
    client.close()
    answers: list[Callable[[], Submitted]] = []
    client.submit_async(telha_pb2.IngestionResult(job_id="j1"), answers.append)
    assert len(answers) == 1
    with pytest.raises(SubmitError, match="could not start"):
        answers[0]()
