#!/usr/bin/env bash
# The seam's absences, checked by `make test` so they cannot come back (design.md, "The seam is
# real before a second surface kind lands"):
#   - the runtime and the transports (runtime, mcp, server, agent) do not depend on an adapter
#     crate (browser, desktop) or on a backend's client (cdp, x11rb, zbus); the binary (glovebox) composes the browser
#     adapter but does not depend on cdp;
#   - no source file of those crates names a CDP method or a `cdp::` item;
#   - HTTP lives in `server`: `mcp` serves no listener of its own (it is the tool router that
#     `server` mounts, and stdio), and `server` does not depend on an adapter either.
# Tests may reach the real browser beneath the runtime (dev-dependencies are not checked).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, sys
adapters = {"browser", "cdp", "desktop", "x11rb", "zbus"}
banned = {"runtime": adapters, "mcp": adapters, "server": adapters, "agent": adapters, "glovebox": {"cdp", "x11rb", "zbus"}}
bad = []
for package in json.load(sys.stdin)["packages"]:
    for dep in package["dependencies"]:
        if dep.get("kind") is None and dep["name"] in banned.get(package["name"], ()):
            bad.append(package["name"] + " depends on " + dep["name"])
if bad:
    print("check-seam: " + "; ".join(bad) + " (reach surfaces through surface::SurfaceAdapter; see ARCHITECTURE.md)", file=sys.stderr)
    sys.exit(1)
'

domains='Page|Input|Runtime|Target|Fetch|Storage|Network|DOM|DOMSnapshot|Accessibility|Emulation|Browser|Overlay|Log|Security|Debugger'
found=$(grep -rnE "cdp::|\"($domains)\\.[a-z][A-Za-z]+\"" crates/runtime/src crates/mcp/src crates/server/src crates/agent/src crates/glovebox/src --include='*.rs' || true)
if [ -n "$found" ]; then
    echo "check-seam: CDP outside crates/cdp and crates/browser:" >&2
    echo "$found" >&2
    exit 1
fi
# A unit test's own socket (after a file's `#[cfg(test)]`) is not a listener the crate serves.
listeners=$(find crates/mcp/src -name '*.rs' -print0 | xargs -0 awk '/^#\[cfg\(test\)\]/ { nextfile } /axum::serve|TcpListener::bind/ { print FILENAME ":" FNR ": " $0 }')
if [ -n "$listeners" ]; then
    echo "check-seam: an HTTP listener outside crates/server (mcp is a router that server mounts):" >&2
    echo "$listeners" >&2
    exit 1
fi
echo "check-seam: the runtime and the transports speak no CDP and depend on no adapter; HTTP is served by crates/server alone"
