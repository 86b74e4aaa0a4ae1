"""DOCX, PPTX, ODT, ODP, EPUB, HTML, Markdown and LaTeX into a DoclingDocument
through docling's own backends.

docling's `DocumentConverter` cannot be imported without torch (its audio pipeline pulls
it in), so the worker calls the declarative backends directly, as the converter would for
these formats: an `InputDocument` over the bytes, then its backend's `convert()`. Remote
and local resources are never fetched (docling's defaults), and DOCX and EPUB archives
are read under docling's archive limits (a zip bomb stops at the first member over them).
Its PPTX backend (python-pptx) and OpenDocument backend (odfdo) read the zip without any:
the sizes the archive declares are checked against the same limits first (a zip member
is never inflated past its declared size), so a bomb is too_large before a byte of it is
inflated.
"""

from __future__ import annotations

import logging
import re
import zipfile
import zlib
from datetime import UTC, datetime
from io import BytesIO
from typing import Any

from docling.backend.abstract_backend import DeclarativeDocumentBackend
from docling.backend.epub_backend import EpubDocumentBackend
from docling.backend.html_backend import HTMLDocumentBackend
from docling.backend.latex_backend import LatexDocumentBackend
from docling.backend.md_backend import MarkdownDocumentBackend
from docling.backend.mspowerpoint_backend import MsPowerpointDocumentBackend
from docling.backend.msword_backend import MsWordDocumentBackend
from docling.backend.opendocument_backend import OdpDocumentBackend, OdtDocumentBackend
from docling.backend.utils.archive_limits import (
    ArchiveLimitError,
    ArchiveLimits,
    check_archive_limits,
)
from docling.datamodel.base_models import InputFormat
from docling.datamodel.document import InputDocument
from docling.exceptions import DocumentLoadError
from docling_core.types.doc import DoclingDocument

from workers_common import InvalidInput, TooLarge, Unsupported
from workers_common.formats import ZIP_SIGNATURE, is_flat_opendocument

from .model import Converted, SourceMeta

__all__ = ["convert_declarative"]

_log = logging.getLogger(__name__)

_BACKENDS: dict[str, tuple[InputFormat, type[DeclarativeDocumentBackend], str]] = {
    "docx": (InputFormat.DOCX, MsWordDocumentBackend, "input.docx"),
    "pptx": (InputFormat.PPTX, MsPowerpointDocumentBackend, "input.pptx"),
    "odt": (InputFormat.ODT, OdtDocumentBackend, "input.odt"),
    "odp": (InputFormat.ODP, OdpDocumentBackend, "input.odp"),
    "epub": (InputFormat.EPUB, EpubDocumentBackend, "input.epub"),
    "html": (InputFormat.HTML, HTMLDocumentBackend, "input.html"),
    "md": (InputFormat.MD, MarkdownDocumentBackend, "input.md"),
    # A stream, not a path: \input, \include and \includegraphics resolve against no
    # folder, so they read nothing; no TikZ engine runs (docling's defaults).
    "latex": (InputFormat.LATEX, LatexDocumentBackend, "input.tex"),
}
_ZIPPED = frozenset({"docx", "pptx", "odt", "odp", "epub"})
_CHECKED_ZIPS = frozenset({"pptx", "odt", "odp", "epub"})
"""Packages whose declared sizes the worker checks (docling checks a DOCX's itself)."""
_ZIP_LIMITS = ArchiveLimits(
    max_file_bytes=128 << 20, max_total_bytes=512 << 20, max_member_count=10_000
)
"""docling's defaults for a DOCX (MsWordBackendOptions), which its PPTX and OpenDocument
backends lack."""
_PARSE_ERRORS: dict[str, tuple[type[Exception], ...]] = {
    # The readers follow a package's parts as they go: a relationship id no part answers,
    # an attribute the schema requires that is missing, or XML that is not the schema's,
    # surfaces mid-conversion as one of these.
    "pptx": (KeyError, IndexError, ValueError, AttributeError, SyntaxError),
    "odt": (KeyError, IndexError, ValueError, AttributeError, SyntaxError, TypeError),
    "odp": (KeyError, IndexError, ValueError, AttributeError, SyntaxError, TypeError),
}


def _open(data: bytes, fmt: str) -> tuple[InputDocument, DeclarativeDocumentBackend]:
    input_format, backend_class, filename = _BACKENDS[fmt]
    data = _prepared(data, fmt)
    document = InputDocument(
        path_or_stream=BytesIO(data), format=input_format, backend=backend_class, filename=filename
    )
    rejection = document._rejection
    backend = getattr(document, "_backend", None)
    if isinstance(backend, DeclarativeDocumentBackend) and _no_pages(document, backend):
        # A deck of no slides (a template, a blank presentation) is a valid file: docling
        # refuses it as "fewer pages than the page range", and its backend converts it to
        # an empty document.
        return document, backend
    if not document.valid or not isinstance(backend, DeclarativeDocumentBackend):
        cause = rejection.original_error if rejection is not None else None
        detail = rejection.message if rejection is not None else "the backend refused it"
        if cause is not None:
            detail = f"{detail} ({type(cause).__name__}: {str(cause)[:200]})"
        raise InvalidInput(f"not a readable {fmt.upper()} file: {detail}")
    if not backend.is_valid():
        raise InvalidInput(f"not a readable {fmt.upper()} file")
    if fmt == "docx":
        _drop_xml_comments(backend)
    if fmt in _RASTERIZERS:
        _no_rasterizing(backend, fmt)
    return document, backend


def _prepared(data: bytes, fmt: str) -> bytes:
    """The bytes docling's reader gets: a variant package as its plain type's, a
    styles-only OpenDocument template with an empty body."""
    if fmt in _ODF:
        _tolerate_foreign_namespaces()
        if is_flat_opendocument(data):
            # A flat OpenDocument (.fodt, .fodp: LibreOffice's "Flat XML", one XML file):
            # odfdo, under docling's readers, takes it as it is.
            return data
    if fmt in _ZIPPED and not data.startswith(ZIP_SIGNATURE):
        raise InvalidInput(
            f"not a {fmt.upper()} file: {fmt.upper()} files are zip archives and this is not one"
        )
    if fmt in _CHECKED_ZIPS:
        _check_declared_sizes(data, fmt.upper())
    if fmt in _ODF and _without_content(data):
        # LibreOffice's Default.ott holds mimetype, manifest, meta and styles: a document
        # of no text, as LibreOffice opens it.
        data = _with_empty_body(data, fmt)
    if fmt in _MAIN_PART_TYPES:
        data = _as_plain_package(data, fmt)
    return data


def _without_content(data: bytes) -> bool:
    """An OpenDocument template without content.xml; a document without it is damaged
    (InvalidInput)."""
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "content.xml" in names:
                return False
            mimetype = archive.read("mimetype").strip() if "mimetype" in names else b""
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError):
        return False  # docling's reader says what is wrong
    if mimetype.endswith(b"-template") and "styles.xml" in names:
        return True
    raise InvalidInput("not a readable OpenDocument file: the package has no content.xml")


_EMPTY_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
    ' office:version="1.3"><office:body><office:{kind}/></office:body>'
    "</office:document-content>"
)


def _with_empty_body(data: bytes, fmt: str) -> bytes:
    """A copy of the package with a content.xml of an empty text or presentation."""
    kind = "text" if fmt == "odt" else "presentation"
    out = BytesIO()
    with zipfile.ZipFile(BytesIO(data)) as archive, zipfile.ZipFile(out, "w") as copy:
        for member in archive.infolist():
            copy.writestr(member.filename, archive.read(member))
        copy.writestr("content.xml", _EMPTY_BODY.format(kind=kind))
    return out.getvalue()


_FOREIGN_PREFIX = "foreign"
_W3C_SVG = "http://www.w3.org/2000/svg"


def _tolerate_foreign_namespaces() -> None:
    """odfdo names an element's tag and attributes by the prefixes of the namespaces it
    knows and raises ValueError for any other ("URI 'http://www.w3.org/2000/svg' not
    found"); docling's ODT and ODP readers ask for every style's attributes, so one
    attribute in another namespace failed the whole document. Some of LibreOffice's own
    templates declare `svg:` as W3C's SVG namespace (ODF's is svg-compatible), and other
    writers add namespaces of their own. W3C's SVG reads as `svg`, any other unknown one
    as a placeholder prefix no reader looks for."""
    import odfdo.element as element

    known = getattr(element, "_uri_to_prefix", None)
    if known is None or getattr(known, "_tolerant", False):
        if known is None:  # an odfdo upgrade renamed it
            _log.warning("odfdo.element no longer has _uri_to_prefix")
        return

    def tolerant(uri: str) -> str:
        try:
            return str(known(uri))
        except ValueError:
            return "svg" if uri == _W3C_SVG else _FOREIGN_PREFIX

    setattr(tolerant, "_tolerant", True)  # noqa: B010 (a function's attribute)
    setattr(element, "_uri_to_prefix", tolerant)  # noqa: B010


_RASTERIZERS = {
    "docx": ("docx_to_pdf_converter", "docx_to_pdf_converter_init"),
    "pptx": ("pptx_to_pdf_converter", "pptx_to_pdf_converter_init"),
}
"""The DOCX and PPTX backends' lazily found LibreOffice converters, with their 'looked
already' flags."""


def _no_rasterizing(backend: DeclarativeDocumentBackend, fmt: str) -> None:
    """Tells docling's DOCX or PPTX backend that no LibreOffice is at hand, whether one is
    installed or not. With one, docling renders every DrawingML shape, chart and EMF/WMF
    picture to an image through a LibreOffice run of about a second each (18 s of the
    RTF specification's 30 s), in a session of its own that the supervisor's kill of the
    worker's group does not reach; the projection keeps no pixels (a FIGURE is a node
    without text), so the rendering is only cost and risk."""
    converter, looked = _RASTERIZERS[fmt]
    if not (hasattr(backend, converter) and hasattr(backend, looked)):  # a docling upgrade
        _log.warning("docling's %s backend no longer has %s/%s", fmt, converter, looked)
    setattr(backend, converter, None)
    setattr(backend, looked, True)


_MAIN_PART_TYPES: dict[str, tuple[bytes, tuple[bytes, ...]]] = {
    # OpenDocument templates (.ott, .otp): odfdo, under docling's readers, refuses a
    # `mimetype` of `...-template` ("Expected an OpenDocument 'text'").
    "odt": (
        b"application/vnd.oasis.opendocument.text",
        (b"application/vnd.oasis.opendocument.text-template",),
    ),
    "odp": (
        b"application/vnd.oasis.opendocument.presentation",
        (b"application/vnd.oasis.opendocument.presentation-template",),
    ),
    "docx": (
        b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        (
            b"application/vnd.ms-word.document.macroEnabled.main+xml",  # .docm
            b"application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
            b"application/vnd.ms-word.template.macroEnabledTemplate.main+xml",  # .dotm
        ),
    ),
    "pptx": (
        b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
        (
            b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
            b"application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
            b"application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml",  # .ppsm
            b"application/vnd.ms-powerpoint.template.macroEnabled.main+xml",  # .potm
        ),
    ),
}
"""A package's main part types that python-docx / python-pptx / odfdo refuse though the part
is the plain document's: macro-enabled documents, templates and slide shows (.docm, .dotx,
.dotm; .ppsx, .potx, .ppsm, .potm; python-pptx takes a .pptm as it is; OpenDocument's
.ott and .otp). Their macros live in a part of their own (vbaProject.bin, Basic/), which
is never run or read."""

_TYPE_MEMBERS: dict[str, tuple[str, ...]] = {
    "docx": ("[Content_Types].xml",),
    "pptx": ("[Content_Types].xml",),
    # An OpenDocument package names its type in `mimetype` (the first member, stored) and
    # again as the manifest's root entry.
    "odt": ("mimetype", "META-INF/manifest.xml"),
    "odp": ("mimetype", "META-INF/manifest.xml"),
}
"""The members of each package that name its main type."""
_ODF = frozenset({"odt", "odp"})


def _as_plain_package(data: bytes, fmt: str) -> bytes:
    """`data`, or for a variant package (above) a copy whose type members (_TYPE_MEMBERS)
    name its main part as the plain document's, every other member as it was (in order,
    stored, not compressed again). Its declared sizes are checked first: the copy inflates
    them."""
    plain, variants = _MAIN_PART_TYPES[fmt]
    members = _TYPE_MEMBERS[fmt]
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            types = archive.read(members[0])
            # An ODF `mimetype` is the type alone; OPC's [Content_Types].xml lists it.
            found = [v for v in variants if (v == types.strip() if fmt in _ODF else v in types)]
            if not found:
                return data
            _check_declared_sizes(data, fmt.upper())
            out = BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
                for member in archive.infolist():
                    body = archive.read(member)
                    if member.filename in members:
                        body = body.replace(found[0], plain)
                    copy.writestr(member.filename, body)
    except KeyError:  # no type member: docling's reader says what is wrong
        return data
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as err:
        raise InvalidInput(f"not a readable {fmt.upper()} file: {str(err)[:200]}") from err
    return out.getvalue()


def _drop_xml_comments(backend: DeclarativeDocumentBackend) -> None:
    """Removes XML comments and processing instructions from every XML part of an opened
    DOCX, keeping the text that follows each. docling's Word reader takes every node of a
    part for an element and fails on them (lxml's `QName` of a comment: ValueError), which
    failed the job `transient`; Word ignores them (python-docx's tbl-props.docx has two)."""
    docx = getattr(backend, "docx_obj", None)
    if docx is None:
        return
    for part in docx.part.package.iter_parts():
        root = getattr(part, "element", None)  # the XML parts' lxml trees
        if root is None:
            continue
        # lxml gives an element a str tag, and a comment or instruction its factory.
        for node in [n for n in root.iter() if not isinstance(n.tag, str)]:
            parent = node.getparent()
            if parent is None:
                continue
            if node.tail:
                before = node.getprevious()
                if before is not None:
                    before.tail = (before.tail or "") + node.tail
                else:
                    parent.text = (parent.text or "") + node.tail
            parent.remove(node)


def _no_pages(document: InputDocument, backend: DeclarativeDocumentBackend) -> bool:
    """Whether docling refused an otherwise readable paginated document only for having
    no pages."""
    return not document.valid and document.page_count == 0 and backend.is_valid()


def _check_declared_sizes(data: bytes, what: str) -> None:
    """A package's members under the limits docling keeps for DOCX, by their declared sizes."""
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            check_archive_limits(archive, _ZIP_LIMITS)
    except ArchiveLimitError as err:
        raise TooLarge(f"{what} archive: {str(err)[:300]}") from err
    except NotImplementedError as err:  # a zip feature the standard library lacks
        raise Unsupported(f"{what} archive: {str(err)[:200]}") from err
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
        raise InvalidInput(f"not a readable {what} file: {str(err)[:200]}") from err


def convert_declarative(data: bytes, fmt: str) -> Converted:
    """Converts DOCX, PPTX, ODT, ODP, EPUB, HTML, Markdown or LaTeX bytes; typed
    failures for what cannot be read."""
    damaged = _PARSE_ERRORS.get(fmt, ())
    try:
        document, backend = _open(data, fmt)
        converted = backend.convert()
    except RecursionError as err:
        raise Unsupported(f"{fmt.upper()} nested too deeply to convert") from err
    except ArchiveLimitError as err:  # EPUB: docling's own limits, met while reading
        raise TooLarge(f"{fmt.upper()} archive: {str(err)[:300]}") from err
    except DocumentLoadError as err:
        raise InvalidInput(f"{fmt.upper()}: {str(err)[:300]}") from err
    except damaged as err:
        raise InvalidInput(
            f"{fmt.upper()}: a damaged part: {type(err).__name__}: {str(err)[:200]}"
        ) from err
    meta = SourceMeta()
    if fmt == "docx":
        meta = _docx_meta(backend)
    elif fmt == "html":
        meta = _html_meta(backend)
    elif fmt in ("odt", "odp"):
        meta = _odf_meta(backend)
    elif fmt == "epub":
        meta = _epub_meta(backend)
    elif fmt == "latex":
        meta = _latex_meta(converted)
    del document
    return Converted(converted, meta)


def _aware(moment: Any) -> datetime | None:
    if not isinstance(moment, datetime):
        return None
    # python-docx reads W3CDTF; a value without a zone is taken as UTC (never local time).
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _docx_meta(backend: DeclarativeDocumentBackend) -> SourceMeta:
    docx = getattr(backend, "docx_obj", None)
    if docx is None:
        return SourceMeta()
    props = docx.core_properties
    authors = tuple(a for a in [clean_meta(props.author)] if a)
    return SourceMeta(
        title=clean_meta(props.title),
        authors=authors,
        created=_aware(props.created),
        modified=_aware(props.modified),
        language=clean_meta(props.language),
    )


def _odf_meta(backend: DeclarativeDocumentBackend) -> SourceMeta:
    """meta.xml: title, creator (else the initial one), creation and last-save dates; a
    presentation's slide count as its page count (as for a PPTX)."""
    odf = getattr(backend, "odf_obj", None)
    if odf is None:
        return SourceMeta()
    meta = odf.meta
    author = clean_meta(meta.get_creator()) or clean_meta(meta.get_initial_creator())
    slides = len(odf.body.get_draw_pages()) if odf.get_type() == "presentation" else None
    return SourceMeta(
        title=clean_meta(meta.get_title()),
        authors=(author,) if author else (),
        created=_aware(meta.get_creation_date()),
        modified=_aware(meta.get_modification_date()),
        language=clean_meta(meta.get_language()),
        page_count=slides,
    )


def _epub_meta(backend: DeclarativeDocumentBackend) -> SourceMeta:
    """The package's Dublin Core: title, creator, language and date (publication)."""
    metadata = getattr(backend, "metadata", None)
    if not isinstance(metadata, dict):
        return SourceMeta()
    author = clean_meta(metadata.get("creator"))
    date = metadata.get("date")
    return SourceMeta(
        title=clean_meta(metadata.get("title")),
        authors=(author,) if author else (),
        created=_html_date(date if isinstance(date, str) else None),
        language=clean_meta(metadata.get("language")),
    )


def _latex_meta(document: DoclingDocument) -> SourceMeta:
    """The preamble's `\\author` names (docling keeps them in an "authors" group; the title
    is the document's first title item)."""
    authors: list[str] = []
    for group in document.groups:
        if group.name != "authors":
            continue
        for ref in group.children:
            item = ref.resolve(document)
            name = clean_meta(getattr(item, "text", None))
            if name and name not in authors:
                authors.append(name)
    return SourceMeta(authors=tuple(authors))


def clean_meta(value: object) -> str | None:
    """A metadata string, trimmed; None when empty or not a string."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text or None


_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _html_date(value: str | None) -> datetime | None:
    if not value or not _ISO_DAY.match(value):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _html_meta(backend: DeclarativeDocumentBackend) -> SourceMeta:
    soup = getattr(backend, "soup", None)
    if soup is None:
        return SourceMeta()
    metas: dict[str, str] = {}
    for tag in soup.find_all("meta", limit=200):
        key = str(tag.get("name") or tag.get("property") or "").strip().lower()
        content = clean_meta(tag.get("content"))
        if key and content and key not in metas:
            metas[key] = content
    html = soup.find("html")
    language = clean_meta(html.get("lang")) if html is not None else None
    title = clean_meta(soup.title.get_text()) if soup.title is not None else None
    author = metas.get("author") or metas.get("dc.creator")
    created = metas.get("dcterms.created") or metas.get("date") or metas.get("dc.date")
    return SourceMeta(
        title=title,
        authors=(author,) if author else (),
        created=_html_date(created),
        modified=_html_date(metas.get("dcterms.modified")),
        language=language,
    )
