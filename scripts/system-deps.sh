#!/usr/bin/env bash
# System packages the workers need beyond Python wheels: Debian's `chromium` for the web
# worker's rendering (Playwright drives it through executable_path; `playwright install`
# is never used). Installs only what is missing; a second run does nothing.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || [[ -n "${WEB_CHROMIUM:-}" && -x "${WEB_CHROMIUM}" ]]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: no chromium and no apt-get: install Chromium and set WEB_CHROMIUM" \
        "in [pools.web].env; until then web pages are fetched statically only" >&2
    exit 0
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "system-deps: need root (or sudo) to install chromium" >&2; exit 1; }
    sudo=(sudo)
fi
echo "system-deps: installing chromium (Debian package, ~480 MB)" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium
