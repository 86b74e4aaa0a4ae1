"""The driver: single-shot and streamed submissions, seq/partial, node_ids feedback, endings."""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from workers_common import IngestionResultBuilder, InvalidInput, Job, Outcome, TooLarge
from workers_common.driver import drive
from workers_common.rpc import Submitted


class FakeCore:
    """Collects submissions; answers with node ids `s<seq>n<i>` unless told to refuse."""

    def __init__(self, refuse_at: int | None = None) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.refuse_at = refuse_at

    def __call__(self, result_json: bytes) -> Submitted:
        seq = len(self.raw)
        self.raw.append(result_json)
        self.bodies.append(json.loads(result_json))
        if seq == self.refuse_at:
            return Submitted(False, [], "fenced")
        ids = [f"s{seq}n{i}" for i in range(len(self.bodies[-1]["nodes"]))]
        return Submitted(True, ids, "")


@pytest.fixture
def job(tmp_path: Path) -> Job:
    path = tmp_path / "in.txt"
    path.write_text("x")
    return Job.for_file(path, format="txt")


def two_nodes() -> IngestionResultBuilder:
    builder = IngestionResultBuilder()
    builder.add_node(["A"])
    builder.add_node(["B"])
    return builder


def test_single_shot_bytes_are_submitted_as_they_are(job: Job) -> None:
    core = FakeCore()
    data = two_nodes().to_json()
    assert drive(lambda _job: data, job, core) is Outcome.FINISHED
    assert core.raw == [data]  # no seq/partial added: one final submission


def test_generator_gets_seq_partial_and_node_ids(job: Job) -> None:
    core = FakeCore()
    seen: list[list[str]] = []

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        seen.append(list((yield two_nodes().build())))
        seen.append(list((yield two_nodes().build())))
        final = IngestionResultBuilder()
        final.add_node(["C"])
        final.add_relationship("NEXT", from_ref=final.add_node(["D"]), to_id=seen[0][1])
        yield final.build(partial=False)
        raise AssertionError("the driver must not resume a finalized generator")

    assert drive(handler, job, core) is Outcome.FINISHED
    assert [(b["seq"], b["partial"]) for b in core.bodies] == [(0, True), (1, True), (2, False)]
    assert seen == [["s0n0", "s0n1"], ["s1n0", "s1n1"]]
    assert core.bodies[2]["relationships"][0]["toId"] == "s0n1"


class SlowCore(FakeCore):
    """A FakeCore whose answers wait until the test releases them, one at a time."""

    def __init__(self, refuse_at: int | None = None) -> None:
        super().__init__(refuse_at)
        self.release = threading.Semaphore(0)
        self.answered = 0

    def __call__(self, result_json: bytes) -> Submitted:
        assert self.release.acquire(timeout=10), "the test never released this answer"
        self.answered += 1
        return super().__call__(result_json)


def test_next_partial_is_prepared_while_the_core_answers(job: Job) -> None:
    """The generator resumes before partial k is answered (the overlap); reading k's
    ids waits for the answer; submissions still go one at a time, in order."""
    core = SlowCore()
    events: list[str] = []

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        first = yield two_nodes().build()
        events.append(f"resumed after 0 with {core.answered} answered")
        core.release.release()
        events.append(f"ids of 0: {list(first)}")
        second = yield two_nodes().build()
        events.append(f"resumed after 1 with {core.answered} answered")
        core.release.release()
        core.release.release()
        final = IngestionResultBuilder()
        final.add_relationship("NEXT", from_id=second[0], to_id=first[1])
        yield final.build(partial=False)

    assert drive(handler, job, core) is Outcome.FINISHED
    assert events == [
        "resumed after 0 with 0 answered",
        "ids of 0: ['s0n0', 's0n1']",
        "resumed after 1 with 1 answered",
    ]
    assert [(b["seq"], b["partial"]) for b in core.bodies] == [(0, True), (1, True), (2, False)]
    edge = core.bodies[2]["relationships"][0]
    assert (edge["fromId"], edge["toId"]) == ("s1n0", "s0n1")


def test_reading_the_ids_of_a_refused_partial_ends_the_job(job: Job) -> None:
    core = FakeCore(refuse_at=0)
    closed: list[bool] = []

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        try:
            ids = yield two_nodes().build()
            yield {**two_nodes().build(), "nodes": [{"labels": ["X"], "id": ids[0]}]}
        finally:
            closed.append(True)

    assert drive(handler, job, core) is Outcome.REFUSED
    assert len(core.raw) == 1
    assert closed == [True]


def test_generator_without_final_gets_an_empty_finalizer(job: Job) -> None:
    core = FakeCore()

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        yield two_nodes().build()

    assert drive(handler, job, core) is Outcome.FINISHED
    assert core.bodies[1] == {
        "v": 1,
        "canonicalText": "",
        "spans": [],
        "nodes": [],
        "relationships": [],
        "seq": 1,
        "partial": False,
    }


def test_empty_generator_submits_only_the_finalizer(job: Job) -> None:
    core = FakeCore()

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        return
        yield  # a generator that yields nothing

    assert drive(handler, job, core) is Outcome.FINISHED
    assert [(b["seq"], b["partial"]) for b in core.bodies] == [(0, False)]


def test_explicit_partial_true_is_kept_and_handler_seq_is_overwritten(job: Job) -> None:
    core = FakeCore()

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        yield {**IngestionResultBuilder().build(partial=True), "seq": 99}

    drive(handler, job, core)
    assert [(b["seq"], b["partial"]) for b in core.bodies] == [(0, True), (1, False)]


def test_refused_submission_closes_the_generator(job: Job) -> None:
    core = FakeCore(refuse_at=1)
    closed: list[bool] = []

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        try:
            while True:
                yield two_nodes().build()
        finally:
            closed.append(True)

    assert drive(handler, job, core) is Outcome.REFUSED
    # seq 2 was on its way when the refusal of seq 1 was known; nothing after it.
    assert len(core.raw) == 3
    assert closed == [True]


def test_refused_single_shot(job: Job) -> None:
    assert drive(lambda _job: b"{}", job, FakeCore(refuse_at=0)) is Outcome.REFUSED


def test_abandoned_job_submits_nothing_more(job: Job) -> None:
    core = FakeCore()
    lost = [False]

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        yield two_nodes().build()
        lost[0] = True  # the heartbeat thread found the lease gone meanwhile
        yield two_nodes().build()

    assert drive(handler, job, core, lambda: lost[0]) is Outcome.ABANDONED
    assert len(core.raw) == 1
    assert drive(lambda _job: b"{}", job, core, lambda: True) is Outcome.ABANDONED
    assert len(core.raw) == 1


def test_handler_exceptions_propagate_unchanged(job: Job) -> None:
    def single(_job: Job) -> bytes:
        raise InvalidInput("bad")

    def streaming(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        yield two_nodes().build()
        raise InvalidInput("bad later")

    with pytest.raises(InvalidInput, match="bad"):
        drive(single, job, FakeCore())
    core = FakeCore()
    with pytest.raises(InvalidInput, match="bad later"):
        drive(streaming, job, core)
    assert len(core.raw) == 1  # no finalizer after a failure


@pytest.mark.parametrize("returned", [None, "text", {"v": 1}, 3])
def test_wrong_return_type_is_a_type_error(job: Job, returned: object) -> None:
    with pytest.raises(TypeError, match="expected bytes or a generator"):
        drive(lambda _job: returned, job, FakeCore())  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize("item", [b"bytes", {"partial": "no"}])
def test_bad_yielded_item_is_a_type_error(job: Job, item: object) -> None:
    def handler(_job: Job) -> Generator[Any, Sequence[str], None]:
        yield item

    core = FakeCore()
    with pytest.raises(TypeError):
        drive(handler, job, core)
    assert core.raw == []


def test_submissions_are_canonical(job: Job) -> None:
    core = FakeCore()

    def handler(_job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        yield {"z": 1, "a": "ü", **IngestionResultBuilder().build()}

    drive(handler, job, core)
    assert core.raw[0].startswith(b'{"a":"\xc3\xbc","canonicalText":""')


def test_oversize_option_fails_as_too_large_before_the_handler(tmp_path: Path) -> None:
    """A child job a parent marked `oversize` is too_large whatever its format's handler."""
    path = tmp_path / "child.csv"
    path.write_bytes(b"")
    marker = {"bytes": 30, "limit": 20, "what": "attachment a.csv of message m"}
    child = Job.for_file(path, format="csv", options={"oversize": marker})
    called: list[Job] = []

    def handler(job: Job) -> bytes:
        called.append(job)
        return IngestionResultBuilder().to_json()

    core = FakeCore()
    with pytest.raises(TooLarge, match=r"attachment a\.csv of message m: 30 bytes .* limit of 20"):
        drive(handler, child, core)
    assert (called, core.raw) == ([], [])
