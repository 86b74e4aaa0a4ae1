"""The golden corpus, made by code: PDFs (fpdf2), DOCX (python-docx), HTML, Markdown and
DoclingDocument JSON. Every byte is here for a reason the comment beside it gives, and
the same call gives the same bytes (fixed dates, no clock): samples/ is written from here.
"""

from __future__ import annotations

import base64
import io
import json
import quopri
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from docling_core.types.doc import (
    BoundingBox,
    CoordOrigin,
    DocItemLabel,
    DoclingDocument,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)
from docx import Document as DocxDocument
from fpdf import FPDF
from odfdo import Document as OdfDocument
from odfdo import DrawPage, Frame
from odfdo import Header as OdfHeader
from odfdo import List as OdfList
from odfdo import Paragraph as OdfParagraph
from odfdo import Table as OdfTable
from pptx import Presentation
from pptx.util import Emu

from docling_worker.legacy import libreoffice_convert

FIXED = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)

LOREM = (
    "Operations ran smoothly through the year, with steady growth in every region and "
    "fewer interruptions than in any earlier period. The teams in the north kept their "
    "schedules while the southern sites absorbed two new product lines."
)


def _pdf(title: str = "Annual Operations Report") -> FPDF:
    pdf = FPDF(format="A4", unit="mm")
    pdf.set_auto_page_break(False)
    pdf.set_title(title)
    pdf.set_author("Dana Example")
    pdf.set_creation_date(FIXED)  # fpdf2 writes the clock otherwise: bytes would drift
    pdf.set_margins(20, 20, 20)
    return pdf


def _furniture(pdf: FPDF, page: int, pages: int) -> None:
    # The running header and footer repeat on every page (digits differ): furniture.
    pdf.set_font("Helvetica", size=8)
    pdf.set_xy(20, 8)
    pdf.cell(0, 4, "ACME Corporation - Annual Report 2025")
    pdf.set_xy(95, 287)
    pdf.cell(20, 4, f"Page {page} of {pages}")


def _heading(pdf: FPDF, y: float, text: str, size: int) -> None:
    pdf.set_font("Helvetica", "B", size)
    pdf.set_xy(20, y)
    pdf.cell(0, size * 0.5, text)


def _para(pdf: FPDF, x: float, y: float, width: float, text: str, size: int = 10) -> float:
    pdf.set_font("Helvetica", size=size)
    pdf.set_xy(x, y)
    pdf.multi_cell(width, size * 0.5, text)
    return pdf.get_y()


def report_pdf() -> bytes:
    """Three pages: a title, numbered headings (1, 1.1, 2, 3, 3.1), a hyphenated
    paragraph, a bulleted list, a footnote, a two-column page, a ruled table, a
    numbered list, running header and footer, and effective-date clauses."""
    pdf = _pdf()
    pdf.add_page()
    _furniture(pdf, 1, 3)
    _heading(pdf, 22, "Annual Operations Report", 20)
    _heading(pdf, 40, "1 Introduction", 14)
    # A word broken at the line end ("opera-" / "tions") is de-hyphenated on joining.
    y = _para(
        pdf,
        20,
        50,
        170,
        "This report covers the year 2025 and the company's opera-\n"
        "tions in all regions. It was approved on 15 January 2026 by the board.1",
    )
    _heading(pdf, y + 6, "1.1 Scope", 12)
    pdf.set_font("Helvetica", size=10)
    y += 16
    for item in ("Manufacturing in three plants", "Logistics and warehousing", "Sales offices"):
        pdf.set_xy(25, y)
        pdf.cell(0, 5, f"- {item}")  # the core fonts have no bullet glyph: a dash marks it
        y += 6
    _para(pdf, 20, y + 4, 170, LOREM)
    # The footnote: smaller type at the bottom of the page, starting with its number.
    pdf.set_font("Helvetica", size=7)
    pdf.set_xy(20, 275)
    pdf.cell(0, 4, "1 The board met in Lisbon.")

    pdf.add_page()
    _furniture(pdf, 2, 3)
    _heading(pdf, 22, "2 Results", 14)
    left = " ".join([LOREM, "Costs fell in the second half."] * 2)
    right = " ".join(["Revenue grew in every quarter of the year.", LOREM] * 2)
    _para(pdf, 20, 34, 80, left)
    _para(pdf, 110, 34, 80, right)

    pdf.add_page()
    _furniture(pdf, 3, 3)
    _heading(pdf, 22, "3 Data", 14)
    pdf.set_font("Helvetica", size=10)
    pdf.set_xy(20, 34)
    with pdf.table(col_widths=(60, 40, 40), width=140, align="LEFT", first_row_as_headings=True,
                   text_align="LEFT") as table:  # fmt: skip
        for row in (("Region", "Units", "Revenue"), ("North", "1200", "4.1"),
                    ("South", "950", "3.3"), ("East", "700", "2.6")):  # fmt: skip
            cells = table.row()
            for value in row:
                cells.cell(value)
    _heading(pdf, 80, "3.1 Terms", 12)
    y = 92
    pdf.set_font("Helvetica", size=10)
    for number, item in enumerate(("Prices are fixed for the year.", "Payment within 30 days of "
                                   "signing."), start=1):  # fmt: skip
        pdf.set_xy(25, y)
        pdf.cell(0, 5, f"{number}. {item}")
        y += 6
    _para(
        pdf,
        20,
        y + 4,
        170,
        "This agreement is effective as of 1 March 2026. The price list "
        "applies with effect from 1 April 2026.",
    )
    return bytes(pdf.output())


def simple_pdf() -> bytes:
    """One page, one heading, two paragraphs: the smallest sample."""
    pdf = _pdf("Sample memo")
    pdf.add_page()
    _heading(pdf, 20, "Sample memo", 16)
    y = _para(pdf, 20, 32, 170, "This memo is effective as of 2 March 2026. " + LOREM)
    _para(pdf, 20, y + 4, 170, "Reply within 14 days of signing.")
    return bytes(pdf.output())


def scanned_pdf() -> bytes:
    """A page that is only an image: no text layer."""
    from PIL import Image

    pdf = _pdf("Scan")
    pdf.add_page()
    image = Image.new("L", (200, 200), 255)
    pdf.image(image, x=10, y=10, w=190)
    return bytes(pdf.output())


def encrypted_pdf() -> bytes:
    pdf = _pdf("Secret")
    pdf.set_encryption(owner_password="owner", user_password="user")
    pdf.add_page()
    _para(pdf, 20, 20, 170, "Hidden text.")
    return bytes(pdf.output())


def pages_pdf(pages: int, text: Callable[[int], str] | None = None) -> bytes:
    """`pages` pages of body text (the bench's file and the max_pages test's)."""
    pdf = _pdf("Many pages")
    for page in range(1, pages + 1):
        pdf.add_page()
        _furniture(pdf, page, pages)
        _heading(pdf, 20, f"{page} Chapter {page}", 14)
        _para(pdf, 20, 32, 170, text(page) if text else " ".join([LOREM] * 4))
    return bytes(pdf.output())


def report_docx() -> bytes:
    """Title and author in the core properties, Heading 1/2, paragraphs, a bulleted and a
    numbered list, a table with a header row, and effective-date clauses."""
    doc = DocxDocument()
    props = doc.core_properties
    props.title = "Supply agreement"
    props.author = "Erin Example"
    props.created = datetime(2026, 2, 20, 12, 0)  # zone-less in the file: read as UTC
    props.modified = datetime(2026, 2, 21, 8, 0)
    doc.add_heading("Supply agreement", level=0)
    doc.add_heading("1 Parties", level=1)
    doc.add_paragraph("This agreement is made between Alpha Ltd and Beta GmbH.")
    doc.add_heading("1.1 Term", level=2)
    doc.add_paragraph("The agreement is effective as of 1 March 2026 and runs for one year.")
    doc.add_paragraph("Deliveries start within 30 days of signing.")
    for item in ("Widgets", "Gadgets"):
        doc.add_paragraph(item, style="List Bullet")
    for item in ("Order", "Deliver", "Invoice"):
        doc.add_paragraph(item, style="List Number")
    doc.add_heading("2 Prices", level=1)
    table = doc.add_table(rows=3, cols=2)
    for r, row in enumerate((("Item", "Price"), ("Widget", "10"), ("Gadget", "12"))):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_paragraph("Prices apply with effect from 1 April 2026.")
    out = io.BytesIO()
    doc.save(out)
    return _fixed_zip_times(out.getvalue())


def with_members(package: bytes, changes: dict[str, bytes | None]) -> bytes:
    """The zip `package` with the named members' bytes replaced (None: left out), every
    other member as it was (its name, date and compression kept)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w") as copy:
        for member in source.infolist():
            body = changes[member.filename] if member.filename in changes else source.read(member)
            if body is not None:
                copy.writestr(member, body)
    return out.getvalue()


def with_main_part_type(data: bytes, plain: str, variant: str) -> bytes:
    """A DOCX or PPTX package as its macro-enabled, template or slide-show sibling: the
    same parts, [Content_Types].xml naming the main part `variant` instead of `plain`."""
    types = zipfile.ZipFile(io.BytesIO(data)).read("[Content_Types].xml")
    assert plain.encode() in types
    return with_members(
        data, {"[Content_Types].xml": types.replace(plain.encode(), variant.encode())}
    )


def as_flat_odf(data: bytes) -> bytes:
    """An OpenDocument text or presentation as LibreOffice's flat XML (.fodt, .fodp): every
    part in one XML file under `office:document`."""
    out = io.BytesIO()
    OdfDocument(io.BytesIO(data)).save(out, packaging="xml")
    return out.getvalue()


def as_odf_template(data: bytes) -> bytes:
    """An OpenDocument text or presentation as its template (.ott, .otp): the same members,
    `mimetype` and the manifest's root entry naming `...-template` (what LibreOffice writes
    for File > Templates > Save as Template)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    plain = source.read("mimetype").strip()
    changes: dict[str, bytes | None] = {}
    for name in ("mimetype", "META-INF/manifest.xml"):
        body = source.read(name)
        assert plain in body
        changes[name] = body.replace(plain, plain + b"-template")
    return with_members(data, changes)


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _notes_part(kind: str, notes: list[str]) -> bytes:
    """word/footnotes.xml or word/endnotes.xml as Word writes it: the separator and
    continuation separator first (no text of the author), then one note per text."""
    items = [
        f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>',
        f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r>'
        f"<w:continuationSeparator/></w:r></w:p></w:{kind}>",
    ]
    for number, text in enumerate(notes, start=1):
        items.append(
            f'<w:{kind} w:id="{number}"><w:p><w:r><w:{kind}Ref/></w:r>'
            f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>'
        )
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:{kind}s xmlns:w="{_W}">'
        + "".join(items)
        + f"</w:{kind}s>"
    ).encode()


def notes_docx() -> bytes:
    """A clause with a footnote and an endnote (their text lives in word/footnotes.xml and
    word/endnotes.xml, the body holds only a reference), under a running header and
    footer that are page furniture."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    doc = DocxDocument()
    doc.core_properties.created = FIXED.replace(tzinfo=None)
    doc.core_properties.modified = FIXED.replace(tzinfo=None)
    section = doc.sections[0]
    section.header.paragraphs[0].text = "Confidential draft header"
    section.footer.paragraphs[0].text = "Page footer of the draft"
    doc.add_heading("Liability", level=1)
    clause = doc.add_paragraph("The supplier is liable for direct damage only.")
    for kind in ("footnote", "endnote"):
        run = OxmlElement("w:r")
        reference = OxmlElement(f"w:{kind}Reference")
        reference.set(qn("w:id"), "1")
        run.append(reference)
        clause._p.append(run)
    doc.add_paragraph("Either party may end the agreement in writing.")
    package = doc.part.package
    for kind, reltype, text in (
        ("footnote", RT.FOOTNOTES, "Indirect damage includes lost profit and lost data."),
        ("endnote", RT.ENDNOTES, "See the framework agreement of 2024, clause 9."),
    ):
        part = Part(
            PackURI(f"/word/{kind}s.xml"),
            f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml",
            _notes_part(kind, [text]),
            package,
        )
        doc.part.relate_to(part, reltype)
    out = io.BytesIO()
    doc.save(out)
    return _fixed_zip_times(out.getvalue())


def notes_odt() -> bytes:
    """An OpenDocument text with a footnote inside a paragraph (`text:note`): its citation
    and body sit inline in the XML, and the reader takes the body out of the sentence."""
    from odfdo import Note

    doc = OdfDocument("text")
    _odf_meta(doc, "Liability")
    body = doc.body
    body.clear()
    body.append(OdfHeader(1, "Liability"))
    clause = OdfParagraph("The supplier is liable for direct damage only.")
    note = Note(
        note_class="footnote",
        note_id="ftn1",
        citation="1",
        body="Indirect damage includes lost profit and lost data.",
    )
    clause.insert_note(note, after="only")
    body.append(clause)
    body.append(OdfParagraph("Either party may end the agreement in writing."))
    return _odf_bytes(doc)


def saved_page_mhtml() -> bytes:
    """A page saved as Chrome saves "Webpage, single file": the page's address in
    Snapshot-Content-Location, its HTML quoted-printable in windows-1252 while the page
    itself declares ISO-8859-1 (the charset Chrome writes is the one it decoded with),
    then an image part."""
    html = (
        '<!DOCTYPE html><html><head><meta charset="iso-8859-1"><title>Caf\u00e9 hours</title>'
        "</head><body><h1>Caf\u00e9 hours</h1><p>Open 8-18 from 2 May 2026, coffee \u20ac2.</p>"
        '<ul><li>Espresso</li><li>Cr\u00eape</li></ul><img src="cid:img1"></body></html>'
    ).encode("cp1252")
    quoted = quopri.encodestring(html).decode("ascii").replace("\n", "\r\n")
    parts = [
        "From: <Saved by Blink>",
        "Snapshot-Content-Location: https://example.com/cafe/hours",
        "Subject: =?utf-8?Q?Caf=C3=A9_hours?=",
        "Date: Sat, 2 May 2026 09:00:00 -0000",
        "MIME-Version: 1.0",
        'Content-Type: multipart/related; type="text/html"; boundary="----MultipartBoundary--x"',
        "",
        "",
        "------MultipartBoundary--x",
        "Content-Type: text/html; charset=windows-1252",
        "Content-ID: <frame-1@mhtml.blink>",
        "Content-Transfer-Encoding: quoted-printable",
        "Content-Location: https://example.com/cafe/hours",
        "",
        quoted,
        "------MultipartBoundary--x",
        "Content-Type: image/png",
        "Content-Transfer-Encoding: base64",
        "Content-Location: cid:img1",
        "",
        base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(32)).decode("ascii"),
        "------MultipartBoundary--x--",
        "",
    ]
    return "\r\n".join(parts).encode("ascii")


def saved_by_libreoffice(data: bytes, source: str, target: str) -> bytes:
    """`data` (a DOCX or PPTX) saved as `target` (doc, rtf, ppt) by LibreOffice, as a user
    would with Save As: Word and PowerPoint 97-2003 files that Word and PowerPoint read."""
    return libreoffice_convert(data, source, target, 120)


# What WordPad writes (its font and colour tables, \viewkind4, \uc1, \'xx in code page
# 1252, \uN for what 1252 lacks), with a Word-style table row and a bulleted paragraph.
LETTER_RTF = (
    rb"{\rtf1\ansi\ansicpg1252\deff0\nouicompat\deflang2057{\fonttbl{\f0\fnil\fcharset0 Calibri;}"
    rb"{\f1\fnil\fcharset2 Symbol;}}"
    rb"{\colortbl ;\red0\green0\blue255;}"
    rb"{\*\generator Riched20 10.0.19041}\viewkind4\uc1 "
    rb"\pard\sa200\sl276\slmult1\b\f0\fs28\lang9 Site visit\b0\fs22\par "
    rb"The caf\'e9 on the quay opens on 12 May 2026 \u8212? bring the keys.\par "
    rb"\trowd\trgaph108\cellx3000\cellx6000 Room\cell Keys\cell\row "
    rb"\trowd\trgaph108\cellx3000\cellx6000 Hall\cell 2\cell\row "
    rb"\pard{\pntext\f1\'B7\tab}{\*\pn\pnlvlblt\pnf1\pnindent0{\pntxtb\'B7}}"
    rb"\fi-360\li720\sa200\sl276\slmult1 Check the pumps\par "
    rb"\pard\sa200\sl276\slmult1 Regards, Erin\par}"
)


def deck_pptx() -> bytes:
    """A title slide, a bulleted slide with a nested item and speaker notes, and a slide
    with a table: what a review deck holds."""
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "Quarterly review"
    slide.placeholders[1].text = "Prepared for the board"
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Highlights"
    body = slide.placeholders[1].text_frame
    body.text = "Revenue up 12% since 1 January 2026"
    nested = body.add_paragraph()
    nested.text = "Two new regions"
    nested.level = 1
    slide.notes_slide.notes_text_frame.text = "Mention the Lisbon office."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Figures"
    shape = slide.shapes.add_table(3, 2, Emu(914400), Emu(1828800), Emu(5486400), Emu(1828800))
    for r, row in enumerate((("Region", "Sales"), ("North", "120"), ("South", "95"))):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return _fixed_zip_times(out.getvalue())


def _odf_meta(doc: OdfDocument, title: str) -> None:
    meta = doc.meta
    meta.set_title(title)
    meta.set_creator("Erin Example")
    meta.set_initial_creator("Erin Example")
    meta.set_creation_date(datetime(2026, 2, 20, 12, 0))  # zone-less in the file: read as UTC
    meta.set_modification_date(datetime(2026, 2, 21, 8, 0))
    meta.set_language("en-GB")


def _odf_bytes(doc: OdfDocument) -> bytes:
    out = io.BytesIO()
    doc.save(out)
    # ODF wants its `mimetype` member first and stored: keep each member's compression.
    return _fixed_zip_times(out.getvalue(), keep_compression=True)


def report_odt() -> bytes:
    """The DOCX report's shape as an OpenDocument text (what LibreOffice Writer saves):
    meta.xml title, creator and dates, headings, paragraphs, a list and a table."""
    doc = OdfDocument("text")
    _odf_meta(doc, "Supply agreement")
    body = doc.body
    body.clear()
    body.append(OdfHeader(1, "1 Parties"))
    body.append(OdfParagraph("This agreement is made between Alpha Ltd and Beta GmbH."))
    body.append(OdfHeader(2, "1.1 Term"))
    body.append(
        OdfParagraph("The agreement is effective as of 1 March 2026 and runs for one year.")
    )
    body.append(OdfList(["Widgets", "Gadgets"]))
    body.append(OdfHeader(1, "2 Prices"))
    table = OdfTable("Prices", width=2, height=3)
    table.set_values([["Item", "Price"], ["Widget", "10"], ["Gadget", "12"]])
    body.append(table)
    body.append(OdfParagraph("Prices apply with effect from 1 April 2026."))
    return _odf_bytes(doc)


def deck_odp() -> bytes:
    """Three slides as LibreOffice Impress saves them (its default page names, a title
    placeholder and text boxes): a title slide, a slide of highlights, and a slide with no
    title, which docling names after its page."""
    doc = OdfDocument("presentation")
    _odf_meta(doc, "Quarterly review")
    doc.body.clear()
    slides = (
        ("Quarterly review", ["Prepared for the board"]),
        ("Highlights", ["Revenue up 12% since 1 January 2026", "Two new regions"]),
        (None, ["Questions welcome"]),
    )
    for number, (title, lines) in enumerate(slides, start=1):
        page = DrawPage(f"page{number}", name=f"Slide {number}")
        if title is not None:
            page.append(
                Frame.text_frame(
                    title, size=("20cm", "3cm"), position=("2cm", "1cm"), presentation_class="title"
                )
            )
        for row, line in enumerate(lines):
            position = ("2cm", f"{5 + 3 * row}cm")
            page.append(Frame.text_frame(line, size=("20cm", "2cm"), position=position))
        doc.body.append(page)
    return _odf_bytes(doc)


EPUB_CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" '
    'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)
EPUB_PACKAGE = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:identifier id="id">urn:uuid:7</dc:identifier>
<dc:title>Field guide</dc:title><dc:creator>Erin Example</dc:creator><dc:language>en</dc:language>
<dc:date>2026-01-15</dc:date></metadata>
<manifest><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>
<item id="c2" href="ch2.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
EPUB_CHAPTERS = {
    "OEBPS/ch1.xhtml": "<h1>Chapter one</h1><p>The survey started on 3 March 2026.</p>"
    "<ul><li>Oak</li><li>Ash</li></ul>",
    "OEBPS/ch2.xhtml": "<h1>Chapter two</h1><p>Results follow.</p><table><tr><th>Tree</th>"
    "<th>Count</th></tr><tr><td>Oak</td><td>12</td></tr></table>",
}


def book_epub(chapters: dict[str, str] | None = None) -> bytes:
    """An EPUB 3 of two chapters (headings, a paragraph with a date, a list, a table) with
    its Dublin Core title, creator, language and date."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:

        def put(name: str, text: str, method: int = zipfile.ZIP_DEFLATED) -> None:
            info = zipfile.ZipInfo(name, date_time=(2026, 3, 2, 9, 30, 0))
            info.compress_type = method
            archive.writestr(info, text)

        put("mimetype", "application/epub+zip", zipfile.ZIP_STORED)
        put("META-INF/container.xml", EPUB_CONTAINER)
        put("OEBPS/content.opf", EPUB_PACKAGE)
        for name, body in (EPUB_CHAPTERS if chapters is None else chapters).items():
            put(
                name,
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
                f"<title>{name}</title></head><body>{body}</body></html>",
            )
    return out.getvalue()


PAPER_TEX = r"""\documentclass{article}
\usepackage{amsmath}
\newcommand{\site}{Lisbon}
\title{Field notes on urban trees}
\author{Erin Example}
\date{1 March 2026}
\begin{document}
\maketitle
\begin{abstract}
We count trees in \site{} over one season.
\end{abstract}
\section{Introduction}
The survey started on 3 March 2026 and is effective as of 1 April 2026.
% a comment the reader never sees
\subsection{Method}
\begin{itemize}
\item Oak
\item Ash
\end{itemize}
\begin{table}[h]
\begin{tabular}{ll}
Tree & Count \\
Oak & 12 \\
\end{tabular}
\caption{Trees counted}
\end{table}
The mean is $\bar{x} = 12$ and
\begin{equation}
E = mc^2
\end{equation}
\section{Results}
See Table~1 and \cite{smith2020}.
\input{appendix}
\end{document}
"""
r"""A short paper: preamble metadata, a custom macro, an abstract, nested sections, a list,
a captioned table, math, a citation and an `\input` (which reads nothing: no folder)."""


def _fixed_zip_times(data: bytes, *, keep_compression: bool = False) -> bytes:
    # python-docx, python-pptx and odfdo stamp each member with the clock: rewrite them with
    # a fixed time.
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 3, 2, 9, 30, 0))
            fixed.compress_type = info.compress_type if keep_compression else zipfile.ZIP_DEFLATED
            archive.writestr(fixed, source.read(info.filename))
    return out.getvalue()


REPORT_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<title>Service terms</title>
<meta name="author" content="Frank Example">
<meta name="dcterms.created" content="2026-01-10">
<style>p { color: red }</style><script>var ignored = 1;</script>
</head>
<body>
<h1>Service terms</h1>
<p>These terms are effective as of 5 January 2026 for all customers.</p>
<h2>1. Support</h2>
<p>Support answers within <b>two</b> business days; renewals are due by end of quarter.</p>
<ul><li>Email support</li><li>Phone support<ul><li>Weekdays only</li></ul></li></ul>
<h2>2. Fees</h2>
<table><tr><th>Plan</th><th>Fee</th></tr><tr><td>Basic</td><td>10</td></tr>
<tr><td>Pro</td><td>25</td></tr></table>
<figure><img src="chart.png" alt="Fee chart">
<figcaption>Figure 1: Fees by plan</figcaption></figure>
<ol><li>Choose a plan</li><li>Pay the fee</li></ol>
</body>
</html>
"""

# Another tool's JSON (an API response): not a DoclingDocument, laid out as a document.
# Numbers keep their digits (1.50, a 25-digit id); a scalar written after a nested member
# still belongs to the top level; records become a table, mixed arrays headed elements.
SERVICE_JSON = """{
  "service": "billing",
  "owner": {"team": "payments", "oncall": ["ana@example.com", "bo@example.com"]},
  "version": "2024.11.3",
  "price": 1.50,
  "account": 1234567890123456789012345,
  "enabled": true,
  "retired": null,
  "regions": [
    {"name": "eu-west", "replicas": 3, "primary": true},
    {"name": "us-east", "replicas": 2},
    {"name": "ap-south", "replicas": 1, "primary": false}
  ],
  "steps": ["build", {"deploy": {"canary": 0.05}}, "verify"],
  "notes": "Effective from 1 March 2025."
}
"""


# A project README as people write them: markup in headings and list items (docling keeps
# such an item empty over an inline group that holds its text), a task list, a code block
# indented under an item, a table with markup in its cells.
README_MD = """# The `rivet` **tool**

Rivet joins CSV files. See [the guide](https://example.org/guide) first.

## Installing with `pip`

- **Fast**: a single pass over each file
- Reads [RFC 4180](https://www.rfc-editor.org/rfc/rfc4180) files and `.tsv` too
- Plain item

  ```
  rivet join a.csv b.csv
  ```

1. Run `rivet check`
2. Fix what it reports

Joining on `--key`
------------------

Rows match on the key column.

## Status

- [x] **joins** done
- [ ] *streaming* not yet

| Option | Meaning |
|---|---|
| `--key` | the **join** column |
"""

# A generated test report (jtreg's JTReport pages): list items, definition terms and table
# cells whose end tags are left out, as HTML allows, each item a link and a remark.
OMITTED_END_TAGS_HTML = (
    "<!DOCTYPE HTML>\n<html><head><title>Tests that passed</title></head>\n<body>"
    "<h1>Tests that passed</h1>Tests are grouped by their final status message.\n"
    "<h4>Clean successful</h4>\n<ul>\n"
    + "".join(
        f'<li>\n<a href="/work/{n}.jtr">java/io/{n}.java</a>: checks {n} end to end\n\n'
        for n in ("Write", "Read", "Seek", "Close")
    )
    + "</ul>\n<dl><dt>Started<dd>4 May 2026<dt>Finished<dd>5 May 2026</dl>\n"
    "<table><tr><th>Status<th>Tests<tr><td>passed<td>4<tr><td>failed<td>0</table>\n"
    "</body></html>\n"
)

REPORT_MD = """# Release notes

Version 2 is effective as of 3 February 2026.

## 1 Changes

The importer is faster and uses less memory.
A second line of the same paragraph.

- Faster import
- Smaller files
  - Compressed indexes

1. Upgrade the server
2. Restart the workers

## 2 Compatibility

| Version | Supported |
|---------|-----------|
| 1.x     | until end of year |
| 2.x     | yes |

Upgrade next Monday at the latest.
"""


def _prov(page: int, left: float, top: float, right: float, bottom: float) -> ProvenanceItem:
    # Top-left origin, as docling's layout models write it: the projection turns it into
    # PDF points from the bottom left.
    box = BoundingBox(l=left, t=top, r=right, b=bottom, coord_origin=CoordOrigin.TOPLEFT)
    return ProvenanceItem(page_no=page, bbox=box, charspan=(0, 1))


def docling_minimal() -> DoclingDocument:
    doc = DoclingDocument(name="minimal")
    doc.add_title("Minimal document")
    doc.add_text(DocItemLabel.TEXT, "One paragraph of text.")
    return doc


def docling_sections() -> DoclingDocument:
    doc = DoclingDocument(name="sections")
    doc.add_title("Handbook")
    doc.add_heading("1 Onboarding", level=1)
    doc.add_text(DocItemLabel.TEXT, "Welcome to the team.")
    doc.add_heading("1.1 First day", level=2)
    group = doc.add_list_group()
    for item in ("Badge", "Laptop"):
        doc.add_list_item(item, parent=group, marker="-")
    doc.add_heading("2 Leave", level=1)
    doc.add_text(DocItemLabel.FOOTNOTE, "1 Subject to local law.")
    return doc


def docling_tables() -> DoclingDocument:
    doc = DoclingDocument(name="tables")
    caption = doc.add_text(DocItemLabel.CAPTION, "Table 1: Head count")
    cells = [
        TableCell(text=t, start_row_offset_idx=r, end_row_offset_idx=r + 1,
                  start_col_offset_idx=c, end_col_offset_idx=c + 1, column_header=r == 0)
        for r, row in enumerate((("Team", "People"), ("Core", "4"), ("Web", "3")))
        for c, t in enumerate(row)
    ]  # fmt: skip
    doc.add_table(data=TableData(table_cells=cells, num_rows=3, num_cols=2), caption=caption)
    figure_caption = doc.add_text(DocItemLabel.CAPTION, "Figure 1: Org chart")
    doc.add_picture(caption=figure_caption)
    return doc


def docling_provenance() -> DoclingDocument:
    doc = DoclingDocument(name="scanned-layout")
    doc.add_page(page_no=1, size=Size(width=612, height=792))
    doc.add_page(page_no=2, size=Size(width=612, height=792))
    doc.add_heading("Findings", level=1, prov=_prov(1, 72, 72, 300, 90))
    doc.add_text(
        DocItemLabel.TEXT, "Effective as of 1 June 2026.", prov=_prov(1, 72, 100, 540, 140)
    )
    doc.add_text(DocItemLabel.PAGE_FOOTER, "Page 1", prov=_prov(1, 290, 760, 320, 770))
    doc.add_text(DocItemLabel.TEXT, "Second page text.", prov=_prov(2, 72, 72, 540, 90))
    return doc


def docling_json(doc: DoclingDocument) -> bytes:
    return json.dumps(doc.export_to_dict(), sort_keys=True).encode()


DOCLING_FIXTURES: dict[str, Callable[[], DoclingDocument]] = {
    "minimal": docling_minimal,
    "sections": docling_sections,
    "tables": docling_tables,
    "provenance": docling_provenance,
}


def _lines(pdf: FPDF, y: float, lines: list[tuple[str, str]], size: int = 10) -> float:
    # One text line per cell at a fixed leading (style "" or "B"), as a typesetter writes a
    # paragraph: a bold line inside it is still one of its lines.
    for style, text in lines:
        pdf.set_font("Helvetica", style, size)
        pdf.set_xy(20, y)
        pdf.cell(0, size * 0.5, text)
        y += size * 0.5
    return y


def bold_lines_pdf() -> bytes:
    """Bold lines at body size: a heading standing alone (short, followed by body text),
    a full-width bold line inside a paragraph, and a paragraph that starts with a bold
    line, as a reference manual sets the names of elements: the last two are body."""
    pdf = _pdf("Element reference")
    pdf.add_page()
    _heading(pdf, 20, "Element reference", 16)
    y = _lines(pdf, 34, [("B", "Scope of the elements")])
    regular, bold = "", "B"
    y = _lines(pdf, y + 2, [
        (regular, "Each alias element names another type by which the same data is sometimes"
                  " known,"),
        (regular, "and a reader that meets an alias resolves it before anything else is"
                  " compared. Note"),
        (bold, "that no mime-type element may be defined for an alias; a single element"
               " defines the"),
        (regular, "canonical name and lists all its aliases."),
    ])  # fmt: skip
    y = _lines(pdf, y + 4, [
        (bold, "treematch elements can be nested, meaning that both the outer and the inner"
               " one must"),
        (regular, "be satisfied for a match to be reported."),
    ])  # fmt: skip
    _lines(pdf, y + 4, [("", "A closing paragraph in plain type.")])
    return bytes(pdf.output())


PARTS = (
    ("Part", "Description", "Price"),
    ("Widget", "A small part used in many assemblies across the three plants", "10"),
    ("Gadget", "Large", "12"),
    ("Sprocket", "A toothed wheel that drives the chain of the conveyor belt in the main "
     "warehouse and in both loading bays", "7"),
)  # fmt: skip


def wrapped_table_pdf() -> bytes:
    """Two tables without rules whose description cells wrap onto two and three lines:
    the first with its cells centred on each row (fpdf2's default), the second with them
    at the row's top; a paragraph after each."""
    pdf = _pdf("Parts")
    pdf.add_page()
    _heading(pdf, 20, "Parts list", 16)
    y = 34.0
    for v_align in ("MIDDLE", "TOP"):
        pdf.set_font("Helvetica", size=10)
        pdf.set_xy(20, y)
        with pdf.table(col_widths=(30, 80, 20), width=130, align="LEFT",
                       first_row_as_headings=True, text_align="LEFT", borders_layout="NONE",
                       line_height=5, v_align=v_align) as table:  # fmt: skip
            for row in PARTS:
                cells = table.row()
                for value in row:
                    cells.cell(value)
        y = _para(pdf, 20, pdf.get_y() + 8, 170, f"Prices are per unit ({v_align.lower()}).")
        y += 10
    return bytes(pdf.output())


def _picture(width: int, height: int, shade: int) -> Any:
    from PIL import Image

    image = Image.new("L", (width, height), shade)
    for x in range(0, width, 8):  # a few bars, so the picture is not a flat colour
        for y in range(height // 2, height):
            image.putpixel((x, y), 0)
    return image


def figure_pdf() -> bytes:
    """Two pages: body text, an image with "Figure 1: ..." below it, a second image with
    no caption, then on page 2 an image with "Fig. 2 ..." above it and a tiny image (a
    bullet-sized mark, not a figure)."""
    pdf = _pdf("Figures")
    pdf.add_page()
    _heading(pdf, 20, "Output", 16)
    y = _para(pdf, 20, 32, 170, "Output grew in every region, as the chart below shows.")
    pdf.image(_picture(160, 80, 200), x=20, y=y + 4, w=80, h=40)
    pdf.set_font("Helvetica", size=9)
    pdf.set_xy(20, y + 46)
    pdf.cell(0, 4, "Figure 1: Output by region")
    y = _para(pdf, 20, y + 60, 170, "The second picture has no caption.")
    pdf.image(_picture(80, 80, 120), x=20, y=y + 4, w=40, h=40)
    _para(pdf, 20, y + 50, 170, "Text after the second picture.")
    pdf.add_page()
    pdf.set_font("Helvetica", size=9)
    pdf.set_xy(20, 20)
    pdf.cell(0, 4, "Fig. 2 Costs by quarter")
    pdf.image(_picture(120, 60, 180), x=20, y=26, w=60, h=30)
    pdf.image(_picture(8, 8, 0), x=20, y=64, w=2, h=2)
    _para(pdf, 24, 63, 160, "A line with a small mark before it.")
    return bytes(pdf.output())


def reference_pdf() -> bytes:
    """Numbered headings 1 and 1.1, then unnumbered headings smaller than 1.1 (a manual's
    function entries), each over a paragraph."""
    pdf = _pdf("Reference")
    pdf.add_page()
    y = 20.0
    for text, size in (("1 Reference", 16), ("1.1 Parser functions", 14), ("parse tree", 12),
                       ("parse array", 12), ("2 Index", 16)):  # fmt: skip
        _heading(pdf, y, text, size)
        y = _para(pdf, 20, y + 10, 170, f"The entry under {text} explains what it does.") + 6
    return bytes(pdf.output())


def language_pdf() -> bytes:
    """One page whose catalog names its language (/Lang, as valgrind's manual has)."""
    pdf = _pdf("Language")
    pdf.set_lang("en-US")
    pdf.add_page()
    _para(pdf, 20, 20, 170, "A document that says which language it is in.")
    return bytes(pdf.output())


def tiled_pdf() -> bytes:
    """A page of text over 300 small images (a picture drawn as tiles, or a pattern)."""
    pdf = _pdf("Tiles")
    pdf.add_page()
    tile = _picture(16, 16, 100)
    for i in range(300):
        pdf.image(tile, x=20 + (i % 30) * 5, y=40 + (i // 30) * 5, w=4, h=4)
    _para(pdf, 20, 100, 170, "Text below the tiles.")
    return bytes(pdf.output())


# Scans and images for the OCR tests: made from text by code, so the words a test expects
# are the words drawn.

SCAN_LINES = (
    "Quarterly inspection notes",
    "The north pump station was inspected on 4 May 2026.",
    "All valves opened and closed within their rated times.",
    "Two gaskets showed wear and were replaced the same day.",
)


def text_image(lines: tuple[str, ...] = SCAN_LINES, fmt: str = "PNG", dpi: int = 300) -> bytes:
    """Black text on white, a 34 px heading over 26 px lines (about 8 and 6 points at
    300 dpi, scanned-letter sizes), in Pillow's own font (no system font needed)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (1800, 120 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    y = 60
    for index, line in enumerate(lines):
        font = ImageFont.load_default(size=40 if index == 0 else 30)
        draw.text((80, y), line, font=font, fill=0)
        y += 90 if index == 0 else 60
    out = io.BytesIO()
    image.convert("RGB" if fmt == "JPEG" else "L").save(out, fmt, dpi=(dpi, dpi))
    return out.getvalue()


TIFF_PAGES = (
    ("Harbour crane survey", "Crane four lifted containers without fault."),
    ("Warehouse roof repairs", "Eleven tiles were missing above bay seven."),
    ("Vehicle fleet mileage", "Each van travelled under nine thousand miles."),
)
"""Three pages with distinct words, for a multi-page TIFF."""


def multipage_tiff(
    pages: tuple[tuple[str, ...], ...] = TIFF_PAGES,
    dpis: tuple[tuple[int, int], ...] | None = None,
    compression: str = "tiff_lzw",
) -> bytes:
    """A multi-page TIFF (a scanner's output): one text_image per page, each with its own
    stated resolution (`dpis`, default 300 dpi every page)."""
    from PIL import Image

    frames = [Image.open(io.BytesIO(text_image(lines))) for lines in pages]
    for frame, dpi in zip(frames, dpis or [(300, 300)] * len(frames), strict=True):
        frame.encoderinfo = {"dpi": dpi, "compression": compression}
    out = io.BytesIO()
    first = frames[0].encoderinfo  # save()'s own arguments are the first frame's
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:], **first)
    return out.getvalue()


def scanned_text_pdf(source: bytes | None = None, dpi: int = 150) -> bytes:
    """A born-digital PDF (default: report_pdf) rasterized page by page and wrapped back
    into an image-only PDF: what a scanner would have made of the printout."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(source if source is not None else report_pdf())
    try:
        images = []
        for index in range(len(document)):
            page = document[index]
            images.append(page.render(scale=dpi / 72, grayscale=True).to_pil())
            page.close()
    finally:
        document.close()
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out.getvalue()
