"""The one projection: a DoclingDocument (from any input format) into a document graph.

The canonical text is the document body in reading order: each block (title, heading,
paragraph, list, table, caption, footnote) followed by a blank line; a list's items one
per line ("marker text"); a table's rows one per line with cells separated by tabs. Every
node's span covers exactly its own text. Headings open SECTIONs nested by level; every
element hangs off its parent (DOCUMENT, SECTION, LIST or LIST_ITEM) by a CONTAINS edge
whose `index` is its position there. Items from the page furniture (running headers and
footers) never reach the canonical text. PDF-derived nodes carry `page` and `bbox`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from docling_core.types.doc import (
    CodeItem,
    ContentLayer,
    CoordOrigin,
    DocItem,
    DocItemLabel,
    DoclingDocument,
    GroupItem,
    ListGroup,
    ListItem,
    NodeItem,
    PictureItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
    TitleItem,
)
from docling_core.types.doc.document import InlineGroup

from workers_common import IngestionResultBuilder, InvalidInput, NodeRef, normalize_canonical

from .model import Converted, SourceMeta

__all__ = ["Block", "Projection", "project_document"]

_SEPARATOR = "\n\n"
_WHITESPACE = re.compile(r"\s+")
_NO_SPACE_BEFORE = re.compile(r"^[.,;:!?)\]}%](?!\w)")
"""A piece that starts with punctuation joins the text before it, unless it goes on as a word
(an inline `.tsv`, `.NET`)."""
_TEXT_LABELS = {
    DocItemLabel.FOOTNOTE: "FOOTNOTE",
    DocItemLabel.CAPTION: "CAPTION",
}
_FURNITURE = frozenset({DocItemLabel.PAGE_HEADER, DocItemLabel.PAGE_FOOTER})


@dataclass(frozen=True, slots=True)
class Block:
    """A node's text as written into the canonical text (for the temporal rules)."""

    node: NodeRef
    start: int
    text: str
    section: str | None


@dataclass(slots=True)
class Projection:
    """The state of one projection: builder, open sections and the text blocks seen."""

    builder: IngestionResultBuilder
    document: DoclingDocument
    root: NodeRef
    captions: frozenset[str]
    sections: list[tuple[int, NodeRef, str]] = field(default_factory=list)
    child_counts: dict[int, int] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    title: str | None = None
    """The DOCUMENT node's title (the source's metadata, else its first title item)."""
    extra: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """Node properties by item beyond its provenance (Converted.item_properties)."""
    markdown: bool = False
    """The source is Markdown: an empty heading's children are its text (_heading_text)."""

    def where(self, item: DocItem) -> dict[str, Any]:
        """An item's provenance and its extra properties (an OCR'd item's `ocr`...)."""
        return {**provenance(item, self.document), **self.extra.get(item.self_ref, {})}

    def contain(self, parent: NodeRef, child: NodeRef) -> None:
        index = self.child_counts.get(parent.index, 0)
        self.child_counts[parent.index] = index + 1
        self.builder.add_relationship(
            "CONTAINS", from_ref=parent, to_ref=child, properties={"index": index}
        )

    @property
    def container(self) -> NodeRef:
        return self.sections[-1][1] if self.sections else self.root

    @property
    def section_title(self) -> str | None:
        return self.sections[-1][2] if self.sections else None

    def node(self, label: str, properties: dict[str, Any], spans: Sequence[Any] = ()) -> NodeRef:
        self.counts[label] = self.counts.get(label, 0) + 1
        return self.builder.add_node([label], properties, spans=list(spans))

    def text_block(self, text: str, kind: str) -> tuple[Any, int]:
        """Appends a block of text and its separator; returns (span, start offset)."""
        start = self.builder.end_offset
        span = self.builder.add_span_text(text, kind=kind)
        self.builder.add_text(_SEPARATOR)
        return span, start


def clean(text: str) -> str:
    """One line of text: whitespace runs (tabs and newlines too) as one space."""
    return normalize_canonical(_WHITESPACE.sub(" ", text)).strip()


def _join_inline(parts: Sequence[str]) -> str:
    out = ""
    for part in parts:
        if not part:
            continue
        if out and not _NO_SPACE_BEFORE.match(part) and not out.endswith(("(", "[", "{")):
            out += " "
        out += part
    return out


def provenance(item: DocItem, document: DoclingDocument) -> dict[str, Any]:
    """`page` and `bbox` ([left, bottom, right, top] in PDF points, origin bottom left) of
    an item's first provenance; `page_end` when the item continues on a later page."""
    if not item.prov:
        return {}
    first = item.prov[0]
    bbox = first.bbox
    if bbox.coord_origin != CoordOrigin.BOTTOMLEFT:
        page = document.pages.get(first.page_no)
        if page is None:
            return {"page": first.page_no}
        bbox = bbox.to_bottom_left_origin(page.size.height)
    out: dict[str, Any] = {
        "page": first.page_no,
        "bbox": [round(v, 2) for v in (bbox.l, bbox.b, bbox.r, bbox.t)],
    }
    last = item.prov[-1].page_no
    if last != first.page_no:
        out["page_end"] = last
    return out


_OUTSIDE = frozenset({ContentLayer.FURNITURE, ContentLayer.BACKGROUND, ContentLayer.INVISIBLE})
"""Layers outside the document's text: page furniture (headers, footers, a LaTeX preamble's
commands), backgrounds, and what the source hides (a hidden slide). Speaker notes (NOTES)
stay: they are the author's text."""


def _read(item: NodeItem) -> bool:
    """Whether an item is part of the document's text. Footnotes and endnotes are, though
    docling's DOCX and OpenDocument readers put them in the furniture layer (beside the
    running headers) at the end of the body: their text is the author's, and a contract or
    a paper says much of what it says in them."""
    if item.content_layer not in _OUTSIDE:
        return True
    return item.content_layer is ContentLayer.FURNITURE and getattr(item, "label", None) is (
        DocItemLabel.FOOTNOTE
    )


def _children(node: NodeItem, document: DoclingDocument) -> Iterator[NodeItem]:
    for ref in node.children:
        try:
            child = ref.resolve(document)
        except (IndexError, KeyError, ValueError, AttributeError) as err:
            raise InvalidInput(f"DoclingDocument: dangling reference {ref.cref}") from err
        if isinstance(child, NodeItem) and _read(child):
            yield child


def _caption_refs(document: DoclingDocument) -> frozenset[str]:
    refs: set[str] = set()
    for owner in [*document.pictures, *document.tables]:
        refs.update(ref.cref for ref in owner.captions)
    return frozenset(refs)


def _document_properties(converted: Converted, name: str, source_format: str) -> dict[str, Any]:
    meta = converted.meta
    doc = converted.document
    title = meta.title or _first_title(doc, source_format == "md")
    props: dict[str, Any] = {"name": name, "source_format": source_format}
    if title:
        props["title"] = clean(title)
    page_count = meta.page_count if meta.page_count is not None else (len(doc.pages) or None)
    if page_count is not None:
        props["page_count"] = page_count
    if meta.language:
        props["language"] = meta.language
    if meta.authors:
        props["authors"] = list(meta.authors)
    if meta.created is not None:
        props["created"] = meta.created.isoformat()
    if meta.modified is not None:
        props["modified"] = meta.modified.isoformat()
    props.update(_how_read(meta))
    return props


def _how_read(meta: SourceMeta) -> dict[str, Any]:
    """How the source was decoded or converted before docling read it, when it was."""
    props: dict[str, Any] = {}
    if meta.encoding is not None:
        props["encoding"] = meta.encoding
        props["encoding_source"] = meta.encoding_source
    if meta.replaced_bytes:
        props["replaced_bytes"] = meta.replaced_bytes
    if meta.read_as is not None:
        props["read_as"] = meta.read_as
    if meta.converted_by is not None:
        props["converted_by"] = meta.converted_by
    if meta.url is not None:
        props["url"] = meta.url
    return props


def _first_title(document: DoclingDocument, markdown: bool) -> str | None:
    for text in document.texts:
        if isinstance(text, TitleItem):
            heading, _ = _heading_text(text, document, markdown)
            if heading:
                return heading
    return None


def project_document(
    builder: IngestionResultBuilder, converted: Converted, *, name: str, source_format: str
) -> Projection:
    """Writes the whole document into `builder`; returns the projection's state."""
    doc = converted.document
    props = _document_properties(converted, name, source_format)
    root = builder.add_node(["DOCUMENT"], props)
    state = Projection(
        builder, doc, root, _caption_refs(doc), title=props.get("title"),
        extra=converted.item_properties, markdown=source_format == "md",
    )  # fmt: skip
    state.counts["DOCUMENT"] = 1
    try:
        _walk(state, doc.body)
    except RecursionError as err:
        # Only a DoclingDocument JSON can hold a cycle (an item among its own descendants).
        raise InvalidInput("DoclingDocument: its tree is cyclic or nested too deeply") from err
    return state


def _walk(state: Projection, parent: NodeItem) -> None:
    for child in _children(parent, state.document):
        _item(state, child)


def _item(state: Projection, item: NodeItem) -> None:
    if isinstance(item, ListGroup):
        _list(state, item, state.container)
    elif isinstance(item, InlineGroup):
        _inline(state, item)
    elif isinstance(item, GroupItem):
        _walk(state, item)
    elif isinstance(item, TableItem):
        _table(state, item)
    elif isinstance(item, PictureItem):
        _figure(state, item)
    elif isinstance(item, TitleItem):
        _title(state, item)
    elif isinstance(item, SectionHeaderItem):
        _section(state, item.level, item)
    elif isinstance(item, TextItem):
        _text(state, item)


def _heading_text(
    item: TitleItem | SectionHeaderItem, document: DoclingDocument, markdown: bool
) -> tuple[str, frozenset[str]]:
    """A title's or heading's text, and the children it was read from. A Markdown heading
    with markup in it is an empty heading over its pieces: an inline group
    (`## Using **pip**`), or, for an underlined heading, the pieces themselves (a
    `` `code` meets Serde `` line over `====`). An HTML heading has its text flattened and
    its children are the content under it, so only a leading inline group is read there."""
    text = clean(item.text)
    if text:
        return text, frozenset()
    children = list(_children(item, document))
    if children and isinstance(children[0], InlineGroup):
        return _inline_text_of(children[0], document)[0], frozenset({children[0].self_ref})
    if not markdown:
        return "", frozenset()
    pieces = []
    for child in children:  # inline code is a piece too (`CodeItem`)
        if not _is_piece(child):
            break
        if child.label not in _FURNITURE:
            pieces.append(child)
    if not pieces:
        return "", frozenset()
    parts = [clean(piece.text) for piece in pieces]
    return _join_inline(parts), frozenset(piece.self_ref for piece in pieces)


def _rest(item: NodeItem, document: DoclingDocument, used: frozenset[str]) -> Iterator[NodeItem]:
    """An item's children but those its own text was read from."""
    return (child for child in _children(item, document) if child.self_ref not in used)


def _title(state: Projection, item: TitleItem) -> None:
    text, used = _heading_text(item, state.document, state.markdown)
    if not text:
        return
    if state.builder.span_count == 0 and not state.sections and state.title in (None, text):
        # The document's own title: the DOCUMENT node's span. A first title that is not
        # the document's (an EPUB's first chapter under the book's title) is a section.
        span, _ = state.text_block(text, "title")
        state.builder.attach_span(state.root, span)
        for child in _rest(item, state.document, used):
            _item(state, child)
        return
    _section(state, 1, item)


def _section(state: Projection, level: int, item: TitleItem | SectionHeaderItem) -> None:
    text, used = _heading_text(item, state.document, state.markdown)
    if not text:
        return
    while state.sections and state.sections[-1][0] >= level:
        state.sections.pop()
    parent = state.container
    span, start = state.text_block(text, "heading")
    node = state.node(
        "SECTION",
        {"heading": text, "level": level, **state.where(item)},
        [span],
    )
    state.contain(parent, node)
    state.sections.append((level, node, text))
    state.blocks.append(Block(node, start, text, text))
    for child in _rest(item, state.document, used):
        _item(state, child)


def _text(state: Projection, item: TextItem) -> None:
    if item.label in _FURNITURE:
        return
    if item.label == DocItemLabel.CAPTION and item.self_ref in state.captions:
        return  # written with its figure or table
    text = clean(item.text)
    if text:
        label = _TEXT_LABELS.get(item.label, "PARAGRAPH")
        props: dict[str, Any] = {}
        if label == "PARAGRAPH" and item.label not in (DocItemLabel.TEXT, DocItemLabel.PARAGRAPH):
            props["kind"] = item.label.value
        span, start = state.text_block(text, label.lower())
        node = state.node(label, {**props, **state.where(item)}, [span])
        state.contain(state.container, node)
        state.blocks.append(Block(node, start, text, state.section_title))
    for child in _children(item, state.document):
        _item(state, child)


def _inline_text_of(group: InlineGroup, document: DoclingDocument) -> tuple[str, DocItem | None]:
    """The text of an inline group's pieces (`a <b>b</b> c`), and its first piece."""
    parts: list[str] = []
    first: DocItem | None = None
    for child in _children(group, document):
        if isinstance(child, TextItem) and child.label not in _FURNITURE:
            parts.append(clean(child.text))
            first = first or child
    return _join_inline(parts), first


def _inline(state: Projection, group: InlineGroup) -> None:
    text, first = _inline_text_of(group, state.document)
    if not text:
        return
    span, start = state.text_block(text, "paragraph")
    props = state.where(first) if first is not None else {}
    node = state.node("PARAGRAPH", props, [span])
    state.contain(state.container, node)
    state.blocks.append(Block(node, start, text, state.section_title))


def _list_entries(state: Projection, group: ListGroup) -> list[tuple[ListItem, str]]:
    entries = []
    for child in _children(group, state.document):
        if isinstance(child, ListItem):
            entries.append((child, _list_item_text(state, child)))
    return entries


def _is_piece(child: NodeItem) -> TypeGuard[TextItem]:
    """A text item that may be a piece of a line: not a list item, title or heading, which
    are blocks of their own."""
    return isinstance(child, TextItem) and not isinstance(
        child, (ListItem, TitleItem, SectionHeaderItem)
    )


def _runs_in_item(child: NodeItem) -> bool:
    """Whether a list item's child is part of the item's own line: an inline group or a
    piece of plain text (not a nested list, a code block, a table or a figure)."""
    if isinstance(child, InlineGroup):
        return True
    return _is_piece(child) and not isinstance(child, CodeItem) and child.label not in _FURNITURE


def _list_item_text(state: Projection, item: ListItem) -> str:
    """The item's own text, then what its inline children hold. docling keeps a list item
    with markup in it (`<li><a href=..>link</a> rest`, `- **bold** item`) as an empty item
    over an inline group: its text is all in the group."""
    parts = [clean(item.text)]
    for child in _children(item, state.document):
        if isinstance(child, InlineGroup):
            parts.append(_inline_text_of(child, state.document)[0])
        elif _runs_in_item(child):
            assert isinstance(child, TextItem)
            parts.append(clean(child.text))
    return _join_inline(parts)


def _list_item(
    state: Projection, list_node: NodeRef, position: int, item: ListItem, text: str
) -> NodeRef:
    builder = state.builder
    marker = clean(item.marker) if item.marker else ""
    if not marker:
        # HTML and some DOCX lists carry no marker text: the canonical one.
        marker = f"{position}." if item.enumerated else "-"
    builder.add_text(marker + " ")
    props: dict[str, Any] = {
        "position": position,
        "marker": marker,
        "enumerated": bool(item.enumerated),
        **state.where(item),
    }
    before = builder.end_offset
    spans = [builder.add_span_text(text, kind="list_item")] if text else []
    node = state.node("LIST_ITEM", props, spans)
    state.contain(list_node, node)
    if text:
        state.blocks.append(Block(node, before, text, state.section_title))
    return node


def _list(state: Projection, group: ListGroup, parent: NodeRef) -> None:
    # A code block, table or figure inside a list (a Markdown code block indented under an
    # item is the list's child, not the item's) follows the whole list as a block of its own.
    after: list[NodeItem] = []
    if _list_lines(state, group, parent, 0, after):
        state.builder.add_text(_SEPARATOR)
    for child in after:
        _item(state, child)


_INDENT = "  "
"""What a nested list's lines are indented by, per level."""


def _list_lines(
    state: Projection, group: ListGroup, parent: NodeRef, depth: int, after: list[NodeItem]
) -> bool:
    """Writes a list's lines, each nested list right under the item it belongs to (in
    reading order, indented a level), and its LIST node and span; True when it wrote any."""
    entries = _list_entries(state, group)
    after.extend(c for c in _children(group, state.document) if not isinstance(c, ListItem))
    if not entries:
        return False
    builder = state.builder
    list_node = state.node("LIST", {"items": len(entries)})
    state.contain(parent, list_node)
    for position, (item, text) in enumerate(entries, start=1):
        if depth or position > 1:
            builder.add_text("\n")
        builder.add_text(_INDENT * depth)
        if position == 1:  # the span starts at the first marker, not at its indent
            start = builder.end_offset
        node = _list_item(state, list_node, position, item, text)
        for child in _children(item, state.document):
            if isinstance(child, ListGroup):
                _list_lines(state, child, node, depth + 1, after)
            elif not _runs_in_item(child):
                after.append(child)
    builder.attach_span(list_node, builder.add_span_range(start, builder.end_offset, kind="list"))
    return True


def _table_rows(item: TableItem) -> list[list[str]]:
    grid = item.data.grid
    return [[clean(cell.text) for cell in row] for row in grid]


def _table(state: Projection, item: TableItem) -> None:
    rows = _table_rows(item)
    rows = [row for row in rows if any(row)]
    if not rows:
        return
    header_cells = [c for c in item.data.table_cells if c.column_header]
    has_header = bool(header_cells) and all(c.start_row_offset_idx == 0 for c in header_cells)
    header, body = (rows[0], rows[1:]) if has_header else ([], rows)
    text = "\n".join("\t".join(row) for row in rows)
    span, _ = state.text_block(text, "table")
    props: dict[str, Any] = {
        "header": header,
        "rows": body,
        "num_rows": len(rows),
        "num_cols": max(len(row) for row in rows),
        **state.where(item),
    }
    node = state.node("TABLE", props, [span])
    state.contain(state.container, node)
    _captions(state, item, node)
    for ref in item.footnotes:
        note = ref.resolve(state.document)
        if isinstance(note, TextItem):
            _text(state, note)


def _figure(state: Projection, item: PictureItem) -> None:
    node = state.node("FIGURE", state.where(item))
    state.contain(state.container, node)
    _captions(state, item, node)


def _captions(state: Projection, owner: TableItem | PictureItem, node: NodeRef) -> None:
    for ref in owner.captions:
        caption = ref.resolve(state.document)
        if not isinstance(caption, TextItem):
            continue
        text = clean(caption.text)
        if not text:
            continue
        span, start = state.text_block(text, "caption")
        cap = state.node("CAPTION", state.where(caption), [span])
        state.builder.add_relationship("CAPTION_OF", from_ref=cap, to_ref=node)
        state.blocks.append(Block(cap, start, text, state.section_title))
