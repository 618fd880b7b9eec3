#!/usr/bin/env bash
# Installs Debian packages for the ensure-* scripts, one way for all of them:
#   apt-install.sh WHAT [--no-recommends] PACKAGE...
# WHAT names what they are for in the messages. Needs apt-get, and root or sudo; otherwise says
# exactly what to run and fails.
set -euo pipefail
what="$1"; shift
flags=()
if [ "${1:-}" = --no-recommends ]; then flags+=(--no-install-recommends); shift; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "$what needs: $* (Debian package names), and this system has no apt-get; install them with your package manager." >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "$what needs packages; run as root: apt-get update && apt-get install -y $*" >&2
    exit 1
  fi
fi
echo "Installing Debian packages for $what (one time): $*" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${flags[@]}" "$@" >/dev/null
