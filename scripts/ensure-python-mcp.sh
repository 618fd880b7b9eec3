#!/usr/bin/env bash
# Creates (once) a Python venv under target/python-mcp with the official MCP Python SDK, the real
# client the MCP tests drive Glovebox with, and the parsers of the operator tests. Idempotent and
# safe to run concurrently: a finished venv is marked by a stamp file naming the pinned versions;
# a lock serialises creation.
# Prints the venv's python path on stdout.
set -euo pipefail

# Pinned: 1.x speaks the session-based protocol revisions (2025-03-26 … 2025-11-25) that give one
# MCP session per client; the tests assert that isolation.
MCP_VERSION="${GLOVEBOX_PYTHON_MCP_VERSION:-1.26.0}"
# Beside it: Prometheus' own text-format parser (the /metrics test) and PyYAML (the sample
# deployment's test).
PROMETHEUS_VERSION=0.21.1
YAML_VERSION=6.0.2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/python-mcp"
STAMP="$VENV/.glovebox-mcp-$MCP_VERSION-prometheus-$PROMETHEUS_VERSION-yaml-$YAML_VERSION"

if [[ -f "$STAMP" ]]; then
    echo "$VENV/bin/python"
    exit 0
fi

mkdir -p "$TARGET"
exec 9>"$TARGET/.python-mcp.lock"
flock 9
if [[ ! -f "$STAMP" ]]; then
    PYTHON="$(command -v python3 || true)"
    if [[ -z "$PYTHON" ]]; then
        echo "ensure-python-mcp: python3 is missing; install it (Debian: apt-get install python3 python3-venv)" >&2
        exit 1
    fi
    rm -rf "$VENV"
    if ! "$PYTHON" -m venv "$VENV" >&2; then
        echo "ensure-python-mcp: cannot create a venv; install python3-venv" >&2
        exit 1
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" \
        "prometheus-client==$PROMETHEUS_VERSION" "PyYAML==$YAML_VERSION" >&2
    touch "$STAMP"
fi
echo "$VENV/bin/python"
