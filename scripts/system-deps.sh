#!/usr/bin/env bash
# System packages beyond Python wheels: Debian's `chromium` for the web worker's rendering
# and the status-page test (Playwright drives it through executable_path; `playwright
# install` is never used), and `iproute2` for the test that puts a worker in another
# network namespace (tests/remote.rs), and `tesseract-ocr` + `tesseract-ocr-eng` for the docling
# worker's OCR of scanned PDF pages and images (the traineddata ships in the package: nothing is
# downloaded at run time), and LibreOffice's Writer and Impress without a GUI
# (`libreoffice-writer-nogui`, `libreoffice-impress-nogui`) for the docling worker's Word and
# PowerPoint 97-2003 and RTF documents, which it converts to DOCX/PPTX first. Installs only
# what is missing; a second run does nothing.
set -euo pipefail

missing=()
if ! command -v chromium >/dev/null 2>&1 && ! [[ -n "${WEB_CHROMIUM:-}" && -x "${WEB_CHROMIUM}" ]]; then
    missing+=(chromium)
fi
if ! command -v ip >/dev/null 2>&1; then
    missing+=(iproute2)
fi
if ! command -v tesseract >/dev/null 2>&1; then
    missing+=(tesseract-ocr tesseract-ocr-eng)
fi
if ! command -v soffice >/dev/null 2>&1; then
    missing+=(libreoffice-writer-nogui libreoffice-impress-nogui)
fi
if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: missing ${missing[*]} and no apt-get: install them (for Chromium, or set" \
        "WEB_CHROMIUM in [pools.web].env; until then web pages are fetched statically only;" \
        "without tesseract, scanned PDF pages and images are unsupported; without LibreOffice," \
        ".doc, .ppt and .rtf documents are)" >&2
    exit 0
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "system-deps: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "system-deps: installing ${missing[*]} (Debian packages: chromium is ~480 MB, LibreOffice ~500 MB)" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
