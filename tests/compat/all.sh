#!/usr/bin/env bash
# The issue #4 matrix: every Iceberg version x checksum mode x scenario, N events each (default 100,000).
# Env: N, ICEBERG_VERSIONS ("1.10.1 1.12.0"), CHECKSUMS ("default when_required"),
#      SCENARIOS ("plain kill-connect kill-floe"); everything run.sh takes.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
export N="${N:-100000}"
ICEBERG_VERSIONS="${ICEBERG_VERSIONS:-1.10.1 1.12.0}"
CHECKSUMS="${CHECKSUMS:-default when_required}"
SCENARIOS="${SCENARIOS:-plain kill-connect kill-floe}"
ICEBERG_VERSIONS="$ICEBERG_VERSIONS" bash "$HERE/fetch.sh" || exit 1
pass=0; fail=0; failed=()
for iv in $ICEBERG_VERSIONS; do for cs in $CHECKSUMS; do for sc in $SCENARIOS; do
  name="iceberg-$iv/$cs/$sc"
  echo "=== $name (N=$N)"
  t0=$(date +%s)
  if ICEBERG_VERSION=$iv CHECKSUM=$cs SCENARIO=$sc bash "$HERE/run.sh"; then
    pass=$((pass+1)); echo "=== $name: PASS in $(( $(date +%s) - t0 ))s"
  else
    fail=$((fail+1)); failed+=("$name"); echo "=== $name: FAIL in $(( $(date +%s) - t0 ))s"
  fi
done; done; done
[ $fail = 0 ] || printf 'failed: %s\n' "${failed[@]}"
echo "compat: $pass passed, $fail failed"
[ $fail = 0 ]
