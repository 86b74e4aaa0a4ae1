"""The failure taxonomy: kinds and permanence per DESIGN.md §6, and the 512-byte reason cap."""

from __future__ import annotations

import pytest

from workers_common import (
    FAILURE_REASON_MAX_BYTES,
    FetchFailed,
    InvalidInput,
    TooLarge,
    Unsupported,
    WorkerFailure,
    describe_failure,
)
from workers_common.failures import cap_utf8


@pytest.mark.parametrize(
    ("error", "reason", "permanent"),
    [
        (WorkerFailure("try later"), "transient: try later", False),
        (InvalidInput("not a PDF"), "invalid_input: not a PDF", True),
        (Unsupported("encrypted"), "unsupported: encrypted", True),
        (TooLarge("3 GB"), "too_large: 3 GB", True),
        (FetchFailed("HTTP 503"), "fetch_failed: HTTP 503", False),
        # Anything else is transient, and the class name says what it was.
        (ValueError("bad value"), "transient: ValueError: bad value", False),
        (KeyError("x"), "transient: KeyError: 'x'", False),
        (RuntimeError(), "transient: RuntimeError", False),
        (InvalidInput(), "invalid_input: InvalidInput", True),
    ],
)
def test_describe_failure(error: Exception, reason: str, permanent: bool) -> None:
    assert describe_failure(error) == (reason, permanent, 0)


def test_the_table_matches_design_section_6() -> None:
    table = {
        cls.kind: cls.permanent
        for cls in (WorkerFailure, InvalidInput, Unsupported, TooLarge, FetchFailed)
    }
    assert table == {
        "transient": False,
        "invalid_input": True,
        "unsupported": True,
        "too_large": True,
        "fetch_failed": False,
    }


def test_long_reason_is_capped_at_512_bytes() -> None:
    report = describe_failure(InvalidInput("x" * 1000))
    assert len(report.reason.encode()) == FAILURE_REASON_MAX_BYTES == 512
    assert report.reason.startswith("invalid_input: xxx")


@pytest.mark.parametrize("char", ["é", "€", "😀"])  # 2, 3 and 4 bytes
def test_cap_cuts_on_a_utf8_boundary(char: str) -> None:
    # "transient: " is 11 bytes; pad so a multi-byte character straddles byte 512.
    detail = "a" * (512 - 11 - 1) + char * 10
    reason = describe_failure(WorkerFailure(detail)).reason
    encoded = reason.encode("utf-8")  # would raise if a character had been cut
    assert len(encoded) <= 512
    assert len(encoded) > 512 - len(char.encode())
    assert reason == ("transient: " + detail)[: len(reason)]


def test_cap_utf8_edges() -> None:
    assert cap_utf8("abc", 3) == "abc"
    assert cap_utf8("abc", 2) == "ab"
    assert cap_utf8("😀", 3) == ""
    assert cap_utf8("", 0) == ""


def test_worker_failures_are_the_shared_taxonomy() -> None:
    """Every typed failure a worker raises is a worker-raised kind of rules.json (which the
    core reads too), with the same default permanence."""
    from workers_common import failures
    from workers_common._proto import wire_rules

    table = {kind: (permanent, by) for kind, permanent, by in wire_rules.FAILURE_KINDS}
    classes: list[type[failures.WorkerFailure]] = [failures.WorkerFailure]
    classes += failures.WorkerFailure.__subclasses__()
    for cls in classes:
        assert table[cls.kind] == (cls.permanent, "worker"), cls
    raised = {kind for kind, (_, by) in table.items() if by == "worker"}
    assert {cls.kind for cls in classes} == raised


@pytest.mark.parametrize(
    ("error", "wait_ms"),
    [
        (FetchFailed("HTTP 429", retry_after_s=2), 2000),
        (FetchFailed("HTTP 503", retry_after_s=0.0004), 1),  # a floor: rounded up
        (FetchFailed("HTTP 503"), 0),
        (FetchFailed("HTTP 503", retry_after_s=-5), 0),
        (FetchFailed("HTTP 503", retry_after_s=float("nan")), 0),
        (FetchFailed("HTTP 503", retry_after_s=float("inf")), (1 << 64) - 1),
        (FetchFailed("HTTP 503", retry_after_s=1e30), (1 << 64) - 1),
        (InvalidInput("bad", retry_after_s=5), 0),  # permanent: no retry to hold back
        (RuntimeError("boom"), 0),
    ],
)
def test_a_retry_after_hint_travels_as_whole_ms(error: Exception, wait_ms: int) -> None:
    report = describe_failure(error)
    assert report.retry_after_ms == wait_ms
    assert 0 <= report.retry_after_ms < 1 << 64  # fits the wire's uint64
