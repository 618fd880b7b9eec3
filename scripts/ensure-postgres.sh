#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries are installed (initdb, postgres, psql), for the tests
# of the shared store (issue 34): they start a server of their own on a loopback port, as an
# unprivileged user, in a temporary directory (test_support::postgres). Idempotent: installs
# only when missing, through Debian's apt-get. Used by `make test`; `make run` keeps the
# embedded SQLite store and needs none of it.
set -euo pipefail

for bin in /usr/lib/postgresql/*/bin; do
  if [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ] && [ -x "$bin/psql" ] && [ -x "$bin/pg_isready" ]; then
    exit 0
  fi
done
"$(dirname "$0")/apt-install.sh" "the shared-store tests (PostgreSQL)" --no-recommends postgresql
echo "PostgreSQL installed." >&2
