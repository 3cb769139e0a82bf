#!/usr/bin/env bash
# PostgreSQL server binaries for tests/pipeline/test_postgres_instance.py (issue 8). Idempotent:
# nothing happens when initdb and pg_ctl are on PATH or in /usr/lib/postgresql/*/bin;
# otherwise Debian's `postgresql` package is installed (apt-get, as root or via sudo -n).
# Always exits 0: without a server the PostgreSQL tests skip with a message naming this
# script (set TRADELAB_REQUIRE_POSTGRES=1 to make them fail instead).
set -uo pipefail

have_server() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        return 0
    fi
    local bin
    for bin in /usr/lib/postgresql/*/bin; do
        [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] && return 0
    done
    return 1
}

if have_server; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    echo ".ci/postgres.sh: PostgreSQL is not installed and this user cannot run apt-get; the PostgreSQL tests will skip" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo ".ci/postgres.sh: PostgreSQL is not installed and there is no apt-get; the PostgreSQL tests will skip" >&2
    exit 0
fi

echo ".ci/postgres.sh: installing PostgreSQL (apt-get install postgresql)" >&2
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! { "${SUDO[@]}" apt-get update -qq \
        && "${SUDO[@]}" apt-get install -y -qq --no-install-recommends postgresql; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    echo ".ci/postgres.sh: apt-get install postgresql failed; the PostgreSQL tests will skip" >&2
    exit 0
fi
rm -f "$log"
have_server || echo ".ci/postgres.sh: installed, but initdb/pg_ctl still not found; the PostgreSQL tests will skip" >&2
exit 0
