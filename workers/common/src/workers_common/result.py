"""IngestionResultBuilder: the only way a worker assembles a wire v1 submission.

The builder makes the protocol hard to get wrong: text is normalized once, as it arrives,
so every span is a UTF-8 byte range of the canonical text the core will store; a ref that
does not exist, an edge with two sources, an offset outside the text or inside a UTF-8
sequence all raise BuilderError at the call that made the mistake, where the traceback
points at the worker's bug, instead of as a `protocol` failure from the core much later.

Streaming workers build one builder per partial with `base_offset` set to the previous
partial's `end_offset`: offsets stay global into the accumulated text while each partial
carries only its own slice of it. A worker that sends many thousands of similar elements
per partial (a table's rows) may add them as pre-encoded runs (`add_encoded_nodes` and
its siblings): the bulk path trades the per-element checks for the speed of writing the
JSON text with vectorized string operations, and keeps the bytes identical.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from ._proto import wire_rules
from .elements import Elements
from .failures import TooLarge
from .normalize import normalize_canonical
from .wire import WIRE_VERSION, EncodedRun, JsonValue, canonical_json, json_value

__all__ = [
    "BuilderError",
    "BuilderTypeError",
    "Candidate",
    "IngestionResultBuilder",
    "NodeRef",
    "SpanRef",
    "TooManySpanRefs",
    "ValidTime",
    "clarify_enabled",
    "is_child_name",
    "is_node_id",
]

# Labels and edge types are identifiers (PARAGRAPH, IN_REPLY_TO): the core and graph
# queries name them, so spaces and punctuation would only cause trouble later.
# The syntax and limits are the core's too: proto/telha/v1/rules.json, read by both sides.
SUBMISSION_CAPS: Mapping[str, int] = wire_rules.CAPS
"""The core's default per-submission caps by `[graph]` key (rules.json): `build()` raises
TooLarge past one; a worker may check its own estimate earlier with the same numbers."""

_IDENTIFIER = re.compile(wire_rules.IDENTIFIER_PATTERN + r"\Z")
_CORE_ID = re.compile(wire_rules.CORE_ID_PATTERN + r"\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HEX = re.compile(r"[0-9a-f]{32,128}\Z")
_CLARIFY_WORDS = frozenset({"true", "1", "yes", "on"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class BuilderError(ValueError):
    """The builder was used in a way that would produce an invalid submission."""


class BuilderTypeError(BuilderError, TypeError):
    """An argument has the wrong type (a plain int where a ref is due, a naive datetime, …)."""


class TooManySpanRefs(TooLarge, BuilderError):
    """A node would cite more spans than the core takes on one node
    ([graph].max_span_refs_per_node). Raised where the span was given, as the label cap
    is; unlike the label count, the span count follows the input (a page linking one URL
    from every anchor, one address in every recipient field), so a handler that lets it
    escape ends the job as a permanent `too_large`, not as a bug (TooLarge first: its
    initializer runs)."""


_SPAN_REFS_CAP = wire_rules.CAPS["max_span_refs_per_node"]
# A node's spanRefs longer than this get a set beside the list, so attaching stays
# linear in the spans attached (the list alone made 50,000 attachments take 80 s).
_REF_SET_FROM = 16


@dataclass(frozen=True, slots=True)
class SpanRef:
    """A span added to one builder; only that builder accepts it."""

    index: int
    owner: object = field(repr=False)


@dataclass(frozen=True, slots=True)
class NodeRef:
    """A node added to one builder; only that builder accepts it."""

    index: int
    owner: object = field(repr=False)


def _micros(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise BuilderTypeError(f"{what} must be int microseconds, not {type(value).__name__}")
    return value


def _interval(valid_from: object, valid_to: object, what: str) -> dict[str, JsonValue]:
    start = _micros(valid_from, f"{what}.valid_from")
    out: dict[str, JsonValue] = {"validFrom": start}
    if valid_to is not None:
        end = _micros(valid_to, f"{what}.valid_to")
        if end <= start:
            raise BuilderError(f"{what}: valid_to ({end}) must be after valid_from ({start})")
        out["validTo"] = end
    return out


def _aware_micros(moment: object, what: str) -> int:
    if not isinstance(moment, datetime):
        raise BuilderTypeError(f"{what} must be a datetime, not {type(moment).__name__}")
    # A naive datetime means "local time", which depends on TZ: refusing it keeps output
    # identical on every machine (the determinism bar).
    if moment.utcoffset() is None:
        raise BuilderTypeError(f"{what} is a naive datetime; give it a tzinfo")
    return (moment - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class ValidTime:
    """A node version's valid-time interval, in Unix microseconds; `valid_to` is exclusive."""

    valid_from: int
    valid_to: int | None = None

    def __post_init__(self) -> None:
        self.to_wire()  # a bad interval raises where it was made

    @classmethod
    def from_datetimes(cls, valid_from: datetime, valid_to: datetime | None = None) -> ValidTime:
        """Builds the interval from timezone-aware datetimes (naive ones are refused)."""
        end = None if valid_to is None else _aware_micros(valid_to, "valid_to")
        return cls(_aware_micros(valid_from, "valid_from"), end)

    def to_wire(self) -> dict[str, JsonValue]:
        return _interval(self.valid_from, self.valid_to, "valid_time")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One reading of a temporally ambiguous fact; the first candidate is the best guess."""

    label: str
    valid_from: int
    valid_to: int | None = None

    def __post_init__(self) -> None:
        self.to_wire()  # a bad candidate raises where it was made

    def to_wire(self) -> dict[str, JsonValue]:
        if not isinstance(self.label, str) or not self.label:
            raise BuilderError("candidate label must be a non-empty str")
        return {"label": self.label, **_interval(self.valid_from, self.valid_to, "candidate")}


def clarify_enabled(options: Mapping[str, object] | None) -> bool:
    """Whether a job's options turn on ambiguity detection (`--option clarify=true`)."""
    if not options:
        return False
    value = options.get("clarify")
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value == 1
    return isinstance(value, str) and value.strip().lower() in _CLARIFY_WORDS


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise BuilderTypeError(f"{what} must be str, not {type(value).__name__}")
    if not value:
        raise BuilderError(f"{what} must not be empty")
    return value


# Identifiers already checked: a streaming worker names the same few labels and edge types
# on every one of its hundred thousand nodes and edges.
_KNOWN_IDENTIFIERS: set[str] = set()


def _identifier(value: object, what: str) -> str:
    if type(value) is str and value in _KNOWN_IDENTIFIERS:
        return value
    text = _text(value, what)
    if not _IDENTIFIER.match(text) or len(text) > wire_rules.MAX_IDENTIFIER_BYTES:
        raise BuilderError(
            f"{what} {text[:64]!r} is not an identifier ({wire_rules.IDENTIFIER_PATTERN},"
            f" at most {wire_rules.MAX_IDENTIFIER_BYTES} bytes)"
        )
    if len(_KNOWN_IDENTIFIERS) < 4096:  # bounded: labels are few, a bug could make many
        _KNOWN_IDENTIFIERS.add(text)
    return text


def _fits_wire(text: str, max_bytes: int) -> bool:
    """The core's rule for ids and names: 1..=max_bytes UTF-8 bytes, no control characters."""
    # An ASCII str is as long as its UTF-8 (isascii is a flag read): no copy to measure it.
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return 0 < size <= max_bytes and not _CONTROL.search(text)


def is_node_id(text: str) -> bool:
    """Whether `text` can be a node id on the wire (1..=512 UTF-8 bytes, no control
    characters): a projection that derives ids from its input (a path, an imported name)
    checks before it links, and counts what it cannot link."""
    return _fits_wire(text, wire_rules.MAX_NODE_ID_BYTES)


def is_child_name(text: str) -> bool:
    """Whether `text` can name a child job on the wire (1..=4096 UTF-8 bytes, no control
    characters): a worker that derives names from its input (an archive's member paths)
    checks before it asks, as the core refuses the whole submission otherwise."""
    return _fits_wire(text, wire_rules.MAX_CHILD_NAME_BYTES)


def _node_id(value: object, what: str, *, given: bool) -> str:
    """A node id: 1..=512 UTF-8 bytes without control characters. A worker may refer to
    an id of the core's form (`n<digits>`) but not give one: those are the core's."""
    text = _text(value, what)
    if not is_node_id(text):
        raise BuilderError(
            f"{what} must be 1..={wire_rules.MAX_NODE_ID_BYTES} bytes without control characters"
        )
    if given and _CORE_ID.match(text):
        raise BuilderError(f"{what} {text!r} has the form of a core-assigned id (n<digits>)")
    return text


_KNOWN_SPAN_KINDS: set[str] = set()
"""Span kinds already checked: a worker passes the same few for every span."""


def _span_kind(value: object) -> str:
    if type(value) is str and value in _KNOWN_SPAN_KINDS:
        return value
    kind = _text(value, "span kind")
    if len(kind.encode("utf-8", "surrogatepass")) > wire_rules.MAX_IDENTIFIER_BYTES or (
        _CONTROL.search(kind)
    ):
        raise BuilderError(
            f"span kind must be at most {wire_rules.MAX_IDENTIFIER_BYTES} bytes"
            " without control characters"
        )
    if len(_KNOWN_SPAN_KINDS) < 4096:  # bounded, as _KNOWN_IDENTIFIERS
        _KNOWN_SPAN_KINDS.add(kind)
    return kind


def _labels(labels: object) -> list[str]:
    """A node's labels: identifiers, at least one, at most the per-node cap, no duplicates."""
    if type(labels) is list and len(labels) == 1:  # most nodes: one label checked before
        label = labels[0]
        if type(label) is str and label in _KNOWN_IDENTIFIERS:
            return [label]
    if type(labels) is not list and (isinstance(labels, str) or not isinstance(labels, Sequence)):
        raise BuilderTypeError("labels must be a sequence of str")
    checked = [_identifier(label, "label") for label in labels]
    if not checked:
        raise BuilderError("a node needs at least one label")
    if len(checked) > wire_rules.CAPS["max_labels_per_node"]:
        raise BuilderError(
            f"{len(checked)} labels is over the limit of"
            f" {wire_rules.CAPS['max_labels_per_node']} per node"
        )
    if len(set(checked)) != len(checked):
        raise BuilderError(f"duplicate labels in {checked}")
    return checked


def _object(value: object, what: str) -> dict[str, JsonValue]:
    if type(value) is not dict and not isinstance(value, Mapping):  # dict first: cheaper
        raise BuilderTypeError(f"{what} must be a mapping, not {type(value).__name__}")
    try:
        copied = json_value(value, what)
    except TypeError as err:
        raise BuilderTypeError(str(err)) from err
    except ValueError as err:
        raise BuilderError(str(err)) from err
    assert isinstance(copied, dict)
    return copied


def _confidence(value: object, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise BuilderTypeError(f"{what} must be a number, not {type(value).__name__}")
    if not 0.0 <= value <= 1.0:  # also false for NaN
        raise BuilderError(f"{what} must be within [0, 1], not {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class _EndNames:
    """One end of an edge: its keys on the wire and its arguments, spelled once (an edge
    is added tens of thousands of times per submission)."""

    ref_key: str
    id_key: str
    ref_arg: str
    id_arg: str


_FROM = _EndNames("fromRef", "fromId", "from_ref", "from_id")
_TO = _EndNames("toRef", "toId", "to_ref", "to_id")


class IngestionResultBuilder:
    """Assembles one wire v1 submission (or one partial of a streamed one).

    Text comes in one of two ways, not mixed: appended piece by piece (`add_text`,
    `add_span_text`), or set whole once (`set_canonical_text`) with spans carved out of it
    by `add_span_range`. Offsets are UTF-8 byte offsets into normalized text, global:
    `base_offset` plus the position in this builder's text.
    """

    def __init__(
        self,
        *,
        base_offset: int = 0,
        clarify: bool | None = None,
        options: Mapping[str, object] | None = None,
    ) -> None:
        if not isinstance(base_offset, int) or isinstance(base_offset, bool):
            raise BuilderTypeError("base_offset must be int")
        if base_offset < 0:
            raise BuilderError(f"base_offset must be >= 0, not {base_offset}")
        self._base = base_offset
        self._clarify = clarify_enabled(options) if clarify is None else bool(clarify)
        self._owner = object()
        self._text_mode: Literal["append", "set"] | None = None
        self._pieces: list[str] = []
        self._bytes = bytearray()
        self._spans = Elements()
        self._nodes = Elements()
        self._node_ids: set[str] = set()
        self._ref_sets: dict[int, set[int]] = {}  # node index -> its spanRefs, for long ones
        self._relationships = Elements()
        self._stats: dict[str, JsonValue] = {}
        self._content_hash: str | None = None
        self._child_jobs: list[dict[str, JsonValue]] = []
        self._child_names: set[str] = set()
        self._ambiguities: list[dict[str, JsonValue]] = []

    # -- what a caller may read ------------------------------------------------------------

    @property
    def base_offset(self) -> int:
        """Global byte offset at which this builder's text starts."""
        return self._base

    @property
    def byte_length(self) -> int:
        """UTF-8 length of this builder's (normalized) canonical text."""
        return len(self._bytes)

    @property
    def end_offset(self) -> int:
        """Global offset just past this builder's text: the next partial's `base_offset`."""
        return self._base + len(self._bytes)

    @property
    def canonical_text(self) -> str:
        """This builder's canonical text, normalized (only this partial's slice)."""
        return "".join(self._pieces)

    @property
    def clarify(self) -> bool:
        """Whether add_ambiguity records anything (options.clarify)."""
        return self._clarify

    @property
    def span_count(self) -> int:
        """How many spans were added: the index the next span gets."""
        return len(self._spans)

    @property
    def node_count(self) -> int:
        """How many nodes were added: the index the next node gets."""
        return len(self._nodes)

    # -- text and spans --------------------------------------------------------------------

    def _append(self, text: object) -> tuple[int, int]:
        if not isinstance(text, str):
            raise BuilderTypeError(f"text must be str, not {type(text).__name__}")
        if self._text_mode == "set":
            raise BuilderError("set_canonical_text was used: text cannot also be appended")
        normalized = normalize_canonical(text)
        try:
            encoded = normalized.encode("utf-8")
        except UnicodeEncodeError as err:
            # Lone surrogates (e.g. from errors="surrogateescape") have no UTF-8 form.
            raise BuilderError(f"text is not encodable as UTF-8: {err.reason}") from err
        if self._text_mode is None:
            self._text_mode = "append"
        start = self.end_offset
        self._pieces.append(normalized)
        self._bytes += encoded
        return start, self.end_offset

    def add_text(self, text: str) -> None:
        """Appends (normalized) text that belongs to no span, e.g. a separator."""
        self._append(text)

    def add_span_text(self, text: str, *, kind: str = "text") -> SpanRef:
        """Appends (normalized) text and registers its byte range as a span."""
        kind = _span_kind(kind)
        start, end = self._append(text)
        if start == end:
            raise BuilderError("add_span_text: text is empty after normalization")
        return self._add_span(start, end, kind)

    def set_canonical_text(self, text: str) -> None:
        """Sets this builder's whole canonical text at once (normalized); only once."""
        if self._text_mode is not None:
            raise BuilderError("canonical text was already given to this builder")
        self._append(text)
        self._text_mode = "set"

    def _check_offset(self, offset: object, what: str) -> int:
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise BuilderTypeError(f"{what} must be int, not {type(offset).__name__}")
        value = offset
        local = value - self._base
        if not 0 <= local <= len(self._bytes):
            raise BuilderError(
                f"{what} {value} is outside the text [{self._base}, {self.end_offset}]"
            )
        if local < len(self._bytes) and self._bytes[local] & 0xC0 == 0x80:
            raise BuilderError(f"{what} {value} falls inside a UTF-8 sequence")
        return value

    def add_span_range(self, start: int, end: int, *, kind: str = "text") -> SpanRef:
        """Registers the byte range [start, end) of the canonical text (global offsets)."""
        kind = _span_kind(kind)
        begin = self._check_offset(start, "start")
        finish = self._check_offset(end, "end")
        if begin >= finish:
            raise BuilderError(f"span [{begin}, {finish}) is empty or reversed")
        return self._add_span(begin, finish, kind)

    def _add_span(self, start: int, end: int, kind: str) -> SpanRef:
        return SpanRef(self._spans.append({"start": start, "end": end, "kind": kind}), self._owner)

    def span_ref(self, index: int) -> SpanRef:
        """The ref of the span at `index` (one added by an encoded run, say)."""
        if type(index) is not int or not 0 <= index < len(self._spans):
            raise BuilderError(f"there is no span {index!r} in this builder")
        return SpanRef(index, self._owner)

    # -- nodes and edges -------------------------------------------------------------------

    def _span_index(self, ref: object) -> int:
        if not isinstance(ref, SpanRef):
            raise BuilderTypeError(f"expected a SpanRef, not {type(ref).__name__}")
        if ref.owner is not self._owner or not 0 <= ref.index < len(self._spans):
            raise BuilderError(f"span ref {ref.index} does not belong to this builder")
        return ref.index

    def _node_index(self, ref: object, what: str = "node ref") -> int:
        if not isinstance(ref, NodeRef):
            raise BuilderTypeError(f"{what}: expected a NodeRef, not {type(ref).__name__}")
        if ref.owner is not self._owner or not 0 <= ref.index < len(self._nodes):
            raise BuilderError(f"{what} {ref.index} does not belong to this builder")
        return ref.index

    def add_node(
        self,
        labels: Sequence[str],
        properties: Mapping[str, Any] | None = None,
        *,
        spans: Sequence[SpanRef] = (),
        valid_time: ValidTime | None = None,
        id: str | None = None,
    ) -> NodeRef:
        """Adds a node; `id` makes it a deterministic identity the core upserts on."""
        checked = _labels(labels)
        node: dict[str, Any] = {
            "labels": checked,
            "properties": _object(properties, "properties") if properties else {},
            "spanRefs": [],
        }
        if type(spans) is list and len(spans) < 2:  # most nodes: one span or none
            refs = [self._span_index(span) for span in spans]
        else:
            # dict.fromkeys: first-seen order without duplicates, in linear time.
            refs = list(dict.fromkeys(self._span_index(span) for span in spans))
        if len(refs) > _SPAN_REFS_CAP:
            raise TooManySpanRefs(
                f"a node with {len(refs)} spans is over the limit of {_SPAN_REFS_CAP}"
                " per node ([graph].max_span_refs_per_node)"
            )
        node["spanRefs"] = refs
        if valid_time is not None:
            if not isinstance(valid_time, ValidTime):
                raise BuilderTypeError("valid_time must be a ValidTime")
            node["validTime"] = valid_time.to_wire()
        if id is not None:
            node_id = _node_id(id, "id", given=True)
            if node_id in self._node_ids:
                raise BuilderError(f"id {node_id!r} is already used by a node of this submission")
            self._node_ids.add(node_id)
            node["id"] = node_id
        return NodeRef(self._nodes.append(node), self._owner)

    def node_ref(self, index: int) -> NodeRef:
        """The ref of the node at `index` (one added by an encoded run, say)."""
        if type(index) is not int or not 0 <= index < len(self._nodes):
            raise BuilderError(f"there is no node {index!r} in this builder")
        return NodeRef(index, self._owner)

    def attach_span(self, node_ref: NodeRef, span_ref: SpanRef) -> None:
        """Links a span to a node added earlier (attaching twice changes nothing)."""
        node = self._nodes.plain(self._node_index(node_ref))
        if node is None:
            raise BuilderError(f"node {node_ref.index} was added encoded: its spans are fixed")
        index = self._span_index(span_ref)
        refs: list[int] = node["spanRefs"]
        seen = self._ref_sets.get(node_ref.index)
        if seen is None and len(refs) >= _REF_SET_FROM:
            seen = self._ref_sets[node_ref.index] = set(refs)
        if index in (refs if seen is None else seen):
            return
        if len(refs) >= _SPAN_REFS_CAP:
            raise TooManySpanRefs(
                f"node {node_ref.index} already has {len(refs)} spans, the limit of"
                f" {_SPAN_REFS_CAP} per node ([graph].max_span_refs_per_node)"
            )
        refs.append(index)
        if seen is not None:
            seen.add(index)

    def add_relationship(
        self,
        edge_type: str,
        *,
        from_ref: NodeRef | None = None,
        from_id: str | None = None,
        to_ref: NodeRef | None = None,
        to_id: str | None = None,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        """Adds an edge; each end is a node of this submission (`*_ref`) or any node by id."""
        edge: dict[str, JsonValue] = {"type": _identifier(edge_type, "edge type")}
        self._end(edge, _FROM, from_ref, from_id)
        self._end(edge, _TO, to_ref, to_id)
        edge["properties"] = _object(properties, "properties") if properties else {}
        self._relationships.append(edge)

    def _end(
        self, edge: dict[str, JsonValue], names: _EndNames, ref: NodeRef | None, node_id: str | None
    ) -> None:
        if ref is not None and node_id is None:
            edge[names.ref_key] = self._node_index(ref, names.ref_arg)
        elif ref is None and node_id is not None:
            edge[names.id_key] = _node_id(node_id, names.id_arg, given=False)
        else:
            raise BuilderError(f"give exactly one of {names.ref_arg} and {names.id_arg}")

    # -- pre-encoded runs ------------------------------------------------------------------

    def add_encoded_spans(self, run: EncodedRun) -> range:
        """Appends `run.count` spans given as canonical JSON objects; returns their indices.

        The bulk path of add_span_range for streaming workers (see EncodedRun): the caller
        vouches that every element is exactly what add_span_range would have made (keys
        `end`, `kind`, `start`; offsets on this builder's text), the builder checks only
        the run's shape; the core validates each span when the submission arrives.
        """
        return self._spans.extend(_object_run(run, "spans"))

    def add_encoded_nodes(self, run: EncodedRun) -> range:
        """Appends `run.count` nodes given as canonical JSON objects; returns their indices.

        The bulk path of add_node (see add_encoded_spans): each element must be what
        add_node would have made, its `spanRefs` indices of spans already added (so
        add the run's spans first: `span_count` is where they start). `node_ref` gives
        the ref of one of these nodes, for an edge or an ambiguity; their ids, if any, are
        not checked against the builder's own.
        """
        return self._nodes.extend(_object_run(run, "nodes"))

    def add_encoded_relationships(self, run: EncodedRun) -> range:
        """Appends `run.count` relationships given as canonical JSON objects (the bulk path
        of add_relationship, see add_encoded_spans; `fromRef`/`toRef` must be indices of
        nodes already added); returns their indices."""
        return self._relationships.extend(_object_run(run, "relationships"))

    # -- the rest of the submission --------------------------------------------------------

    def set_stats(self, stats: Mapping[str, Any]) -> None:
        """Sets the submission's free-form `stats` object (e.g. rows, dirty counts)."""
        self._stats = _object(stats, "stats")

    def set_content_hash(self, hex_digest: str) -> None:
        """Sets the source's content hash (lowercase hex) for recrawl dedup."""
        digest = _text(hex_digest, "content hash")
        if not _HEX.match(digest):
            raise BuilderError(f"content hash {digest!r} is not 32-128 lowercase hex digits")
        self._content_hash = digest

    def add_child_job(
        self,
        format: str,
        name: str,
        *,
        options: Mapping[str, Any] | None = None,
        content: bytes | None = None,
    ) -> None:
        """Asks the core to enqueue a child job (an attachment, a crawled page, a file)."""
        child: dict[str, JsonValue] = {"format": _text(format, "format")}
        child_name = _text(name, "name")
        if not is_child_name(child_name):
            raise BuilderError(
                f"child job name must be 1..={wire_rules.MAX_CHILD_NAME_BYTES} bytes without"
                " control characters"
            )
        if child_name in self._child_names:
            raise BuilderError(f"child job {child_name!r} is already in this submission")
        child["name"] = child_name
        if options:
            child["options"] = _object(options, "options")
        if content is not None:
            if not isinstance(content, bytes | bytearray | memoryview):
                raise BuilderTypeError(f"content must be bytes, not {type(content).__name__}")
            child["contentB64"] = base64.b64encode(bytes(content)).decode("ascii")
        self._child_names.add(child_name)
        self._child_jobs.append(child)

    def add_ambiguity(
        self,
        node_ref: NodeRef,
        kind: str,
        candidates: Sequence[Candidate],
        *,
        detector_confidence: float,
        applied_candidate_confidence: float,
        severity_hint: str | None = None,
    ) -> int | None:
        """Records a temporal ambiguity on a node, when options.clarify is on.

        Arguments are checked either way, so a detector's bug shows up in tests that run
        without clarify; with clarify off nothing is recorded and None is returned,
        otherwise the ambiguity's index.
        """
        entry: dict[str, JsonValue] = {
            "nodeRef": self._node_index(node_ref),
            "kind": _text(kind, "ambiguity kind"),
        }
        if not isinstance(candidates, Sequence) or not candidates:
            raise BuilderError("candidates must be a non-empty sequence of Candidate")
        wire: list[JsonValue] = []
        for candidate in candidates:
            if not isinstance(candidate, Candidate):
                raise BuilderTypeError(f"expected a Candidate, not {type(candidate).__name__}")
            wire.append(candidate.to_wire())
        entry["candidates"] = wire
        entry["detectorConfidence"] = _confidence(detector_confidence, "detector_confidence")
        entry["appliedCandidateConfidence"] = _confidence(
            applied_candidate_confidence, "applied_candidate_confidence"
        )
        if severity_hint is not None:
            entry["severityHint"] = _text(severity_hint, "severity_hint")
        if not self._clarify:
            return None
        self._ambiguities.append(entry)
        return len(self._ambiguities) - 1

    # -- output ----------------------------------------------------------------------------

    def build(self, *, partial: bool | None = None) -> dict[str, Any]:
        """Returns the submission as a fresh dict in the wire's shape.

        `partial` sets the streaming flag (a generator handler yields `build(partial=False)`
        to finish the job); left None, the key is absent and the consumer decides. An array
        that got encoded runs is an EncodedArray (canonical_json splices it), else a list.

        A submission over one of the core's per-submission caps (its `[graph]` defaults,
        rules.json) raises TooLarge naming the cap, so the job ends as a permanent
        `too_large` with its counts instead of a `protocol` refusal by the core.
        """
        return self._submission(partial, dict, _copy_element)

    def _submission(
        self,
        partial: bool | None,
        copy_span: Callable[[dict[str, Any]], JsonValue],
        copy_element: Callable[[dict[str, Any]], JsonValue],
    ) -> dict[str, Any]:
        self._check_caps()
        out: dict[str, Any] = {
            "v": WIRE_VERSION,
            "canonicalText": self.canonical_text,
            "spans": self._spans.wire(copy_span),
            "nodes": self._nodes.wire(copy_element),
            "relationships": self._relationships.wire(copy_element),
        }
        if self._stats:
            out["stats"] = copy_element(self._stats)
        if self._content_hash is not None:
            out["contentHash"] = self._content_hash
        if self._child_jobs:
            out["childJobs"] = [copy_element(child) for child in self._child_jobs]
        if self._ambiguities:
            out["ambiguities"] = [copy_element(entry) for entry in self._ambiguities]
        if partial is not None:
            if not isinstance(partial, bool):
                raise BuilderTypeError("partial must be bool")
            out["partial"] = partial
        return out

    def _check_caps(self) -> None:
        counts = (
            ("max_text_bytes", len(self._bytes), "bytes of canonical text"),
            ("max_spans", len(self._spans), "spans"),
            ("max_nodes", len(self._nodes), "nodes"),
            ("max_relationships", len(self._relationships), "relationships"),
            ("max_child_jobs", len(self._child_jobs), "child jobs"),
            ("max_ambiguities", len(self._ambiguities), "ambiguities"),
        )
        for cap, count, what in counts:
            if count > SUBMISSION_CAPS[cap]:
                raise TooLarge(
                    f"the projection has {count} {what}, over the {SUBMISSION_CAPS[cap]} one"
                    f" submission may carry ([graph].{cap})"
                )

    def to_json(self, *, partial: bool | None = None) -> bytes:
        """Returns the submission as canonical UTF-8 JSON, for IngestionResult.result_json."""
        # Encoded at once, so nothing of it escapes: the elements, child jobs, ambiguities
        # and stats go as they are instead of as the fresh copies build() hands out (each
        # was checked and copied when it was added).
        return canonical_json(self._submission(partial, _as_is, _as_is))


def _copy_element(element: Mapping[str, Any]) -> JsonValue:
    return json_value(element, "element")


def _as_is(element: dict[str, Any]) -> JsonValue:
    return element


def _object_run(run: object, what: str) -> EncodedRun:
    if not isinstance(run, EncodedRun):
        raise BuilderTypeError(f"{what}: expected an EncodedRun, not {type(run).__name__}")
    if run.data[:1] != b"{" or run.data[-1:] != b"}":
        raise BuilderError(f"{what}: an encoded run of {what} holds JSON objects only")
    return run
