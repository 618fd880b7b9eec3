#!/usr/bin/env bash
# Makes sure what the desktop adapter's tests and `glovebox desktop` need is installed: an X
# server (Xvfb), a session bus (dbus), the AT-SPI bus and registry (at-spi2-core), a window
# manager (openbox) for the window-manager tests, and GTK 3 for Python (python3-gi,
# gir1.2-gtk-3.0, python3-gi-cairo) for the test app. Idempotent: installs only what is missing,
# through Debian's apt-get. Used by `make test` and `make desktop`.
set -euo pipefail

need=()
command -v Xvfb >/dev/null 2>&1 || need+=(xvfb xauth)
command -v dbus-daemon >/dev/null 2>&1 || need+=(dbus)
[ -x /usr/libexec/at-spi-bus-launcher ] || need+=(at-spi2-core)
command -v openbox >/dev/null 2>&1 || need+=(openbox)
if ! /usr/bin/python3 -c 'import gi, cairo; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk; gi.require_foreign("cairo")' >/dev/null 2>&1; then
  need+=(python3-gi gir1.2-gtk-3.0 python3-gi-cairo)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi

"$(dirname "$0")/apt-install.sh" "the desktop adapter" --no-recommends "${need[@]}"
echo "Desktop packages installed." >&2
