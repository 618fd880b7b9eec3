#!/usr/bin/env bash
# Makes sure what gui_exec's sandbox needs is installed: bubblewrap (bwrap) and Debian's own
# /usr/bin/python3. Idempotent: installs only what is missing, through Debian's apt-get. Used by
# `make run` and `make test` (without it gui_exec is unavailable, and doctor says why).
set -euo pipefail

need=()
[ -x /usr/bin/bwrap ] || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3-minimal)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi

"$(dirname "$0")/apt-install.sh" "gui_exec's sandbox" --no-recommends "${need[@]}"
echo "Sandbox packages installed." >&2
