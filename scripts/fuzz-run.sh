#!/usr/bin/env bash
# Runs each libFuzzer target built in $1 for $2 seconds, growing a scratch copy of its corpus.
set -euo pipefail
build=$1; secs=${2:-60}
cd "$(dirname "$0")/.."
for bin in "$build"/fuzz_*; do
  n=$(basename "$bin"); n=${n#fuzz_}
  work=$(mktemp -d); cp -r tests/fuzz/corpus/$n/. "$work/" 2>/dev/null || true
  echo "== fuzz $n for ${secs}s"
  "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 "$work" 2>&1 | tail -3
  rm -rf "$work"
done
