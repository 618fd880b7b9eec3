#!/usr/bin/env bash
# Makes sure what VM guests need is installed: QEMU (qemu-system-x86, with qboot in
# qemu-system-data) and setpriv (util-linux). The guest image's own packages (busybox-static,
# xterm, xkb data, lz4, binutils) are installed by scripts/vm/build-guest.sh when it first builds.
# Idempotent: installs only what is missing, through Debian's apt-get. Used by `make run` and
# `make test`.
set -euo pipefail

need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi

"$(dirname "$0")/apt-install.sh" "VM guests" --no-recommends "${need[@]}"
echo "VM packages installed." >&2
