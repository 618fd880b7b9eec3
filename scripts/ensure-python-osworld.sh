#!/usr/bin/env bash
# Creates (once) a Python venv under target/python-osworld with OSWorld's own client: the
# `desktop-env` wheel without its dependencies (they are ~75 heavy packages — torch,
# transformers — none of which its PythonController needs) and `requests`, which it does. The VM
# tests drive our guest server with that client. Idempotent and safe to run concurrently.
# Prints the venv's python path on stdout.
set -euo pipefail

VERSION="${GLOVEBOX_DESKTOP_ENV_VERSION:-1.0.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/python-osworld"
STAMP="$VENV/.glovebox-desktop-env-$VERSION"

if [[ -f "$STAMP" ]]; then
    echo "$VENV/bin/python"
    exit 0
fi

mkdir -p "$TARGET"
exec 9>"$TARGET/.python-osworld.lock"
flock 9
if [[ ! -f "$STAMP" ]]; then
    PYTHON="$(command -v python3 || true)"
    if [[ -z "$PYTHON" ]]; then
        echo "ensure-python-osworld: python3 is missing; install it (Debian: apt-get install python3 python3-venv)" >&2
        exit 1
    fi
    rm -rf "$VENV"
    if ! "$PYTHON" -m venv "$VENV" >&2; then
        echo "ensure-python-osworld: cannot create a venv; install python3-venv" >&2
        exit 1
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "desktop-env==$VERSION" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "requests>=2.28,<3" >&2
    touch "$STAMP"
fi
echo "$VENV/bin/python"
