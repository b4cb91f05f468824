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
