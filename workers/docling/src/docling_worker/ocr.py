"""OCR with Debian's `tesseract` binary: a page image in, text lines with boxes out.

The binary runs once per page (`tesseract stdin stdout -l LANG hocr`), the image on its
stdin as PGM, with OMP_THREAD_LIMIT=1 (one core per page, and the same words for the same
pixels on every run) and LC_ALL=C. Its hOCR output gives lines with their box, baseline
and estimated text size (`x_size`), and words with their confidence (`x_wconf`). Each
line becomes a pdf_page `Line` in PDF points, origin bottom left, its box set from the
baseline and the text size rather than from the glyphs' ink (a line without descenders
would otherwise look smaller than its neighbours, and the layout heuristics read sizes
as headings), so a scanned page goes through the same layout path as a text layer.

The language data comes from Debian's `tesseract-ocr-LANG` packages: nothing is
downloaded. No tesseract on PATH means no OCR: the callers say so in their typed error.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from workers_common import InvalidInput, Unsupported

from .pdf_page import Line

__all__ = [
    "OCR_FONT",
    "OcrOptions",
    "OcrText",
    "check_language",
    "ocr_options",
    "parse_hocr",
    "read_page",
    "recognize",
    "tesseract",
]

OCR_FONT = "ocr"
"""The font name of OCR'd lines (neither bold nor italic to the layout heuristics)."""

_MODES = ("auto", "off", "force")
_LANG = re.compile(r"^[A-Za-z0-9_]{1,32}(\+[A-Za-z0-9_]{1,32}){0,7}$")
_ENV = {"OMP_THREAD_LIMIT": "1", "LC_ALL": "C"}
_NS = "{http://www.w3.org/1999/xhtml}"
_BBOX = re.compile(r"bbox (-?\d+) (-?\d+) (-?\d+) (-?\d+)")
_BASELINE = re.compile(r"baseline (-?[\d.]+) (-?[\d.]+)")
_X_SIZE = re.compile(r"x_size ([\d.]+)")
_X_DESC = re.compile(r"x_descenders ([\d.]+)")
_WCONF = re.compile(r"x_wconf (-?\d+)")


@dataclass(frozen=True, slots=True)
class OcrOptions:
    """The job's OCR options (README: ocr, ocr_lang, ocr_dpi, ocr_page_timeout,
    max_ocr_pages, max_image_pixels)."""

    mode: str = "auto"
    lang: str = "eng"
    dpi: int = 300
    page_timeout: float = 60.0
    max_pages: int = 200
    max_image_pixels: int = 90_000_000


def _number(options: Mapping[str, Any], key: str, default: float) -> float:
    value = options.get(key, default)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidInput(f"option {key}={value!r} is not a number") from None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value < math.inf  # NaN and infinity too
    ):
        raise InvalidInput(f"option {key}={value!r} is not a positive number")
    return float(value)


def ocr_options(options: Mapping[str, Any]) -> OcrOptions:
    """The OCR options of a job; InvalidInput for a value that cannot mean anything."""
    mode = str(options.get("ocr", "auto")).strip().lower()
    if mode not in _MODES:
        raise InvalidInput(f"option ocr={mode!r} is not one of {', '.join(_MODES)}")
    lang = str(options.get("ocr_lang", "eng")).strip()
    if not _LANG.match(lang):
        raise InvalidInput(f"option ocr_lang={lang!r} is not a tesseract language (e.g. eng+deu)")
    dpi = int(_number(options, "ocr_dpi", 300))
    if not 50 <= dpi <= 1200:
        raise InvalidInput(f"option ocr_dpi={dpi} is outside 50..1200")
    return OcrOptions(
        mode=mode,
        lang=lang,
        dpi=dpi,
        page_timeout=_number(options, "ocr_page_timeout", 60.0),
        max_pages=int(_number(options, "max_ocr_pages", 200)),
        max_image_pixels=int(_number(options, "max_image_pixels", 90_000_000)),
    )


def tesseract() -> str | None:
    """The tesseract binary on PATH, or None."""
    return shutil.which("tesseract")


@functools.cache
def _installed(binary: str) -> frozenset[str]:
    done = subprocess.run(
        [binary, "--list-langs"],
        capture_output=True,
        env={**os.environ, **_ENV},
        timeout=30,
        check=False,
    )
    names = done.stdout.decode("utf-8", "replace").splitlines()[1:]
    return frozenset(name.strip() for name in names if name.strip())


def check_language(binary: str, lang: str) -> None:
    """Unsupported naming each language of `lang` whose traineddata is not installed."""
    missing = [name for name in lang.split("+") if name not in _installed(binary)]
    if missing:
        raise Unsupported(
            f"OCR language {'+'.join(missing)} is not installed (tesseract has "
            f"{', '.join(sorted(_installed(binary))) or 'none'}; Debian package "
            f"tesseract-ocr-{missing[0].lower()})"
        )


@dataclass(slots=True)
class OcrText:
    """One page's OCR: its lines, and per line (by `order`) the sum and count of its
    words' confidences."""

    lines: tuple[Line, ...] = ()
    confidence: dict[int, tuple[int, int]] = field(default_factory=dict)


def _float(pattern: re.Pattern[str], title: str, default: float) -> float:
    match = pattern.search(title)
    return float(match.group(1)) if match else default


def parse_hocr(hocr: bytes, *, page: int, scale: tuple[float, float], height: float) -> OcrText:
    """tesseract's hOCR as lines in points: `scale` is points per pixel (x, y), `height`
    the page's height in points (the y axis flips: hOCR's origin is top left)."""
    try:
        root = ET.fromstring(hocr)
    except ET.ParseError as err:
        raise InvalidInput(f"tesseract's hOCR output is not XML: {err}") from err
    sx, sy = scale
    out = OcrText()
    lines: list[Line] = []
    for span in root.iter(f"{_NS}span"):
        if span.get("class", "") not in ("ocr_line", "ocr_header", "ocr_caption", "ocr_textfloat"):
            continue
        title = span.get("title", "")
        words: list[str] = []
        confs: list[int] = []
        for word in span.iter(f"{_NS}span"):
            text = "".join(word.itertext()).strip()
            if word.get("class") == "ocrx_word" and text:
                words.append(text)
                conf = _WCONF.search(word.get("title", ""))
                confs.append(max(0, min(100, int(conf.group(1)))) if conf else 0)
        box = _BBOX.search(title)
        if not words or box is None:
            continue
        left, top, right, bottom = (int(v) for v in box.groups())
        baseline = _BASELINE.search(title)
        base = bottom + (float(baseline.group(2)) if baseline else 0.0)
        size = _float(_X_SIZE, title, float(bottom - top))
        below = _float(_X_DESC, title, 0.0)
        y_low, y_high = base + below, base + below - size  # pixels, y down
        order = len(lines)
        lines.append(
            Line(
                page,
                round(left * sx, 3),
                round(height - y_low * sy, 3),
                round(right * sx, 3),
                round(height - y_high * sy, 3),
                " ".join(words),
                OCR_FONT,
                order,
            )
        )
        out.confidence[order] = (sum(confs), len(confs))
    out.lines = tuple(lines)
    return out


def recognize(
    binary: str, image: bytes, *, lang: str, dpi: int | None, timeout: float
) -> bytes | None:
    """tesseract's hOCR of one image (PGM/PNG/... bytes); None when it ran over `timeout`
    seconds (it is killed); InvalidInput when it cannot read the image."""
    args = [binary, "stdin", "stdout", "-l", lang]
    if dpi is not None:
        args += ["--dpi", str(dpi)]
    try:
        done = subprocess.run(
            [*args, "hocr"],
            input=image,
            capture_output=True,
            env={**os.environ, **_ENV},
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0 or not done.stdout.strip():
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise InvalidInput(f"tesseract cannot read the image: {tail[0]}")
    return done.stdout


def read_page(
    binary: str,
    image: bytes,
    options: OcrOptions,
    *,
    dpi: int | None,
    page: int,
    scale: tuple[float, float],
    height: float,
    stats: MutableMapping[str, int],
) -> OcrText | None:
    """One page image OCR'd into lines (parse_hocr's `page`, `scale`, `height`), counted
    in `stats`: `pages_ocr`, or `pages_ocr_skipped` (None) past `ocr_page_timeout`."""
    hocr = recognize(binary, image, lang=options.lang, dpi=dpi, timeout=options.page_timeout)
    if hocr is None:
        stats["pages_ocr_skipped"] = stats.get("pages_ocr_skipped", 0) + 1
        return None
    stats["pages_ocr"] = stats.get("pages_ocr", 0) + 1
    return parse_hocr(hocr, page=page, scale=scale, height=height)
