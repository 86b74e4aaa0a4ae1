"""The docling §15 date rules, on the projected text blocks (shared rules in workers_common).

- Anchor: the document's own date, its metadata creation date (PDF Info, DOCX core
  properties, HTML meta), else the first explicit date in its text; never today. Without
  one, relative phrases are left unresolved.
- `relative_date`: each relative-date phrase ("within 30 days of signing", "next Monday",
  "end of quarter", ...) is a DATE_REFERENCE node (span over the phrase, DOCUMENT
  -MENTIONS_DATE-> it) whose ambiguity lists its readings from the anchor, best first.
- `conflicting_dates` (on the DOCUMENT): two or more different dates introduced as
  effective / commencement / "with effect from" / "as of"; candidates in document order
  (the first statement is the best guess), each labelled with its phrase and section.
- `missing_date` (on the DOCUMENT): an effective-date clause with no date it introduces
  ("effective upon signing", "Effective Date: [  ]"); the candidates are the anchor, or
  a placeholder at the Unix epoch with an applied confidence of 0 when nothing dates it.

The builder records ambiguities only with `options.clarify`; DATE_REFERENCE nodes are
projected either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from workers_common import Candidate, IngestionResultBuilder
from workers_common.dates import find_explicit_dates
from workers_common.temporal import CONTRACT_RULES, RULES, relative_mentions

from .model import SourceMeta
from .projection import Block, Projection

__all__ = ["project_temporal"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INTRODUCER = re.compile(
    r"\b(effective(?:\s+date)?(?:\s+(?:as\s+of|from|on))?|commenc\w*(?:\s+date)?(?:\s+on)?"
    r"|with\s+effect\s+from|as\s+(?:of|from))\b[\s:,]*",
    re.I,
)
_CLAUSE = re.compile(r"\b(effective|commencement)\s+(date|upon|on|as\s+of|from)\b", re.I)
_REACH = 40  # characters between the introducing phrase and its date


@dataclass(frozen=True, slots=True)
class Effective:
    day: date
    phrase: str
    section: str | None


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _anchor(meta: SourceMeta, blocks: list[Block]) -> tuple[datetime, str] | None:
    if meta.created is not None:
        return meta.created, "metadata creation date"
    for block in blocks:
        found = find_explicit_dates(block.text)
        if found:
            day = found[0].day
            return datetime.combine(day, time(0), tzinfo=UTC), f"first date in the text ({day})"
    return None


def _effective_dates(blocks: list[Block]) -> tuple[list[Effective], bool]:
    """Dates introduced as effective, in order; and whether any clause named none."""
    out: list[Effective] = []
    dangling = False
    for block in blocks:
        dates = find_explicit_dates(block.text)
        for match in _INTRODUCER.finditer(block.text):
            near = [d for d in dates if match.end() <= d.start <= match.end() + _REACH]
            if near:
                phrase = block.text[match.start() : near[0].end]
                out.append(Effective(near[0].day, phrase, block.section))
            elif _CLAUSE.match(block.text, match.start()):
                dangling = True
    return out, dangling


def _conflicts(builder: IngestionResultBuilder, state: Projection, found: list[Effective]) -> None:
    days: list[Effective] = []
    for item in found:
        if all(item.day != seen.day for seen in days):
            days.append(item)
    if len(days) < 2:
        return
    candidates = []
    for item in days:
        start = datetime.combine(item.day, time(0), tzinfo=UTC)
        where = f" in {item.section!r}" if item.section else ""
        label = f"{item.day.isoformat()} ({item.phrase!r}{where})"
        candidates.append(Candidate(label, _micros(start), _micros(start + timedelta(days=1))))
    builder.add_ambiguity(
        state.root,
        "conflicting_dates",
        candidates,
        detector_confidence=0.8,
        applied_candidate_confidence=0.55,
    )


def _missing(
    builder: IngestionResultBuilder, state: Projection, anchor: tuple[datetime, str] | None
) -> None:
    if anchor is None:
        candidate = Candidate("unknown: an effective-date clause names no date", 0)
        builder.add_ambiguity(
            state.root,
            "missing_date",
            [candidate],
            detector_confidence=0.9,
            applied_candidate_confidence=0.0,
            severity_hint="high",
        )
        return
    moment, source = anchor
    start = datetime.combine(moment.date(), time(0), tzinfo=moment.tzinfo)
    label = f"{moment.date().isoformat()} ({source}; the effective-date clause names no date)"
    builder.add_ambiguity(
        state.root,
        "missing_date",
        [Candidate(label, _micros(start), _micros(start + timedelta(days=1)))],
        detector_confidence=0.9,
        applied_candidate_confidence=0.4,
    )


def _relative(builder: IngestionResultBuilder, state: Projection, anchor: datetime) -> int:
    count = 0
    for block in state.blocks:
        mentions = relative_mentions(block.text, anchor, rules=(*CONTRACT_RULES, *RULES))
        for mention in mentions:
            start = block.start + len(block.text[: mention.start].encode())
            end = start + len(mention.phrase.encode())
            span = builder.add_span_range(start, end, kind="date_reference")
            node = builder.add_node(
                ["DATE_REFERENCE"],
                {
                    "phrase": mention.phrase,
                    "anchor": anchor.date().isoformat(),
                    "resolved": mention.readings[0].label,
                    "readings": len(mention.readings),
                },
                spans=[span],
            )
            builder.add_relationship("MENTIONS_DATE", from_ref=state.root, to_ref=node)
            builder.add_ambiguity(
                node,
                "relative_date",
                [Candidate(r.label, _micros(r.start), _micros(r.end)) for r in mention.readings],
                detector_confidence=mention.detector_confidence,
                applied_candidate_confidence=mention.applied_confidence,
            )
            count += 1
    return count


def project_temporal(builder: IngestionResultBuilder, state: Projection, meta: SourceMeta) -> int:
    """Adds the temporal nodes and ambiguities; returns the number of DATE_REFERENCEs."""
    anchor = _anchor(meta, state.blocks)
    found, dangling = _effective_dates(state.blocks)
    _conflicts(builder, state, found)
    if dangling and not found:
        _missing(builder, state, anchor)
    if anchor is None:
        return 0
    return _relative(builder, state, anchor[0])
