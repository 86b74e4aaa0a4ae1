"""A PDF's text layer into a DoclingDocument, by deterministic heuristics (no models).

docling's model-free PDF path yields text cells in the parser's order and nothing else;
this module orders and groups them (see pdf_rows, pdf_blocks, pdf_tables for each rule)
and writes the result as the DoclingDocument the layout models would have produced in
outline: title, section headers with levels, paragraphs, lists, tables, footnotes,
pictures with their captions (pdf_figures), and the running headers and footers in the
furniture layer. Every item carries its page and
bounding box as provenance. Pages without a text layer are OCR'd first (pdf_ocr) and go
through the same layout; so does an image (image_document).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docling_core.types.doc import (
    BoundingBox,
    ContentLayer,
    CoordOrigin,
    DocItem,
    DocItemLabel,
    DoclingDocument,
    ListGroup,
    NodeItem,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)

from workers_common import Unsupported

from .model import Converted, SourceMeta
from .ocr import OCR_FONT, OcrOptions
from .pdf_blocks import Block, classify_blocks, heading_levels, split_blocks
from .pdf_figures import Figure, figures_of, place_figures
from .pdf_ocr import Confidences, ocr_pdf_pages
from .pdf_reader import PageContent, PdfSource
from .pdf_rows import Row, body_size, furniture_keys, is_furniture, reading_rows
from .pdf_tables import Region, ruled_regions, table_grid

__all__ = ["convert_pdf"]


def _prov(block: Block) -> ProvenanceItem:
    left, bottom, right, top = block.bbox()
    box = BoundingBox(l=left, t=top, r=right, b=bottom, coord_origin=CoordOrigin.BOTTOMLEFT)
    return ProvenanceItem(page_no=block.page, bbox=box, charspan=(0, len(block.text)))


def _line_prov(page: int, x0: float, y0: float, x1: float, y1: float, n: int) -> ProvenanceItem:
    box = BoundingBox(l=x0, t=y1, r=x1, b=y0, coord_origin=CoordOrigin.BOTTOMLEFT)
    return ProvenanceItem(page_no=page, bbox=box, charspan=(0, n))


def _layout(
    pages: Sequence[PageContent], doc: DoclingDocument, stats: dict[str, int]
) -> tuple[list[Row], dict[int, Region]]:
    keys = furniture_keys(pages)
    rows: list[Row] = []
    regions: dict[int, Region] = {}
    for page in pages:
        doc.add_page(page_no=page.number, size=Size(width=page.width, height=page.height))
        body = []
        for line in page.lines:
            where = is_furniture(line, page, keys)
            if where is None:
                body.append(line)
                continue
            label = DocItemLabel.PAGE_HEADER if where == "header" else DocItemLabel.PAGE_FOOTER
            stats[f"page_{where}s"] = stats.get(f"page_{where}s", 0) + 1
            prov = _line_prov(page.number, line.x0, line.y0, line.x1, line.y1, len(line.text))
            doc.add_text(label, line.text, prov=prov, content_layer=ContentLayer.FURNITURE)
        page_regions = ruled_regions(page)
        for row in reading_rows(body, page.width):
            for region in page_regions:
                if region.holds(row):
                    regions[len(rows)] = region
            rows.append(row)
    return rows, regions


def _blocks(rows: Sequence[Row], regions: dict[int, Region], body: float) -> list[Block]:
    blocks: list[Block] = []
    start = 0
    index = 0
    while index <= len(rows):
        region = regions.get(index)
        if index == len(rows) or region is not None:
            blocks += split_blocks(rows[start:index], body)
            if region is None:
                break
            end = index
            while end < len(rows) and regions.get(end) is region:
                end += 1
            table = Block("table", list(rows[index:end]))
            table.region = region
            blocks.append(table)
            index = start = end
            continue
        index += 1
    return blocks


def _title_index(blocks: Sequence[Block], body: float) -> int | None:
    headings = [(i, b) for i, b in enumerate(blocks) if b.kind == "heading"]
    if not headings:
        return None
    index, first = max(headings, key=lambda item: (item[1].size, -item[0]))
    others = [b.size for i, b in headings if i != index]
    if first.page == 1 and first.size >= 1.3 * body and all(first.size > s + 0.5 for s in others):
        return index
    return None


class _Writer:
    """Writes blocks and figures into the document, and notes which items were OCR'd."""

    def __init__(self, doc: DoclingDocument, ocr: Confidences) -> None:
        self.doc = doc
        self.ocr = ocr
        self.item_properties: dict[str, dict[str, Any]] = {}

    def _note(self, item: DocItem, block: Block) -> None:
        """`ocr` and `ocr_confidence` (mean word confidence, 0-100) of an OCR'd block."""
        if not self.ocr:
            return
        total = count = 0
        for row in block.rows:
            for line in row.cells:
                words = self.ocr.get((line.page, line.order))
                if words is not None and line.font == OCR_FONT:
                    total += words[0]
                    count += words[1]
        if count:
            self.item_properties[item.self_ref] = {
                "ocr": True,
                "ocr_confidence": round(total / count),
            }

    def _table(self, block: Block) -> DocItem:
        region = block.region if isinstance(block.region, Region) else None
        grid = table_grid(block.rows, region)
        cols = max(len(row) for row in grid)
        cells = [
            TableCell(
                text=text,
                start_row_offset_idx=r,
                end_row_offset_idx=r + 1,
                start_col_offset_idx=c,
                end_col_offset_idx=c + 1,
                column_header=r == 0 and len(grid) > 1,
            )
            for r, row in enumerate(grid)
            for c, text in enumerate(row)
        ]
        data = TableData(table_cells=cells, num_rows=len(grid), num_cols=cols)
        block.text = "\n".join("\t".join(row) for row in grid)
        table: DocItem = self.doc.add_table(data=data, prov=_prov(block))
        return table

    def _figure(self, figure: Figure) -> None:
        box = figure.box
        prov = _line_prov(figure.page, box.x0, box.y0, box.x1, box.y1, 0)
        caption = None
        if figure.caption is not None:
            block = figure.caption
            caption = self.doc.add_text(DocItemLabel.CAPTION, block.text, prov=_prov(block))
            self._note(caption, block)
        self.doc.add_picture(caption=caption, prov=prov)

    def _block(self, block: Block, title: Block | None) -> None:
        """Every kind of block but list items."""
        doc = self.doc
        item: DocItem
        if block is title:
            item = doc.add_title(block.text, prov=_prov(block))
        elif block.kind == "heading":
            level = max(1, min(block.level, 100))
            item = doc.add_heading(block.text, level=level, prov=_prov(block))
        elif block.kind == "table":
            item = self._table(block)
        elif block.kind == "footnote":
            item = doc.add_text(DocItemLabel.FOOTNOTE, block.text, prov=_prov(block))
        elif block.text:
            item = doc.add_text(DocItemLabel.TEXT, block.text, prov=_prov(block))
        else:
            return
        self._note(item, block)

    def write(self, items: Sequence[Block | Figure], title: Block | None) -> None:
        current_list: ListGroup | None = None
        list_enumerated = False
        for block in items:
            if isinstance(block, Figure):
                current_list = None
                self._figure(block)
            elif block.kind != "list_item" or block is title:
                current_list = None
                self._block(block, title)
            else:
                enumerated = block.marker[:1].isalnum() or block.marker.startswith("(")
                if current_list is None or enumerated != list_enumerated:
                    current_list = self.doc.add_list_group()
                    list_enumerated = enumerated
                parent: NodeItem = current_list
                item = self.doc.add_list_item(
                    block.text, enumerated=enumerated, marker=block.marker, parent=parent,
                    prov=_prov(block),
                )  # fmt: skip
                self._note(item, block)


def convert_pdf(source: PdfSource, ocr: OcrOptions) -> Converted:
    """Reads every page of an opened PDF (OCR'ing those `ocr` asks for, pdf_ocr) and lays
    it out into a DoclingDocument."""
    pages = list(source.pages())
    stats: dict[str, int] = {}
    confidences = ocr_pdf_pages(pages, source.data, ocr, stats)
    scanned = any(page.image_area > 0 for page in pages)
    if ocr.mode == "off" and scanned and not any(page.lines for page in pages):
        raise Unsupported("the PDF has no text layer (scanned pages) and ocr=off")
    stats["pages_without_text"] = sum(1 for p in pages if not p.lines)
    return lay_out(pages, source.meta, stats, confidences)


def lay_out(
    pages: Sequence[PageContent], meta: SourceMeta, stats: dict[str, int], ocr: Confidences
) -> Converted:
    """Pages of text lines (a text layer's or OCR's) as a DoclingDocument; the items made
    of OCR'd lines get `ocr` and `ocr_confidence` properties."""
    doc = DoclingDocument(name="document")
    body = body_size(pages)
    rows, row_regions = _layout(pages, doc, stats)
    blocks = _blocks(rows, row_regions, body)
    heights = {p.number: p.height for p in pages}
    classify_blocks(blocks, body, heights)
    heading_levels(blocks)
    title = _title_index(blocks, body)
    figures = []
    for page in pages:
        found = figures_of(page)
        if found is None:
            stats["pages_with_image_tiles"] = stats.get("pages_with_image_tiles", 0) + 1
        else:
            figures += found
    items = place_figures(blocks, figures, body)
    writer = _Writer(doc, ocr)
    writer.write(items, blocks[title] if title is not None else None)
    return Converted(doc, meta, stats, writer.item_properties)
