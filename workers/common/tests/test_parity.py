"""Parity of the rules both sides enforce (proto/telha/v1/rules.json): what workers_common
accepts, the core's validator accepts, and what one refuses the other refuses.

The core's side is the real binary's `telha check` (its own parser and validator, offline).
Every worker's golden corpus joins by glob (workers/*/tests/golden/**/*.json), so a new
worker's golden files are checked without touching this file; hypothesis adds submissions
built from labels, ids and spans at and past the rules' edges.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workers_common import IngestionResultBuilder
from workers_common._proto import wire_rules
from workers_common.conformance import check_submissions
from workers_common.result import BuilderError

REPO_ROOT = Path(__file__).resolve().parents[3]
TELHA_BIN = Path(os.environ.get("TELHA_BIN") or REPO_ROOT / "target" / "debug" / "telha")
_MISSING = not (TELHA_BIN.is_file() and os.access(TELHA_BIN, os.X_OK))
if _MISSING and os.environ.get("TELHA_E2E_REQUIRED") == "1":
    raise RuntimeError(f"TELHA_E2E_REQUIRED=1 but the core binary {TELHA_BIN} does not exist")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(_MISSING, reason=f"core binary {TELHA_BIN} not built (set TELHA_BIN)"),
]

GOLDEN = sorted(REPO_ROOT.glob("workers/*/tests/golden/**/*.json"))


def core_check(files: list[Path]) -> list[dict[str, Any]]:
    """The core's verdict on each file (one job's submissions, or one submission)."""
    out = subprocess.run(
        [str(TELHA_BIN), "check", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO_ROOT / "workers",  # no supervisor.toml here: the core's defaults
    )
    verdicts = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(verdicts) == len(files), out.stderr
    return verdicts


def test_every_golden_corpus_passes_the_core_validator() -> None:
    """Each worker's golden projections (what its conformance tests accept) are valid for
    the core, partials checked in order against the text before them."""
    assert GOLDEN, "no golden files found"
    refused = [v for v in core_check(GOLDEN) if not v["ok"]]
    assert refused == [], refused


# Labels, ids and span kinds at and past the rules' edges, and plain ones.
_LABELS = st.sampled_from(
    [
        "A",
        "ROW",
        "b_2",
        "x" * wire_rules.MAX_IDENTIFIER_BYTES,
        "x" * (wire_rules.MAX_IDENTIFIER_BYTES + 1),
        "9x",
        "has-dash",
        "_x",
        "é",
        "",
    ]
)
_IDS = st.sampled_from(
    [
        None,
        "doc:1",
        "n",
        "n12",
        "n0x",
        "nope",
        "i" * wire_rules.MAX_NODE_ID_BYTES,
        "i" * (wire_rules.MAX_NODE_ID_BYTES + 1),
        "tab\there",
        "ünï",
    ]
)
_KINDS = st.sampled_from(["text", "k" * wire_rules.MAX_IDENTIFIER_BYTES, "k" * 129, "a\nb"])


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    text = draw(st.sampled_from(["", "abc", "héllo wörld"]))
    size = len(text.encode())
    spans = draw(
        st.lists(st.tuples(st.integers(0, size + 1), st.integers(0, size + 1), _KINDS), max_size=3)
    )
    many = draw(st.sampled_from([1, 2, wire_rules.CAPS["max_labels_per_node"] + 1]))
    labels = (
        [f"L{i}" for i in range(many)]
        if many > 2
        else draw(st.lists(_LABELS, min_size=1, max_size=2))
    )
    return {
        "text": text,
        "spans": spans,
        "labels": labels,
        "id": draw(_IDS),
        "to_id": draw(_IDS.filter(lambda i: i is not None)),
    }


def build(plan: dict[str, Any]) -> bytes:
    """The submission the builder makes of `plan`, or BuilderError."""
    b = IngestionResultBuilder()
    b.set_canonical_text(plan["text"])
    refs = [b.add_span_range(s, e, kind=k) for s, e, k in plan["spans"]]
    node = b.add_node(plan["labels"], spans=refs, id=plan["id"])
    b.add_relationship("R", from_ref=node, to_id=plan["to_id"])
    return b.to_json()


def raw(plan: dict[str, Any]) -> bytes:
    """The same submission written by hand, past every builder check."""
    node: dict[str, Any] = {"labels": plan["labels"], "spanRefs": list(range(len(plan["spans"])))}
    if plan["id"] is not None:
        node["id"] = plan["id"]
    sub = {
        "v": 1,
        "canonicalText": plan["text"],
        "spans": [{"start": s, "end": e, "kind": k} for s, e, k in plan["spans"]],
        "nodes": [node],
        "relationships": [{"type": "R", "fromRef": 0, "toId": plan["to_id"]}],
    }
    return json.dumps(sub, ensure_ascii=False).encode()


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=plans())
def test_builder_and_core_agree_on_generated_submissions(
    plan: dict[str, Any], tmp_path: Path
) -> None:
    """A submission the builder (and the kit) accepts, the core accepts; one the builder
    refuses, the core refuses too when it is sent past the builder."""
    try:
        built: bytes | None = build(plan)
    except BuilderError:
        built = None
    path = tmp_path / "sub.json"
    if built is not None:
        check_submissions([built])
        path.write_bytes(built)
        [verdict] = core_check([path])
        assert verdict["ok"], (plan, verdict)
    path.write_bytes(raw(plan))
    [verdict] = core_check([path])
    assert verdict["ok"] == (built is not None), (plan, verdict)


def test_span_refs_per_node_cap_is_the_same_on_both_sides(tmp_path: Path) -> None:
    """At `max_span_refs_per_node` both sides accept a node; one distinct span more, the
    builder raises and the core refuses the hand-written submission with the node's path;
    so does the core for 500,000 refs to one span, which the builder cannot write."""
    cap = wire_rules.CAPS["max_span_refs_per_node"]
    builder = IngestionResultBuilder()
    builder.set_canonical_text("x" * (cap + 1))
    spans = [builder.add_span_range(i, i + 1) for i in range(cap + 1)]
    builder.add_node(["N"], spans=spans[:cap])
    with pytest.raises(BuilderError, match="max_span_refs_per_node"):
        builder.add_node(["N"], spans=spans)
    at_cap = builder.to_json()
    check_submissions([at_cap])

    def hand_written(refs: list[int]) -> bytes:
        body = json.loads(at_cap)
        body["nodes"] = [{"labels": ["N"], "spanRefs": refs}]
        return json.dumps(body).encode()

    files = []
    for name, data in (
        ("at-cap", at_cap),
        ("over", hand_written(list(range(cap + 1)))),
        ("duplicates", hand_written([0] * 500_000)),
    ):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_bytes(data)
    verdicts = core_check(files)
    assert verdicts[0]["ok"], verdicts[0]
    for verdict in verdicts[1:]:
        assert not verdict["ok"]
        assert "nodes[0].spanRefs" in json.dumps(verdict), verdict
