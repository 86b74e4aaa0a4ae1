"""An image (png, jpg, tif, bmp, webp) as a one-page document, read by OCR.

Pillow (a dependency of docling-core and docling-parse, so always beside this worker)
reads the header first: a file that is not one of these images, or is broken, is
invalid_input; one over `max_image_pixels` is too_large before any pixel is decoded.
The first frame (a multi-page TIFF's first page) is decoded, turned upright by its EXIF
orientation, made grey and handed to tesseract (ocr.py) as PGM. The page's size in
points comes from the image's own resolution when it states a plausible one (50 to
2,400 dpi), else one pixel is one point; the lines then go through the PDF layout path
(pdf_document.lay_out), so an image's nodes look like a scanned PDF page's.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping
from typing import Any

from PIL import Image, ImageOps, UnidentifiedImageError

from workers_common import InvalidInput, TooLarge, Unsupported

from .model import Converted, SourceMeta
from .ocr import OcrOptions, check_language, ocr_options, read_page, tesseract
from .pdf_document import lay_out
from .pdf_ocr import NO_TESSERACT, pgm
from .pdf_page import PageContent

__all__ = ["SIGNATURES", "convert_image"]

SIGNATURES = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",  # JPEG
    b"II*\x00",  # TIFF, little endian
    b"MM\x00*",  # TIFF, big endian
    b"BM",  # BMP
)
"""Leading bytes of the accepted images (WebP is RIFF....WEBP, checked apart)."""
_FORMATS = frozenset({"PNG", "JPEG", "TIFF", "BMP", "WEBP"})

# The pixel cap is checked here (max_image_pixels) before decoding; Pillow's own bomb
# guard would warn, then refuse, at a fixed count of its own.
Image.MAX_IMAGE_PIXELS = None


def _is_image(data: bytes) -> bool:
    return data.startswith(SIGNATURES) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def _dpi(image: Image.Image) -> int | None:
    value = image.info.get("dpi")
    if isinstance(value, tuple) and value:
        try:
            dpi = round(float(value[0]))
        except (TypeError, ValueError):
            return None
        return dpi if 50 <= dpi <= 2400 else None
    return None


def _decode(data: bytes, options: OcrOptions) -> tuple[bytes, int, int, int | None]:
    """(PGM bytes, width, height, stated dpi) of the image's first frame."""
    if not _is_image(data):
        raise InvalidInput("not a PNG, JPEG, TIFF, BMP or WebP image (no known signature)")
    try:
        image = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as err:
        raise InvalidInput(f"the image cannot be read: {err}") from err
    if image.format not in _FORMATS:
        raise InvalidInput(f"not an image format read here: {image.format}")
    width, height = image.size
    if width * height > options.max_image_pixels:
        raise TooLarge(
            f"image of {width}x{height} pixels is over max_image_pixels={options.max_image_pixels}"
        )
    dpi = _dpi(image)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            image.load()
            grey = ImageOps.exif_transpose(image).convert("L")
    except MemoryError:
        raise
    except Exception as err:  # a broken file raises many kinds (struct.error, KeyError...)
        raise InvalidInput(f"the image cannot be decoded: {type(err).__name__}: {err}") from err
    if grey.width == 0 or grey.height == 0:
        raise InvalidInput("the image has no pixels")
    return pgm(grey.width, grey.height, grey.width, grey.tobytes()), grey.width, grey.height, dpi


def convert_image(data: bytes, options: Mapping[str, Any]) -> Converted:
    """One image, OCR'd, as a one-page DoclingDocument."""
    ocr = ocr_options(options)
    if ocr.mode == "off":
        raise Unsupported("an image's text can only be read by OCR, and ocr=off")
    image, width, height, dpi = _decode(data, ocr)
    binary = tesseract()
    if binary is None:
        raise Unsupported(f"an image's text is read by OCR: {NO_TESSERACT}")
    check_language(binary, ocr.lang)
    points = 72 / dpi if dpi is not None else 1.0
    page_width, page_height = width * points, height * points
    stats = {"pages_ocr": 0}
    text = read_page(
        binary,
        image,
        ocr,
        dpi=dpi,
        page=1,
        scale=(points, points),
        height=page_height,
        stats=stats,
    )
    lines: tuple[Any, ...] = ()
    confidences: dict[tuple[int, int], tuple[int, int]] = {}
    if text is not None:
        lines = text.lines
        confidences = {(1, order): conf for order, conf in text.confidence.items()}
    page = PageContent(1, page_width, page_height, lines, (), 0.0, ())
    stats["pages_without_text"] = 0 if lines else 1
    return lay_out([page], SourceMeta(page_count=1), stats, confidences)
