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

if [ -n "${GLOVEBOX_CHROMIUM:-}" ]; then
  echo "GLOVEBOX_CHROMIUM=$GLOVEBOX_CHROMIUM is not an executable; fix it or unset it." >&2
fi
"$(dirname "$0")/apt-install.sh" "Chromium (or set GLOVEBOX_CHROMIUM=/path/to/chrome)" chromium
if ! found >/dev/null; then
  echo "apt-get installed chromium but no binary was found; set GLOVEBOX_CHROMIUM=/path/to/chrome." >&2
  exit 1
fi
echo "Chromium installed: $(found)" >&2
