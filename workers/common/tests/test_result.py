"""IngestionResultBuilder: every method's output in the wire shape, and every misuse raising."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from workers_common import (
    BuilderError,
    BuilderTypeError,
    Candidate,
    IngestionResultBuilder,
    SpanRef,
    TooLarge,
    ValidTime,
    describe_failure,
    is_child_name,
)
from workers_common._proto import wire_rules
from workers_common.result import TooManySpanRefs, clarify_enabled


def candidates() -> list[Candidate]:
    return [Candidate("2026-05-01 (effective)", 1_777_593_600_000_000)]


# -- the seed's example and the output shape ------------------------------------------------


def test_seed_example_builds_the_wire_shape() -> None:
    builder = IngestionResultBuilder()
    span = builder.add_span_text("Alpha owes Beta.", kind="body")
    builder.add_node(["CONTRACT"], {"name": "Alpha"}, spans=[span])
    assert builder.build() == {
        "v": 1,
        "canonicalText": "Alpha owes Beta.",
        "spans": [{"start": 0, "end": 16, "kind": "body"}],
        "nodes": [{"labels": ["CONTRACT"], "properties": {"name": "Alpha"}, "spanRefs": [0]}],
        "relationships": [],
    }


def test_to_json_is_canonical_bytes() -> None:
    builder = IngestionResultBuilder()
    builder.add_node(["DOC"], {"b": 1, "a": "ü"})
    assert (
        builder.to_json()
        == (
            '{"canonicalText":"","nodes":[{"labels":["DOC"],"properties":{"a":"ü","b":1},'
            '"spanRefs":[]}],"relationships":[],"spans":[],"v":1}'
        ).encode()
    )


def test_identical_inputs_give_identical_bytes() -> None:
    def make(order: list[tuple[str, int]]) -> bytes:
        builder = IngestionResultBuilder()
        builder.add_node(["N"], dict(order))
        return builder.to_json()

    assert make([("x", 1), ("y", 2)]) == make([("y", 2), ("x", 1)])


def test_to_json_encodes_what_build_hands_out_and_later_changes_reach_neither() -> None:
    # to_json encodes the builder's own elements (no copy); build() hands out copies. Both
    # must give the same bytes, and mutating what was passed in or what build() returned
    # must change neither (properties are copied when added).
    builder = IngestionResultBuilder()
    span = builder.add_span_text("fn a() {}\n", kind="body")
    props = {"name": "a", "lines": [1, 1], "tags": ("x", "y")}
    node = builder.add_node(["FUNCTION"], props, spans=[span], id="code:sym:r/a.rs#a")
    builder.add_relationship("CALLS", from_ref=node, to_id="code:sym:r/b.rs#b", properties={})
    builder.attach_span(node, builder.add_span_text("more\n", kind="body"))
    builder.add_child_job("code", "code:r/b.rs@1", options={"k": [1]}, content=b"fn b() {}")
    builder.set_stats({"files": {"rust": 1}})
    before = builder.to_json()
    built = builder.build(partial=True)
    props["name"] = "changed"
    props["lines"].append(99)  # type: ignore[attr-defined]
    built["nodes"][0]["properties"]["name"] = "also changed"
    built["spans"][0]["kind"] = "changed"
    built["childJobs"][0]["options"]["k"].append(2)
    built["stats"]["files"]["rust"] = 2
    assert builder.to_json() == before
    assert json.loads(before)["nodes"][0]["properties"] == {
        "name": "a",
        "lines": [1, 1],
        "tags": ["x", "y"],
    }
    assert builder.to_json(partial=True) == json.dumps(
        builder.build(partial=True),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")


def test_empty_optional_keys_are_omitted() -> None:
    out = IngestionResultBuilder().build()
    assert set(out) == {"v", "canonicalText", "spans", "nodes", "relationships"}


def test_build_returns_a_fresh_copy() -> None:
    builder = IngestionResultBuilder()
    builder.add_node(["N"], {"list": [1]})
    first = builder.build()
    first["nodes"][0]["properties"]["list"].append(2)
    assert builder.build()["nodes"][0]["properties"] == {"list": [1]}


def test_properties_are_copied_at_the_call() -> None:
    props = {"k": [1]}
    builder = IngestionResultBuilder()
    builder.add_node(["N"], props)
    props["k"].append(2)
    assert builder.build()["nodes"][0]["properties"] == {"k": [1]}


def test_build_partial_flag() -> None:
    builder = IngestionResultBuilder()
    assert builder.build(partial=False)["partial"] is False
    assert json.loads(builder.to_json(partial=True))["partial"] is True
    with pytest.raises(BuilderTypeError):
        builder.build(partial="no")  # type: ignore[arg-type]


# -- text and spans -------------------------------------------------------------------------


def test_add_text_and_span_text_offsets_are_utf8_bytes() -> None:
    builder = IngestionResultBuilder()
    builder.add_text("é")  # 2 bytes
    span = builder.add_span_text("😀x", kind="k")  # 4 + 1 bytes
    assert builder.build()["spans"][span.index] == {"start": 2, "end": 7, "kind": "k"}
    assert builder.byte_length == 7


def test_text_is_normalized_once_on_the_way_in() -> None:
    builder = IngestionResultBuilder()
    span = builder.add_span_text("e\u0301\r\n")
    assert builder.canonical_text == "é\n"
    assert builder.build()["spans"][span.index] == {"start": 0, "end": 3, "kind": "text"}


def test_set_canonical_text_then_add_span_range() -> None:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("ab\r\ncd")
    assert builder.canonical_text == "ab\ncd"
    span = builder.add_span_range(3, 5, kind="line")
    assert builder.build()["spans"] == [{"start": 3, "end": 5, "kind": "line"}]
    assert span.index == 0


def test_add_span_range_in_append_mode() -> None:
    builder = IngestionResultBuilder()
    builder.add_text("hello world")
    builder.add_span_range(6, 11, kind="word")
    assert builder.build()["spans"] == [{"start": 6, "end": 11, "kind": "word"}]


def test_base_offset_makes_offsets_global() -> None:
    builder = IngestionResultBuilder(base_offset=100)
    span = builder.add_span_text("abc")
    builder.add_span_range(101, 103)
    out = builder.build()
    assert out["canonicalText"] == "abc"
    assert out["spans"][span.index] == {"start": 100, "end": 103, "kind": "text"}
    assert out["spans"][1] == {"start": 101, "end": 103, "kind": "text"}
    assert (builder.base_offset, builder.byte_length, builder.end_offset) == (100, 3, 103)


@pytest.mark.parametrize(("start", "end"), [(0, 6), (-1, 2), (3, 3), (4, 2), (99, 100)])
def test_add_span_range_outside_or_empty_raises(start: int, end: int) -> None:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("hello")
    with pytest.raises(BuilderError):
        builder.add_span_range(start, end)


def test_add_span_range_below_base_offset_raises() -> None:
    builder = IngestionResultBuilder(base_offset=10)
    builder.set_canonical_text("hello")
    with pytest.raises(BuilderError, match="outside"):
        builder.add_span_range(9, 12)


def test_add_span_range_inside_a_utf8_sequence_raises() -> None:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("aé")  # é is bytes 1..3
    with pytest.raises(BuilderError, match="UTF-8"):
        builder.add_span_range(0, 2)
    with pytest.raises(BuilderError, match="UTF-8"):
        builder.add_span_range(2, 3)


def test_add_span_range_non_int_raises_type_error() -> None:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("hello")
    with pytest.raises(BuilderTypeError):
        builder.add_span_range(0.0, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        builder.add_span_range(True, 2)


def test_set_canonical_text_twice_or_after_append_raises() -> None:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("a")
    with pytest.raises(BuilderError):
        builder.set_canonical_text("b")
    appended = IngestionResultBuilder()
    appended.add_text("a")
    with pytest.raises(BuilderError):
        appended.set_canonical_text("b")


def test_append_after_set_canonical_text_raises() -> None:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("a")
    with pytest.raises(BuilderError):
        builder.add_text("b")
    with pytest.raises(BuilderError):
        builder.add_span_text("b")


def test_text_without_utf8_form_raises_and_changes_nothing() -> None:
    builder = IngestionResultBuilder()
    builder.add_text("ok")
    with pytest.raises(BuilderError, match="UTF-8"):
        builder.add_span_text("bad \udc80 byte")
    with pytest.raises(BuilderError, match="UTF-8"):
        builder.add_node(["N"], {"p": "\ud800"})
    with pytest.raises(BuilderError, match="UTF-8"):
        builder.add_node(["N"], {"\ud800": 1})
    assert builder.build() == IngestionResultBuilder().build() | {"canonicalText": "ok"}
    fresh = IngestionResultBuilder()
    with pytest.raises(BuilderError):
        fresh.set_canonical_text("\udc80")
    fresh.set_canonical_text("fine")  # the failed call did not use up the one set


def test_empty_span_text_raises() -> None:
    builder = IngestionResultBuilder()
    with pytest.raises(BuilderError):
        builder.add_span_text("")


@pytest.mark.parametrize("bad", [b"bytes", None, 3])
def test_non_str_text_raises_type_error(bad: object) -> None:
    builder = IngestionResultBuilder()
    with pytest.raises(BuilderTypeError):
        builder.add_text(bad)  # type: ignore[arg-type]
    with pytest.raises(BuilderTypeError):
        builder.add_span_text(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["", None])
def test_bad_span_kind_raises(kind: object) -> None:
    with pytest.raises(BuilderError):
        IngestionResultBuilder().add_span_text("x", kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("base", [-1, 1.5, True])
def test_bad_base_offset_raises(base: object) -> None:
    with pytest.raises(BuilderError):
        IngestionResultBuilder(base_offset=base)  # type: ignore[arg-type]


# -- nodes ----------------------------------------------------------------------------------


def test_add_node_with_everything() -> None:
    builder = IngestionResultBuilder()
    span = builder.add_span_text("Ann")
    ref = builder.add_node(
        ["PERSON", "CONTACT"],
        {"email": "ann@example.org", "n": 1.5, "ok": True, "none": None, "tags": ("a", "b")},
        spans=[span, span],
        valid_time=ValidTime(1_000, 2_000),
        id="person:ann@example.org",
    )
    assert builder.build()["nodes"][ref.index] == {
        "labels": ["PERSON", "CONTACT"],
        "properties": {
            "email": "ann@example.org",
            "n": 1.5,
            "ok": True,
            "none": None,
            "tags": ["a", "b"],
        },
        "spanRefs": [0],
        "validTime": {"validFrom": 1_000, "validTo": 2_000},
        "id": "person:ann@example.org",
    }


def test_valid_time_open_ended_and_from_datetimes() -> None:
    assert ValidTime(5).to_wire() == {"validFrom": 5}
    plus_two = timezone(timedelta(hours=2))
    interval = ValidTime.from_datetimes(
        datetime(1970, 1, 1, 2, 0, 0, 1, tzinfo=plus_two), datetime(1970, 1, 2, tzinfo=UTC)
    )
    assert interval == ValidTime(1, 86_400_000_000)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ValidTime(10, 10),
        lambda: ValidTime(10, 5),
        lambda: ValidTime(1.5),  # type: ignore[arg-type]
        lambda: ValidTime(True),
        lambda: ValidTime.from_datetimes(datetime(2026, 1, 1)),  # naive: depends on TZ
    ],
)
def test_bad_valid_time_raises_where_it_is_made(make: object) -> None:
    with pytest.raises(BuilderError):
        make()  # type: ignore[operator]


@pytest.mark.parametrize("labels", [[], ["has space"], [""], ["1ABC"], "DOCUMENT", ["A", "A"], [3]])
def test_bad_labels_raise(labels: object) -> None:
    with pytest.raises(BuilderError):
        IngestionResultBuilder().add_node(labels, {})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "properties",
    [
        {1: "int key"},
        {"f": float("nan")},
        {"f": float("inf")},
        {"o": object()},
        ["not", "a", "map"],
    ],
)
def test_bad_properties_raise(properties: object) -> None:
    with pytest.raises(BuilderError):
        IngestionResultBuilder().add_node(["N"], properties)  # type: ignore[arg-type]


def test_node_with_foreign_or_plain_span_ref_raises() -> None:
    other = IngestionResultBuilder()
    foreign = other.add_span_text("x")
    builder = IngestionResultBuilder()
    builder.add_span_text("y")
    with pytest.raises(BuilderError, match="does not belong"):
        builder.add_node(["N"], spans=[foreign])
    with pytest.raises(BuilderTypeError):
        builder.add_node(["N"], spans=[0])  # type: ignore[list-item]


def test_duplicate_node_id_raises() -> None:
    builder = IngestionResultBuilder()
    builder.add_node(["N"], id="a")
    with pytest.raises(BuilderError, match="already used"):
        builder.add_node(["N"], id="a")
    with pytest.raises(BuilderError):
        builder.add_node(["N"], id="")


def test_bad_valid_time_type_raises() -> None:
    with pytest.raises(BuilderTypeError):
        IngestionResultBuilder().add_node(["N"], valid_time=(1, 2))  # type: ignore[arg-type]


# -- attach_span ----------------------------------------------------------------------------


def test_attach_span_links_once() -> None:
    builder = IngestionResultBuilder()
    node = builder.add_node(["N"])
    span = builder.add_span_text("later")
    builder.attach_span(node, span)
    builder.attach_span(node, span)
    assert builder.build()["nodes"][0]["spanRefs"] == [0]


def test_attach_span_misuse_raises() -> None:
    builder = IngestionResultBuilder()
    node = builder.add_node(["N"])
    span = builder.add_span_text("x")
    other = IngestionResultBuilder()
    with pytest.raises(BuilderError):
        builder.attach_span(other.add_node(["N"]), span)
    with pytest.raises(BuilderError):
        builder.attach_span(node, other.add_span_text("y"))
    with pytest.raises(BuilderTypeError):
        builder.attach_span(0, span)  # type: ignore[arg-type]


# -- spans per node (rules.json max_span_refs_per_node) --------------------------------------

SPAN_REFS_CAP = wire_rules.CAPS["max_span_refs_per_node"]


def one_byte_spans(count: int) -> tuple[IngestionResultBuilder, list[SpanRef]]:
    builder = IngestionResultBuilder()
    builder.set_canonical_text("x" * count)
    return builder, [builder.add_span_range(i, i + 1) for i in range(count)]


def test_a_node_at_the_span_refs_cap_builds_and_one_more_raises_too_large() -> None:
    builder, spans = one_byte_spans(SPAN_REFS_CAP + 1)
    # Duplicates are dropped before counting: the cap counts what goes on the wire.
    node = builder.add_node(["N"], spans=[*spans[:SPAN_REFS_CAP], spans[0]])
    with pytest.raises(TooManySpanRefs, match="max_span_refs_per_node") as raised:
        builder.add_node(["N"], spans=spans)
    # Raised like the label cap (a BuilderError at the call), classified as too_large.
    assert isinstance(raised.value, BuilderError)
    assert describe_failure(raised.value).reason.startswith("too_large: ")
    with pytest.raises(TooManySpanRefs):
        builder.attach_span(node, spans[-1])
    builder.attach_span(node, spans[5])  # already there: not one more
    [wire_node] = builder.build()["nodes"]
    assert wire_node["spanRefs"] == list(range(SPAN_REFS_CAP))


def test_attaching_many_spans_to_one_node_is_linear() -> None:
    # A PERSON cited by 50,000 recipient fields: the duplicate check was a list scan per
    # attachment (80 s here for 50,000); each span twice, the second a duplicate.
    builder, spans = one_byte_spans(50_000)
    node = builder.add_node(["PERSON"], spans=spans[:3])
    started = time.monotonic()
    for span in spans:
        builder.attach_span(node, span)
        builder.attach_span(node, spans[0])
    many = builder.add_node(["URL_REF"], spans=spans + spans)
    assert time.monotonic() - started < 10
    built = builder.build()["nodes"]
    assert built[node.index]["spanRefs"] == built[many.index]["spanRefs"] == list(range(50_000))


# -- relationships --------------------------------------------------------------------------


def test_add_relationship_by_ref_and_by_id() -> None:
    builder = IngestionResultBuilder()
    a = builder.add_node(["A"])
    b = builder.add_node(["B"])
    builder.add_relationship("LINKS", from_ref=a, to_ref=b, properties={"w": 2})
    builder.add_relationship("IN_REPLY_TO", from_ref=b, to_id="msg:parent")
    builder.add_relationship("MENTIONS", from_id="x", to_ref=a)
    assert builder.build()["relationships"] == [
        {"type": "LINKS", "fromRef": 0, "toRef": 1, "properties": {"w": 2}},
        {"type": "IN_REPLY_TO", "fromRef": 1, "toId": "msg:parent", "properties": {}},
        {"type": "MENTIONS", "fromId": "x", "toRef": 0, "properties": {}},
    ]


def test_relationship_endpoint_misuse_raises() -> None:
    builder = IngestionResultBuilder()
    a = builder.add_node(["A"])
    with pytest.raises(BuilderError, match="exactly one of from_ref and from_id"):
        builder.add_relationship("R", from_ref=a, from_id="x", to_ref=a)
    with pytest.raises(BuilderError, match="exactly one of from_ref and from_id"):
        builder.add_relationship("R", to_ref=a)
    with pytest.raises(BuilderError, match="exactly one of to_ref and to_id"):
        builder.add_relationship("R", from_ref=a)
    with pytest.raises(BuilderError, match="exactly one of to_ref and to_id"):
        builder.add_relationship("R", from_ref=a, to_ref=a, to_id="y")
    with pytest.raises(BuilderError):
        builder.add_relationship("R", from_ref=a, to_id="")
    with pytest.raises(BuilderError):
        builder.add_relationship("bad type", from_ref=a, to_ref=a)
    with pytest.raises(BuilderError):
        builder.add_relationship("R", from_ref=IngestionResultBuilder().add_node(["X"]), to_ref=a)
    with pytest.raises(BuilderError):
        builder.add_relationship("R", from_ref=a, to_ref=a, properties={"x": float("nan")})
    assert builder.build()["relationships"] == []


# -- stats, content hash, child jobs --------------------------------------------------------


def test_set_stats() -> None:
    builder = IngestionResultBuilder()
    builder.set_stats({"rows": 1200, "dirty_counts": {"date": 4}})
    assert builder.build()["stats"] == {"rows": 1200, "dirty_counts": {"date": 4}}
    with pytest.raises(BuilderTypeError):
        builder.set_stats([1])  # type: ignore[arg-type]


def test_set_content_hash() -> None:
    builder = IngestionResultBuilder()
    builder.set_content_hash("ab" * 32)
    assert builder.build()["contentHash"] == "ab" * 32
    # empty, uppercase, not hex, too short (16 digits), a non-hex digit
    for bad in ["", "AB" * 32, "xyz", "ab" * 8, "ab" * 16 + "g"]:
        with pytest.raises(BuilderError):
            builder.set_content_hash(bad)


def test_add_child_job() -> None:
    builder = IngestionResultBuilder()
    builder.add_child_job("docling", "attachment:abc", content=b"\x00\xff")
    builder.add_child_job("web", "https://example.org/next", options={"depth": 1})
    assert builder.build()["childJobs"] == [
        {
            "format": "docling",
            "name": "attachment:abc",
            "contentB64": base64.b64encode(b"\x00\xff").decode(),
        },
        {"format": "web", "name": "https://example.org/next", "options": {"depth": 1}},
    ]


def test_child_job_misuse_raises() -> None:
    builder = IngestionResultBuilder()
    builder.add_child_job("docling", "a", content=b"x")
    with pytest.raises(BuilderError, match="already"):
        builder.add_child_job("docling", "a", content=b"y")
    with pytest.raises(BuilderError):
        builder.add_child_job("", "b")
    with pytest.raises(BuilderError):
        builder.add_child_job("docling", "")
    with pytest.raises(BuilderTypeError):
        builder.add_child_job("docling", "c", content="text")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["a\nb", "tab\there", "del\x7f", "x" * (wire_rules.MAX_CHILD_NAME_BYTES + 1)]
)
def test_a_child_name_the_core_would_refuse_is_refused_here(name: str) -> None:
    """The core refuses a whole submission whose child name has a control character or is
    over 4,096 bytes (a code archive's member named with a newline ended dead as
    `protocol`): the builder says so where the name is made."""
    assert not is_child_name(name)
    builder = IngestionResultBuilder()
    with pytest.raises(BuilderError, match="control characters"):
        builder.add_child_job("code", name)
    longest = "é" * (wire_rules.MAX_CHILD_NAME_BYTES // 2)
    assert is_child_name(longest)
    builder.add_child_job("code", longest)


# -- ambiguities ----------------------------------------------------------------------------


def test_add_ambiguity_with_clarify_on() -> None:
    builder = IngestionResultBuilder(clarify=True)
    node = builder.add_node(["FACT"])
    index = builder.add_ambiguity(
        node,
        "conflicting_dates",
        [Candidate("2026-05-01 (effective)", 10), Candidate("2026-06-01 (signed)", 20, 30)],
        detector_confidence=0.7,
        applied_candidate_confidence=0.55,
        severity_hint="high",
    )
    assert index == 0
    assert builder.build()["ambiguities"] == [
        {
            "nodeRef": 0,
            "kind": "conflicting_dates",
            "candidates": [
                {"label": "2026-05-01 (effective)", "validFrom": 10},
                {"label": "2026-06-01 (signed)", "validFrom": 20, "validTo": 30},
            ],
            "detectorConfidence": 0.7,
            "appliedCandidateConfidence": 0.55,
            "severityHint": "high",
        }
    ]


def test_add_ambiguity_is_a_noop_without_clarify() -> None:
    builder = IngestionResultBuilder()
    node = builder.add_node(["FACT"])
    result = builder.add_ambiguity(
        node, "relative_date", candidates(), detector_confidence=1, applied_candidate_confidence=0
    )
    assert result is None
    assert "ambiguities" not in builder.build()


@pytest.mark.parametrize(
    ("options", "enabled"),
    [
        (None, False),
        ({}, False),
        ({"clarify": True}, True),
        ({"clarify": False}, False),
        ({"clarify": "true"}, True),
        ({"clarify": "off"}, False),
        ({"clarify": 1}, True),
        ({"clarify": 0}, False),
    ],
)
def test_clarify_comes_from_options(options: dict[str, object] | None, enabled: bool) -> None:
    assert clarify_enabled(options) is enabled
    assert IngestionResultBuilder(options=options).clarify is enabled
    assert IngestionResultBuilder(options=options, clarify=True).clarify is True


@pytest.mark.parametrize("clarify", [True, False])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"candidates": []},
        {"candidates": ["2026-05-01"]},
        {"kind": ""},
        {"detector_confidence": 1.5},
        {"detector_confidence": float("nan")},
        {"applied_candidate_confidence": -0.1},
        {"applied_candidate_confidence": "high"},
        {"severity_hint": ""},
        {"node_ref": 0},
    ],
)
def test_ambiguity_misuse_raises_whether_or_not_clarify(
    clarify: bool, kwargs: dict[str, object]
) -> None:
    builder = IngestionResultBuilder(clarify=clarify)
    node = builder.add_node(["FACT"])
    args: dict[str, object] = {
        "node_ref": node,
        "kind": "missing_date",
        "candidates": candidates(),
        "detector_confidence": 0.5,
        "applied_candidate_confidence": 0.5,
        **kwargs,
    }
    with pytest.raises(BuilderError):
        builder.add_ambiguity(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make",
    [lambda: Candidate("", 1), lambda: Candidate("x", 5, 5), lambda: Candidate("x", "1")],  # type: ignore[arg-type]
)
def test_bad_candidate_raises_where_it_is_made(make: object) -> None:
    with pytest.raises(BuilderError):
        make()  # type: ignore[operator]


def test_builder_errors_are_value_and_type_errors() -> None:
    assert issubclass(BuilderError, ValueError)
    assert issubclass(BuilderTypeError, TypeError)
    assert issubclass(BuilderTypeError, BuilderError)


def test_a_submission_over_the_cores_caps_is_too_large_not_a_protocol_refusal() -> None:
    """One node or byte past a [graph] default cap (rules.json) raises TooLarge at build,
    naming the cap; at the cap it builds."""
    nodes = wire_rules.CAPS["max_nodes"]
    builder = IngestionResultBuilder()
    for _ in range(nodes):
        builder.add_node(["ROW"])
    assert len(builder.build()["nodes"]) == nodes
    builder.add_node(["ROW"])
    with pytest.raises(TooLarge, match=r"max_nodes"):
        builder.build()
    text = IngestionResultBuilder()
    text.set_canonical_text("x" * (wire_rules.CAPS["max_text_bytes"] + 1))
    with pytest.raises(TooLarge, match=r"max_text_bytes") as raised:
        text.to_json()
    assert raised.value.kind == "too_large"
    assert raised.value.permanent
