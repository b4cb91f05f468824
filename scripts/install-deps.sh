#!/usr/bin/env bash
# Installs everything floe needs to build, test and benchmark on Debian 12.
# Idempotent: a second run on a ready machine only checks and returns quickly.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

DEBS=(build-essential pkgconf cmake
      libssl-dev libsqlite3-dev libexpat1-dev libjansson-dev zlib1g-dev libcurl4-openssl-dev
      libzstd-dev libsnappy-dev liblz4-dev librdkafka-dev libpq-dev postgresql haproxy
      clang libclang-rt-dev s3cmd curl sqlite3 python3-venv
      openjdk-17-jdk-headless maven)

missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python test peers, in a venv of their own so the system stays untouched.
venv="$here/.venv"
req="$here/tests/requirements.txt"
stamp="$venv/.req-stamp"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$req" "$stamp"; then
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$req"
  cp "$req" "$stamp"
fi

# A third-party S3 store as a backing store for tests/integration/test_object_store.py:
# versitygw (Apache-2.0; its posix backend), built by `go install` from the Go module
# proxy into tests/.cache (gitignored, kept between runs). Bounded in time; when it
# cannot be built the test skips and says so (tests/.cache/versitygw.err has why).
vgw_ver=v1.8.0
cache="$here/tests/.cache"
go_bin=$(command -v go || echo /usr/local/go/bin/go)
if [ ! -x "$cache/bin/versitygw" ] && [ -x "$go_bin" ]; then
  mkdir -p "$cache"
  if ! GOBIN="$cache/bin" GOMODCACHE="$cache/gomod" GOFLAGS=-modcacherw GOTOOLCHAIN=local \
       timeout 900 "$go_bin" install "github.com/versity/versitygw/cmd/versitygw@$vgw_ver" \
       2> "$cache/versitygw.err"; then
    echo "install-deps: versitygw $vgw_ver was not built (see $cache/versitygw.err)" >&2
  fi
fi
