#!/usr/bin/env bash
# Makes sure a Chromium binary exists, installing Debian's `chromium` package when it does not.
# Idempotent: does nothing when one is found. Used by `make run`, `make test` and `make bench`.
set -euo pipefail

found() {
  if [ -n "${GLOVEBOX_CHROMIUM:-}" ] && [ -x "$GLOVEBOX_CHROMIUM" ]; then echo "$GLOVEBOX_CHROMIUM"; return 0; fi
  for name in chromium chromium-browser google-chrome google-chrome-stable chrome; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
  done
  for path in /usr/bin/chromium /usr/lib/chromium/chromium /usr/bin/chromium-browser /snap/bin/chromium /usr/bin/google-chrome /opt/google/chrome/chrome; do
    if [ -x "$path" ]; then echo "$path"; return 0; fi
  done
  return 1
}

if found >/dev/null; then exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is not installed and this system has no apt-get." >&2
  echo "Install Chromium or Chrome with your package manager, or set GLOVEBOX_CHROMIUM=/path/to/chrome." >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "Chromium is not installed; run as root: apt-get update && apt-get install -y chromium" >&2
    exit 1
  fi
fi
echo "Installing Debian's chromium package (one time)…" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
if ! found >/dev/null; then
  echo "apt-get installed chromium but no binary was found; set GLOVEBOX_CHROMIUM=/path/to/chrome." >&2
  exit 1
fi
echo "Chromium installed: $(found)" >&2
