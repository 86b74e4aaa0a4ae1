"""A fetched page as a submission: PAGE, SECTION by headings, PARAGRAPH, LIST_ITEM, TABLE,
URL_REF per distinct link target, LINKS_TO from the section that holds each anchor.

Canonical text is the main content only: blocks in reading order, separated by a blank
line; a heading's text opens its section. `contentHash` is blake3 of that text, so a
recrawl whose ads, navigation or timestamps changed but whose content did not is
`unchanged`. Nothing in a submission comes from the clock, the HTTP `Date`, or the
address a host resolved to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import blake3

from workers_common import IngestionResultBuilder, NodeRef, SpanRef
from workers_common.normalize import normalize_canonical

from .crawl import Child
from .model import Block, Extracted

__all__ = ["PageFacts", "project_page", "project_routed"]

_SEPARATOR = "\n\n"
_BLOCK_LABELS = {"paragraph": "PARAGRAPH", "list_item": "LIST_ITEM", "table": "TABLE"}


@dataclass(frozen=True, slots=True)
class PageFacts:
    """How the page was fetched: the PAGE's properties that do not come from the HTML."""

    url: str
    final_url: str
    status: int
    content_type: str
    fetched_via: str
    redirects: tuple[str, ...] = ()
    encoding: str = ""
    render_reason: str = ""
    blocked_requests: int = 0
    skipped_requests: int = 0
    loaded: bool = True


def _page_properties(facts: PageFacts, extracted: Extracted | None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "url": facts.url,
        "final_url": facts.final_url,
        "status": facts.status,
        "content_type": facts.content_type,
        "fetched_via": facts.fetched_via,
    }
    if facts.redirects:
        props["redirects"] = list(facts.redirects)
    if facts.encoding:
        props["encoding"] = facts.encoding
    if facts.render_reason and facts.fetched_via == "static":
        props["render_reason"] = facts.render_reason
    if facts.fetched_via == "chromium":
        props["render_reason"] = facts.render_reason
        props["blocked_requests"] = facts.blocked_requests
        props["skipped_requests"] = facts.skipped_requests
        props["load_complete"] = facts.loaded
    if extracted is not None:
        meta = extracted.meta
        stated = {
            "title": meta.title,
            "lang": meta.lang,
            "canonical_url": meta.canonical_url,
            "description": meta.description,
            "published": meta.published,
            "modified": meta.modified,
        }
        props.update({k: v for k, v in stated.items() if v})
        props["extractor"] = extracted.extractor
    return props


class _Sections:
    """The open headings, innermost last, each with its node and where its text began."""

    def __init__(self, builder: IngestionResultBuilder, page: NodeRef) -> None:
        self.builder = builder
        self.page = page
        self.open: list[tuple[int, NodeRef, int]] = []  # (level, node, start offset)
        self.last_end = 0

    def holder(self) -> NodeRef:
        return self.open[-1][1] if self.open else self.page

    def close_to(self, level: int) -> None:
        while self.open and self.open[-1][0] >= level:
            _, node, start = self.open.pop()
            if self.last_end > start:
                self.builder.attach_span(
                    node, self.builder.add_span_range(start, self.last_end, kind="section")
                )

    def start(self, block: Block, start: int) -> NodeRef:
        self.close_to(block.level)
        parent = self.holder()
        node = self.builder.add_node(["SECTION"], {"title": block.text, "level": block.level})
        self.builder.add_relationship("CONTAINS", from_ref=parent, to_ref=node)
        self.open.append((block.level, node, start))
        return node


class _Links:
    """URL_REF nodes, one per distinct target in this submission, in first-seen order."""

    def __init__(self, builder: IngestionResultBuilder) -> None:
        self.builder = builder
        self.refs: dict[str, NodeRef] = {}

    def link(
        self, holder: NodeRef, url: str, anchor: SpanRef, text: str, at: tuple[int, int]
    ) -> None:
        ref = self.refs.get(url)
        if ref is None:
            ref = self.builder.add_node(["URL_REF"], {"url": url})
            self.refs[url] = ref
        self.builder.attach_span(ref, anchor)
        props = {"anchor_text": text, "anchor_start": at[0], "anchor_end": at[1]}
        self.builder.add_relationship("LINKS_TO", from_ref=holder, to_ref=ref, properties=props)


def _byte_len(text: str) -> int:
    return len(normalize_canonical(text).encode("utf-8"))


def _add_block(
    builder: IngestionResultBuilder,
    block: Block,
    sections: _Sections,
    links: _Links,
) -> None:
    if builder.byte_length:
        builder.add_text(_SEPARATOR)
    start = builder.end_offset
    if block.kind == "heading":
        holder = sections.start(block, start)
        span = builder.add_span_text(block.text, kind="heading")
        builder.attach_span(holder, span)
    else:
        holder = sections.holder()
        span = builder.add_span_text(block.text, kind=block.kind)
        props: dict[str, Any] = {}
        if block.kind == "table":
            props = {"rows": block.rows, "columns": block.columns}
        node = builder.add_node([_BLOCK_LABELS[block.kind]], props, spans=[span])
        builder.add_relationship("CONTAINS", from_ref=holder, to_ref=node)
    sections.last_end = builder.end_offset
    for link in block.links:
        begin = start + _byte_len(block.text[: link.start])
        end = begin + _byte_len(block.text[link.start : link.end])
        end = min(end, sections.last_end)
        if end <= begin:
            continue
        anchor = builder.add_span_range(begin, end, kind="anchor")
        links.link(holder, link.url, anchor, block.text[link.start : link.end], (begin, end))


def _add_children(builder: IngestionResultBuilder, children: Sequence[Child]) -> None:
    for child in children:
        builder.add_child_job("web", child.name, options=child.options)


def project_page(
    facts: PageFacts,
    extracted: Extracted,
    children: Sequence[Child],
) -> bytes:
    """The submission of an HTML page."""
    builder = IngestionResultBuilder()
    page = builder.add_node(["PAGE"], _page_properties(facts, extracted))
    sections = _Sections(builder, page)
    links = _Links(builder)
    for block in extracted.blocks:
        _add_block(builder, block, sections, links)
    sections.close_to(0)
    text = builder.canonical_text
    if text:
        builder.attach_span(page, builder.add_span_range(0, builder.end_offset, kind="page"))
    builder.set_content_hash(blake3.blake3(text.encode("utf-8")).hexdigest())
    _add_children(builder, children)
    builder.set_stats(_stats(extracted, len(links.refs), len(children)))
    return builder.to_json()


def _stats(extracted: Extracted, url_refs: int, children: int) -> Mapping[str, Any]:
    counts: dict[str, int] = {}
    for block in extracted.blocks:
        counts[block.kind] = counts.get(block.kind, 0) + 1
    return {"blocks": counts, "url_refs": url_refs, "crawl_children": children}


def project_routed(facts: PageFacts, body: bytes, child_format: str) -> bytes:
    """The submission of a response that is not HTML: a PAGE pointing at the child job that
    projects the bytes (named `attachment:<blake3>`, as email's attachments: the same bytes
    from a link and from a message are one source document)."""
    digest = blake3.blake3(body).hexdigest()
    name = f"attachment:{digest}"
    builder = IngestionResultBuilder()
    props = _page_properties(facts, None)
    props.update({"child_job": name, "child_format": child_format, "bytes": len(body)})
    builder.add_node(["PAGE"], props)
    builder.add_child_job(child_format, name, content=body)
    builder.set_content_hash(digest)
    return builder.to_json()
