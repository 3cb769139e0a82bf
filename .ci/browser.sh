#!/usr/bin/env bash
# Headless Chromium + chromedriver for tests/pipeline/test_ui_browser.py (Selenium drives Debian's
# /usr/bin/chromium through /usr/bin/chromedriver; nothing downloads a browser at run time).
# Idempotent: does nothing when both are installed. Always exits 0: without them the browser
# test skips with a message naming this script.
set -u

have() { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }

if have; then
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo ".ci/browser.sh: no apt-get here; install chromium and chromedriver by hand (the UI test will skip)" >&2
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo ".ci/browser.sh: not root and no passwordless sudo; skipping the chromium install (the UI test will skip)" >&2
        exit 0
    fi
fi

export DEBIAN_FRONTEND=noninteractive
# Debian names the packages chromium / chromium-driver; Ubuntu's chromium-browser is a snap
# shim, so there only Debian-style package names are tried and a failure is reported, not fatal.
if ! $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1 || true
fi

if have; then
    echo ".ci/browser.sh: installed $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
else
    echo ".ci/browser.sh: could not install chromium/chromium-driver via apt (the UI test will skip)" >&2
fi
exit 0
