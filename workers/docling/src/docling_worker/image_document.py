"""An image (png, jpg, tif, bmp, webp, gif, pbm/pgm/ppm) as a document read by OCR: one
page, or one page per frame of a multi-page TIFF (a scanner's or a fax's output).

Pillow (a dependency of docling-core and docling-parse, so always beside this worker)
reads the headers first: a file that is not one of these images, or is broken, is
invalid_input. A TIFF's frames are pages, in file order, numbered from 1: their
directories are walked one by one (not with `n_frames`, which walks the whole chain:
80 s for 100,000 frames here) and the walk stops one past the page cap, the smaller of
`max_ocr_pages` and `max_pages`, so a file of 100,000 frames fails too_large after
reading 201 directories, as a PDF with more pages to OCR than `max_ocr_pages` does.
Every frame's size is checked against `max_image_pixels` on that walk: one frame over
it makes the job too_large before any frame is decoded. Then every frame is decoded
once (pixels dropped), so a frame that cannot be read or decoded makes the job
invalid_input naming its page before any OCR, as a PDF page that cannot be decoded
does: a document with a page silently missing would look complete. Other formats are
one page: an animated PNG's or WebP's frames are an animation, not pages, and only the
first is read, and so is a GIF's.

Each page is then decoded again, turned upright by its EXIF orientation, made grey and
handed to tesseract (ocr.py) as PGM, one page after the other, as the PDF path OCRs its
scanned pages (pdf_ocr; the PDF helper process shares text-layer decoding, not OCR):
one decoded page is held at a time. A page's size in points comes from its own stated
resolution when it is plausible (50 to 2,400 dpi), else one pixel is one point. A
resolution that differs by axis (a fax in normal mode, 204 x 98 dpi) gives the page its
true shape, and the frame is resampled to square pixels at the finer of the two before
OCR (tesseract reads squashed text badly), within `max_image_pixels`. The pages' lines
then go through the PDF layout path (pdf_document.lay_out), so an image's nodes look
like a scanned PDF's; stats as for a PDF: `pages_ocr`, `pages_ocr_skipped` (over
`ocr_page_timeout`), `pages_without_text`.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from workers_common import InvalidInput, TooLarge, Unsupported, formats

from .model import Converted, SourceMeta
from .ocr import OcrOptions, check_language, ocr_options, read_page, tesseract
from .pdf_document import lay_out
from .pdf_ocr import NO_TESSERACT, Confidences, pgm
from .pdf_page import PageContent

__all__ = ["SIGNATURES", "convert_image"]

SIGNATURES = formats.IMAGE_SIGNATURES
"""Leading bytes of the accepted images (WebP is RIFF....WEBP, checked apart)."""
_FORMATS = frozenset({"PNG", "JPEG", "TIFF", "BMP", "WEBP", "GIF", "PPM"})
"""Pillow's names for them (its PPM reader reads PBM and PGM too)."""
_SIDEWAYS = frozenset({5, 6, 7, 8})
"""EXIF orientations that turn the image a quarter: its x and y resolutions swap."""

# The pixel cap is checked here (max_image_pixels) before decoding; Pillow's own bomb
# guard would warn, then refuse, at a fixed count of its own.
Image.MAX_IMAGE_PIXELS = None


@dataclass(frozen=True, slots=True)
class _Frame:
    """One page's header facts: its size in pixels and stated (x, y) dpi, if plausible."""

    width: int
    height: int
    dpi: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class _Page:
    """One decoded page, ready for tesseract."""

    image: bytes  # PGM
    width: float  # points
    height: float  # points
    scale: tuple[float, float]  # points per pixel of `image`, (x, y)
    dpi: int | None  # what tesseract is told


def _is_image(data: bytes) -> bool:
    return data.startswith(SIGNATURES) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def _plausible(value: object) -> int | None:
    try:
        dpi = round(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return dpi if 50 <= dpi <= 2400 else None


def _dpi(image: Image.Image) -> tuple[int, int] | None:
    """The current frame's (x, y) dpi; y falls back to x when only x is plausible."""
    value = image.info.get("dpi")
    if not isinstance(value, tuple) or not value:
        return None
    x = _plausible(value[0])
    if x is None:
        return None
    y = _plausible(value[1]) if len(value) > 1 else None
    return x, y if y is not None else x


def _frame(image: Image.Image, page: int, options: OcrOptions) -> _Frame:
    width, height = image.size
    if width * height > options.max_image_pixels:
        where = f"page {page} of the image" if page > 1 else "image"
        raise TooLarge(
            f"{where} of {width}x{height} pixels is over "
            f"max_image_pixels={options.max_image_pixels}"
        )
    return _Frame(width, height, _dpi(image))


def _select(image: Image.Image, index: int) -> None:
    """Seeks to frame `index`. A TIFF frame without a resolution of its own would keep
    the previous frame's `dpi` in `info` (Pillow sets it only when the tags are there)."""
    if image.tell() != index:
        image.info.pop("dpi", None)
        image.seek(index)


def _open(data: bytes) -> Image.Image:
    """The image, its first frame's header read; nothing decoded."""
    if not _is_image(data):
        raise InvalidInput(
            "not a PNG, JPEG, TIFF, BMP, WebP, GIF or Netpbm image (no known signature)"
        )
    try:
        image = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as err:
        raise InvalidInput(f"the image cannot be read: {err}") from err
    if image.format not in _FORMATS:
        raise InvalidInput(f"not an image format read here: {image.format}")
    return image


def _frames(image: Image.Image, options: OcrOptions, max_pages: int) -> list[_Frame]:
    """The pages' headers: every frame of a TIFF, walked one directory at a time and no
    further than one past the page cap; the first frame of anything else."""
    frames = [_frame(image, 1, options)]
    if image.format != "TIFF":
        return frames
    cap, option = (options.max_pages, "max_ocr_pages")
    if max_pages < cap:
        cap, option = max_pages, "max_pages"
    while True:
        index = len(frames)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _select(image, index)
        except EOFError:
            return frames  # the last directory was the last page
        except MemoryError:
            raise
        except Exception as err:  # a broken directory raises many kinds (struct.error...)
            raise InvalidInput(
                f"page {index + 1} of the TIFF cannot be read: {type(err).__name__}: {err}"
            ) from err
        if index >= cap:
            raise TooLarge(f"the TIFF has more than {cap} pages, over {option}={cap}")
        frames.append(_frame(image, index + 1, options))


def _decode(image: Image.Image, index: int, frame: _Frame, options: OcrOptions) -> _Page:
    """Frame `index` upright, grey, with square pixels, as PGM and its page's geometry."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _select(image, index)
            image.load()
            orientation = image.getexif().get(ExifTags.Base.Orientation)
            grey = ImageOps.exif_transpose(image).convert("L")
    except MemoryError:
        raise
    except Exception as err:  # a broken file raises many kinds (struct.error, KeyError...)
        where = f"page {index + 1} of the image" if index else "the image"
        raise InvalidInput(f"{where} cannot be decoded: {type(err).__name__}: {err}") from err
    if grey.width == 0 or grey.height == 0:
        where = f"page {index + 1} of the image" if index else "the image"
        raise InvalidInput(f"{where} has no pixels")
    if frame.dpi is None:
        image_pgm = pgm(grey.width, grey.height, grey.width, grey.tobytes())
        return _Page(image_pgm, grey.width, grey.height, (1.0, 1.0), None)
    dpi_x, dpi_y = frame.dpi[::-1] if orientation in _SIDEWAYS else frame.dpi
    points = (72 / dpi_x, 72 / dpi_y)
    width, height = grey.width * points[0], grey.height * points[1]
    if dpi_x != dpi_y:
        finest = max(dpi_x, dpi_y)
        size = (grey.width * finest / dpi_x, grey.height * finest / dpi_y)
        shrink = min(1.0, math.sqrt(options.max_image_pixels / (size[0] * size[1])))
        square = (max(1, round(size[0] * shrink)), max(1, round(size[1] * shrink)))
        grey = grey.resize(square, Image.Resampling.BICUBIC)
        points = (width / grey.width, height / grey.height)
    dpi = dpi_x if dpi_x == dpi_y else max(1, round(grey.width * 72 / width))
    image_pgm = pgm(grey.width, grey.height, grey.width, grey.tobytes())
    return _Page(image_pgm, width, height, points, dpi)


def _check_pixels(image: Image.Image, frames: list[_Frame]) -> None:
    """Decodes every page once and drops its pixels, so a file broken on its last page
    (a truncated download) is invalid_input before minutes of OCR, as a PDF whose page
    cannot be decoded fails before any of its pages is OCR'd. This pass takes ~4 ms a
    page (a 200 dpi LZW scan) against ~2 s of OCR; holding every decoded page instead
    would take ~9 MB a page (a letter page, grey, at 300 dpi)."""
    for index in range(len(frames)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _select(image, index)
                image.load()
        except MemoryError:
            raise
        except Exception as err:  # a broken file raises many kinds (struct.error, KeyError...)
            where = f"page {index + 1} of the image" if index else "the image"
            raise InvalidInput(f"{where} cannot be decoded: {type(err).__name__}: {err}") from err


def convert_image(data: bytes, options: Mapping[str, Any], *, max_pages: int) -> Converted:
    """One image, OCR'd, as a DoclingDocument: one page, or one per frame of a TIFF."""
    ocr = ocr_options(options)
    if ocr.mode == "off":
        raise Unsupported("an image's text can only be read by OCR, and ocr=off")
    image = _open(data)
    frames = _frames(image, ocr, max_pages)
    _check_pixels(image, frames)
    binary = tesseract()
    if binary is None:
        raise Unsupported(f"an image's text is read by OCR: {NO_TESSERACT}")
    check_language(binary, ocr.lang)
    stats = {"pages_ocr": 0}
    pages: list[PageContent] = []
    confidences: Confidences = {}
    for index, frame in enumerate(frames):
        page = _decode(image, index, frame, ocr)
        number = index + 1
        text = read_page(
            binary,
            page.image,
            ocr,
            dpi=page.dpi,
            page=number,
            scale=page.scale,
            height=page.height,
            stats=stats,
        )
        lines: tuple[Any, ...] = ()
        if text is not None:
            lines = text.lines
            for order, conf in text.confidence.items():
                confidences[(number, order)] = conf
        pages.append(PageContent(number, page.width, page.height, lines, (), 0.0, ()))
    stats["pages_without_text"] = sum(1 for p in pages if not p.lines)
    return lay_out(pages, SourceMeta(page_count=len(pages)), stats, confidences)
