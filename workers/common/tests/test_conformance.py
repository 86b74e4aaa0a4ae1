"""The conformance kit: running handlers without a core, and each check catching its defect."""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from workers_common import IngestionResultBuilder, InvalidInput, Job
from workers_common.conformance import (
    UPDATE_GOLDEN_ENV,
    assert_golden,
    check_canonical,
    check_determinism,
    check_spans,
    check_submissions,
    run_handler,
    submission_hash,
)
from workers_common.wire import canonical_json


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in.txt"
    path.write_text("abc")
    return path


def sub(**fields: Any) -> bytes:
    return canonical_json(
        {"v": 1, "canonicalText": "", "spans": [], "nodes": [], "relationships": [], **fields}
    )


def test_run_handler_streams_with_node_ids(source: Path) -> None:
    def handler(job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
        builder = IngestionResultBuilder()
        builder.add_node(["A"])
        builder.add_node(["B"], id="fixed")
        ids = yield builder.build()
        final = IngestionResultBuilder()
        final.add_relationship("R", from_id=ids[0], to_id=ids[1])
        yield final.build(partial=False)

    subs = run_handler(handler, source, format="x")
    assert json.loads(subs[1])["relationships"][0] == {
        "type": "R",
        "fromId": "node-0-0",
        "toId": "fixed",
        "properties": {},
    }
    check_submissions(subs)


def test_run_handler_lets_failures_through(source: Path) -> None:
    def handler(job: Job) -> bytes:
        raise InvalidInput(job.read_text())

    with pytest.raises(InvalidInput, match="abc"):
        run_handler(handler, source, format="x")


def test_run_handler_by_spec_passes_name_and_options(source: Path) -> None:
    [raw] = run_handler(
        "example_worker:handle", source, format="txt", name="N", options={"clarify": True}
    )
    assert json.loads(raw)["nodes"][0]["properties"]["name"] == "N"


@pytest.mark.parametrize(
    ("submissions", "message"),
    [
        ([sub(canonicalText="ab", spans=[{"start": 0, "end": 3, "kind": "k"}])], "outside"),
        ([sub(canonicalText="é", spans=[{"start": 0, "end": 1, "kind": "k"}])], "UTF-8"),
        ([sub(canonicalText="ab", spans=[{"start": 1, "end": 1, "kind": "k"}])], "start < end"),
        ([sub(canonicalText="a\r\n")], "CR"),
        ([sub(nodes=[{"labels": ["N"], "properties": {}, "spanRefs": [0]}])], "span ref"),
        # Partial 1's text starts at byte 2: offset 0 is outside its slice.
        (
            [
                sub(canonicalText="ab", seq=0, partial=True),
                sub(
                    canonicalText="cd",
                    seq=1,
                    partial=False,
                    spans=[{"start": 0, "end": 1, "kind": "k"}],
                ),
            ],
            "outside",
        ),
    ],
)
def test_check_spans_catches(submissions: list[bytes], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_spans(submissions)


def test_check_spans_accepts_global_offsets_across_partials() -> None:
    check_spans(
        [
            sub(canonicalText="ab", seq=0, partial=True),
            sub(
                canonicalText="cé",
                seq=1,
                partial=False,
                spans=[{"start": 2, "end": 5, "kind": "k"}],
            ),
        ]
    )


def test_check_canonical_catches_hand_made_json() -> None:
    with pytest.raises(AssertionError, match="not canonical"):
        check_canonical([json.dumps({"v": 1, "canonicalText": ""}).encode()])


@pytest.mark.parametrize(
    ("submissions", "message"),
    [
        ([], "nothing"),
        ([sub(v=2)], "v is 2"),
        ([sub(seq=0, partial=True)], "final"),
        ([sub(seq=0, partial=False), sub(seq=1, partial=False)], "final"),
        ([sub(seq=0, partial=True), sub(seq=2, partial=False)], "seq"),
        (
            [
                sub(
                    nodes=[{"labels": ["N"], "properties": {}, "spanRefs": []}],
                    relationships=[{"type": "R", "fromRef": 0, "toRef": 1, "properties": {}}],
                )
            ],
            "node ref",
        ),
    ],
)
def test_check_submissions_catches(submissions: list[bytes], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_submissions(submissions)


def test_golden_write_compare_and_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    golden = tmp_path / "golden" / "x.json"
    first = [sub(canonicalText="one")]
    with pytest.raises(AssertionError, match="missing"):
        assert_golden(first, golden)
    monkeypatch.setenv(UPDATE_GOLDEN_ENV, "1")
    assert_golden(first, golden)
    monkeypatch.delenv(UPDATE_GOLDEN_ENV)
    assert_golden(first, golden)
    with pytest.raises(
        AssertionError, match=r'(?s)-    "canonicalText": "one".*\+    "canonicalText": "two"'
    ):
        assert_golden([sub(canonicalText="two")], golden)


def test_determinism_passes_for_the_example_worker(source: Path) -> None:
    subs = check_determinism("example_worker:handle", source, format="txt")
    assert subs == run_handler("example_worker:handle", source, format="txt")


@pytest.mark.parametrize("handler", ["nondeterministic:set_order", "nondeterministic:local_time"])
def test_determinism_catches_environment_leaks(
    source: Path, handler: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The helper module lives beside this test; the subprocesses find it on PYTHONPATH.
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    with pytest.raises(AssertionError, match="not deterministic"):
        check_determinism(handler, source, format="txt")


def test_determinism_reports_a_crashing_handler(source: Path) -> None:
    with pytest.raises(AssertionError, match="exited 1"):
        check_determinism("example_worker:no_such_handler", source, format="txt")


def test_submission_hash_counts_stand_in_ids_as_positions() -> None:
    """A later partial's reference to an id the (stand-in) core assigned hashes as the
    node's position, as the core hashes its own `n<number>` ids: the README's definition."""
    import blake3

    first = b'{"nodes":[{"labels":["TABLE"]},{"id":"x","labels":["A"]}],"v":1}'
    later = (
        b'{"canonicalText":"see node-0-0",'
        b'"relationships":[{"fromId":"node-0-0","toId":"x","type":"R"}],"v":1}'
    )
    as_positions = later.replace(b'"fromId":"node-0-0"', b'"fromId":"@0.0"')
    digests = blake3.blake3(first).hexdigest() + blake3.blake3(as_positions).hexdigest()
    assert submission_hash([first, later]) == blake3.blake3(digests.encode()).hexdigest()
    # A submission without such references hashes as its bytes.
    single = blake3.blake3(blake3.blake3(later).hexdigest().encode()).hexdigest()
    assert submission_hash([later]) == single
