#!/usr/bin/env bash
# Makes sure the widget libraries the observation fixtures are built with are installed: jQuery
# and jQuery UI from Debian (libjs-jquery, libjs-jquery-ui, under /usr/share/javascript), served
# to the fixture pages on loopback by the test server, so the tests run real widget code (a
# date picker, a sortable list, delegated handlers) without the internet; and Chromium's headless
# shell (chromium-headless-shell), the faster browser `--chromium` can name, which its launch test
# runs. Idempotent. Used by `make test` and `make bench`.
set -euo pipefail

need=()
[ -f /usr/share/javascript/jquery/jquery.min.js ] || need+=(libjs-jquery)
[ -f /usr/share/javascript/jquery-ui/jquery-ui.min.js ] || need+=(libjs-jquery-ui)
[ -x /usr/lib/chromium/chromium-headless-shell ] || need+=(chromium-headless-shell)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi

"$(dirname "$0")/apt-install.sh" "the widget fixtures and the headless shell" --no-recommends "${need[@]}"
echo "Installed: ${need[*]}." >&2
