"""The email §15 ambiguity rules, written into a submission.

- `relative_date`: each relative-date phrase of the body (outside quoted blocks) is a
  DATE_REFERENCE node (deterministic id `<message id>#date-<n>`, a span over the phrase,
  MESSAGE -MENTIONS_DATE-> it) whose ambiguity lists the readings anchored to the Date
  header, best first.
- `missing_date` (on the MESSAGE): no Date header, or one that does not parse. The
  candidates are what else dates the message: the Date text read loosely (ISO 8601,
  day-first and month-first), the .msg submit and delivery times, the Received hops.
  With no evidence at all, one placeholder candidate at the Unix epoch with an applied
  confidence of 0, so a clarifier sees that nothing is known; relative phrases are then
  left unresolved (anchoring them to today would be a guess that changes every day).
- `conflicting_dates` (on the MESSAGE): the body dates itself more than a day away from
  the Date header, or a .msg's submit time or the first Received hop is more than two
  days away (a sender's clock set wrong). The header's reading stays first.

The builder records ambiguities only when the job's options say `clarify`; the
DATE_REFERENCE nodes are projected either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from workers_common import Candidate, IngestionResultBuilder, NodeRef
from workers_common.temporal import relative_mentions, self_dates

from .dates import day_bounds, loose_date_candidates
from .identity import message_node_id_of
from .layout import byte_offsets
from .model import ParsedMessage

__all__ = ["BodyText", "project_temporal"]

_EPOCH_MICROS = 0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CLOCK_SKEW = timedelta(days=2)
_CHECKED_FALLBACKS = frozenset({"PR_CLIENT_SUBMIT_TIME", "Received hop 1"})


@dataclass(frozen=True, slots=True)
class BodyText:
    """The body as written into the canonical text, and its global byte offset there."""

    text: str
    start: int


def _utc_micros(moment: datetime) -> int:
    # Exact integer arithmetic on an aware datetime: no float, no local zone.
    return (moment - _EPOCH) // timedelta(microseconds=1)


def project_temporal(
    builder: IngestionResultBuilder,
    message: NodeRef,
    parsed: ParsedMessage,
    body: BodyText,
    quotes: Sequence[tuple[int, int]],
) -> int:
    """Adds the temporal nodes and ambiguities; returns the number of DATE_REFERENCEs."""
    anchor = parsed.date
    if anchor is None:
        _missing_date(builder, message, parsed)
        return 0
    _conflicts(builder, message, parsed, anchor, body, quotes)
    return _relative(builder, message, parsed, anchor, body, quotes)


def _missing_date(builder: IngestionResultBuilder, message: NodeRef, parsed: ParsedMessage) -> None:
    readings = loose_date_candidates(parsed.date_raw) if parsed.date_raw else []
    readings += [
        (f"{moment.isoformat()} ({label})", moment) for label, moment in parsed.fallback_dates
    ]
    if not readings:
        builder.add_ambiguity(
            message,
            "missing_date",
            [Candidate("unknown: no Date header and no other date evidence", _EPOCH_MICROS)],
            detector_confidence=1.0,
            applied_candidate_confidence=0.0,
            severity_hint="high",
        )
        return
    what = "unparseable Date header" if parsed.date_raw else "no Date header"
    builder.add_ambiguity(
        message,
        "missing_date",
        [Candidate(f"{label}; {what}", _utc_micros(moment)) for label, moment in readings],
        detector_confidence=1.0,
        applied_candidate_confidence=0.5 if len(readings) > 1 else 0.7,
    )


def _conflicts(
    builder: IngestionResultBuilder,
    message: NodeRef,
    parsed: ParsedMessage,
    anchor: datetime,
    body: BodyText,
    quotes: Sequence[tuple[int, int]],
) -> None:
    others: list[Candidate] = []
    days = set()
    for found in self_dates(body.text, anchor, quotes):
        if found.day in days:
            continue  # the same day written twice is one candidate
        days.add(found.day)
        start, end = day_bounds(found.day, anchor)
        label = f"{found.day.isoformat()} (the body dates itself: {found.text!r})"
        others.append(Candidate(label, _utc_micros(start), _utc_micros(end)))
    for label, moment in parsed.fallback_dates:
        if label in _CHECKED_FALLBACKS and abs(moment - anchor) > _CLOCK_SKEW:
            others.append(Candidate(f"{moment.isoformat()} ({label})", _utc_micros(moment)))
    if not others:
        return
    header = Candidate(f"{anchor.isoformat()} ({parsed.date_source})", _utc_micros(anchor))
    builder.add_ambiguity(
        message,
        "conflicting_dates",
        [header, *others],
        detector_confidence=0.8,
        applied_candidate_confidence=0.6,
    )


def _relative(
    builder: IngestionResultBuilder,
    message: NodeRef,
    parsed: ParsedMessage,
    anchor: datetime,
    body: BodyText,
    quotes: Sequence[tuple[int, int]],
) -> int:
    mentions = relative_mentions(body.text, anchor, quotes)
    if not mentions:
        return 0
    own_id = message_node_id_of(parsed)
    offsets = byte_offsets(body.text, [p for m in mentions for p in (m.start, m.end)])
    for index, mention in enumerate(mentions):
        span = builder.add_span_range(
            body.start + offsets[mention.start],
            body.start + offsets[mention.end],
            kind="date_reference",
        )
        best = mention.readings[0]
        node = builder.add_node(
            ["DATE_REFERENCE"],
            {
                "phrase": mention.phrase,
                "anchor": anchor.date().isoformat(),
                "resolved": best.label,
                "readings": len(mention.readings),
            },
            spans=[span],
            id=f"{own_id}#date-{index}",
        )
        builder.add_relationship("MENTIONS_DATE", from_ref=message, to_ref=node)
        builder.add_ambiguity(
            node,
            "relative_date",
            [
                Candidate(reading.label, _utc_micros(reading.start), _utc_micros(reading.end))
                for reading in mention.readings
            ],
            detector_confidence=mention.detector_confidence,
            applied_candidate_confidence=mention.applied_confidence,
        )
    return len(mentions)
