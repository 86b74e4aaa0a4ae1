"""The builder's bulk path: elements added as pre-encoded runs give the very bytes of the
same elements added one by one, and a run that is not shaped like elements is refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers_common import (
    BuilderError,
    BuilderTypeError,
    Candidate,
    EncodedRun,
    IngestionResultBuilder,
    ValidTime,
)
from workers_common.wire import EncodedArray, canonical_json, canonical_json_text

_TEXT = 'Alpha owes Beta 12,50 €; Zoë said "ok" \\ then 😀.\nNext line\ttab'

_KEYS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)  # what the core keeps exactly (wider is refused)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=6,
)
_PROPERTIES = st.dictionaries(_KEYS, _VALUES, max_size=5)


@st.composite
def _plans(draw: st.DrawFn) -> dict[str, Any]:
    """Spans of _TEXT, nodes (labels, properties, some of those spans, a valid time, an id),
    relationships between them or to ids; and for each array, which elements go in runs."""
    size = len(_TEXT.encode())
    spans = []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, size - 1))
        spans.append((start, draw(st.integers(start + 1, size)), draw(st.sampled_from(["a", "b"]))))
    nodes = []
    for at in range(draw(st.integers(1, 8))):
        nodes.append(
            {
                "labels": draw(
                    st.lists(st.sampled_from(["ROW", "A", "B_2"]), min_size=1, unique=True)
                ),
                "properties": draw(_PROPERTIES),
                "spans": draw(st.lists(st.integers(0, len(spans) - 1), max_size=2))
                if spans
                else [],
                "valid": draw(st.none() | st.tuples(st.integers(-(2**40), 2**40), st.booleans())),
                "id": draw(st.none() | st.just(f"node:{at}")),
            }
        )
    # Ids by reference are printable (the wire refuses control characters in ids).
    printable = st.characters(exclude_categories=["Cs", "Cc"])
    ends = st.integers(0, len(nodes) - 1) | st.text(printable, min_size=1, max_size=5)
    relationships = draw(
        st.lists(st.tuples(st.sampled_from(["HAS_ROW", "R"]), ends, ends, _PROPERTIES), max_size=8)
    )
    runs = {
        name: draw(st.lists(st.booleans(), min_size=count, max_size=count))
        for name, count in (
            ("spans", len(spans)),
            ("nodes", len(nodes)),
            ("relationships", len(relationships)),
        )
    }
    return {"spans": spans, "nodes": nodes, "relationships": relationships, "runs": runs}


def _per_item(plan: dict[str, Any]) -> IngestionResultBuilder:
    builder = IngestionResultBuilder(base_offset=7, clarify=True)
    builder.set_canonical_text(_TEXT)
    spans = [builder.add_span_range(7 + s, 7 + e, kind=k) for s, e, k in _legal(plan["spans"])]
    refs = []
    for node in plan["nodes"]:
        valid = node["valid"]
        refs.append(
            builder.add_node(
                node["labels"],
                node["properties"],
                spans=[spans[i] for i in node["spans"]],
                valid_time=None if valid is None else _valid_time(valid),
                id=node["id"],
            )
        )
    for kind, source, target, properties in plan["relationships"]:
        ends = {**_end("from", source, refs), **_end("to", target, refs)}
        builder.add_relationship(kind, properties=properties, **ends)
    return builder


def _legal(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    # Spans of _TEXT that start and end on character boundaries (the builder checks).
    data = _TEXT.encode()

    def boundary(at: int) -> int:
        while at < len(data) and data[at] & 0xC0 == 0x80:
            at += 1
        return at

    legal = []
    for start, end, kind in spans:
        begin, finish = boundary(start), boundary(end)
        legal.append((begin, finish, kind) if begin < finish else (0, 1, kind))
    return legal


def _valid_time(valid: tuple[int, bool]) -> ValidTime:
    start, bounded = valid
    return ValidTime(start, start + 1 if bounded else None)


def _end(side: str, point: int | str, refs: list[Any]) -> dict[str, Any]:
    return {f"{side}_ref": refs[point]} if isinstance(point, int) else {f"{side}_id": point}


def _bulk(plan: dict[str, Any], built: dict[str, Any]) -> IngestionResultBuilder:
    """The same elements, the ones the plan marks added as encoded runs (their canonical
    JSON taken from the per-item build), refs taken with span_ref and node_ref."""
    builder = IngestionResultBuilder(base_offset=7, clarify=True)
    builder.set_canonical_text(_TEXT)
    for name, add in (
        ("spans", builder.add_encoded_spans),
        ("nodes", builder.add_encoded_nodes),
        ("relationships", builder.add_encoded_relationships),
    ):
        elements, marks = built[name], plan["runs"][name]
        at = 0
        while at < len(elements):
            stop = at + 1
            while stop < len(elements) and marks[stop] == marks[at]:
                stop += 1
            if marks[at]:
                text = ",".join(canonical_json_text(e) for e in elements[at:stop])
                assert add(EncodedRun(text.encode(), stop - at)) == range(at, stop)
            else:
                for index in range(at, stop):
                    _add_plain(builder, name, plan, index)
            at = stop
    return builder


def _add_plain(
    builder: IngestionResultBuilder, name: str, plan: dict[str, Any], index: int
) -> None:
    if name == "spans":
        start, end, kind = _legal(plan["spans"])[index]
        builder.add_span_range(7 + start, 7 + end, kind=kind)
    elif name == "nodes":
        node = plan["nodes"][index]
        valid = node["valid"]
        builder.add_node(
            node["labels"],
            node["properties"],
            spans=[builder.span_ref(i) for i in node["spans"]],
            valid_time=None if valid is None else _valid_time(valid),
            id=node["id"],
        )
    else:
        kind, source, target, properties = plan["relationships"][index]
        refs = [builder.node_ref(i) for i in range(builder.node_count)]
        builder.add_relationship(
            kind, properties=properties, **_end("from", source, refs), **_end("to", target, refs)
        )


# 300 examples took 75 s on a 2-core machine under load (past the suite's 60 s timeout).
@pytest.mark.timeout(300)
@settings(max_examples=300, deadline=None)
@given(_plans())
def test_encoded_runs_give_the_per_item_bytes(plan: dict[str, Any]) -> None:
    expected = _per_item(plan)
    built = expected.build(partial=True)
    bulk = _bulk(plan, built)
    assert bulk.to_json(partial=True) == expected.to_json(partial=True)
    # The driver's encoding of a yielded dict: a copy with `seq` and `partial` added.
    assert canonical_json({**bulk.build(), "seq": 3, "partial": False}) == canonical_json(
        {**built, "seq": 3, "partial": False}
    )


# -- the arrays build() returns --------------------------------------------------------------


def test_an_array_with_runs_builds_as_an_encoded_array_and_decodes_to_its_elements() -> None:
    builder = IngestionResultBuilder()
    builder.add_node(["A"], {"x": 1})
    assert builder.add_encoded_nodes(
        EncodedRun(b'{"labels":["B"],"properties":{},"spanRefs":[]}', 1)
    ) == range(1, 2)
    builder.add_node(["C"])
    built = builder.build()
    assert isinstance(built["nodes"], EncodedArray)
    assert len(built["nodes"]) == builder.node_count == 3
    assert built["nodes"].decoded() == [
        {"labels": ["A"], "properties": {"x": 1}, "spanRefs": []},
        {"labels": ["B"], "properties": {}, "spanRefs": []},
        {"labels": ["C"], "properties": {}, "spanRefs": []},
    ]
    # Arrays without a run stay plain lists.
    assert built["spans"] == []
    assert built["relationships"] == []


def test_refs_of_encoded_nodes_serve_edges_and_ambiguities() -> None:
    builder = IngestionResultBuilder(clarify=True)
    node = b'{"labels":["ROW"],"properties":{},"spanRefs":[]}'
    builder.add_encoded_nodes(EncodedRun(node + b"," + node, 2))
    builder.add_relationship("R", from_ref=builder.node_ref(0), to_ref=builder.node_ref(1))
    builder.add_ambiguity(
        builder.node_ref(1),
        "k",
        [Candidate("x", 0)],
        detector_confidence=0.5,
        applied_candidate_confidence=0.5,
    )
    built = builder.build()
    assert built["relationships"][0]["toRef"] == 1
    assert built["ambiguities"][0]["nodeRef"] == 1


def test_attach_span_finds_plain_nodes_around_runs_and_refuses_encoded_ones() -> None:
    builder = IngestionResultBuilder()
    span = builder.add_span_text("text")
    before = builder.add_node(["A"])
    builder.add_encoded_nodes(EncodedRun(b'{"labels":["B"],"properties":{},"spanRefs":[]}', 1))
    after = builder.add_node(["C"])
    builder.attach_span(after, span)
    builder.attach_span(before, span)
    with pytest.raises(BuilderError, match="added encoded"):
        builder.attach_span(builder.node_ref(1), span)
    nodes = builder.build()["nodes"].decoded()
    assert [n["spanRefs"] for n in nodes] == [[0], [], [0]]


def test_refs_out_of_range_raise() -> None:
    builder = IngestionResultBuilder()
    builder.add_node(["A"])
    with pytest.raises(BuilderError):
        builder.node_ref(1)
    with pytest.raises(BuilderError):
        builder.node_ref(-1)
    with pytest.raises(BuilderError):
        builder.span_ref(0)


# -- shape checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "count", "error"),
    [
        ("{}", 1, TypeError),
        (b"{}", True, TypeError),
        (b"{}", 0, ValueError),
        (b"{},{}", 4, ValueError),
        (b"", 1, ValueError),
        (b",{}", 1, ValueError),
        (b"{},", 1, ValueError),
        (b" {}", 1, ValueError),
        (b"{}\n", 1, ValueError),
    ],
)
def test_a_run_not_shaped_like_elements_is_refused(data: Any, count: Any, error: type) -> None:
    with pytest.raises(error):
        EncodedRun(data, count)


def test_builder_takes_runs_of_objects_only() -> None:
    builder = IngestionResultBuilder()
    with pytest.raises(BuilderError, match="JSON objects"):
        builder.add_encoded_nodes(EncodedRun(b"1,2", 2))
    with pytest.raises(BuilderError, match="JSON objects"):
        builder.add_encoded_spans(EncodedRun(b'[{"end":1}]', 1))
    with pytest.raises(BuilderTypeError):
        builder.add_encoded_relationships(b"{}")  # type: ignore[arg-type]
    assert builder.node_count == builder.span_count == 0


def test_an_encoded_array_below_the_top_level_is_not_json() -> None:
    array = EncodedArray([EncodedRun(b"1", 1)])
    assert canonical_json({"a": array, "b": [2]}) == b'{"a":[1],"b":[2]}'
    with pytest.raises(TypeError):
        canonical_json({"a": {"b": array}})
