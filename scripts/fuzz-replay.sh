#!/usr/bin/env bash
# Replays every fuzz corpus (tests/fuzz/corpus/NAME/) through its target, built in $1.
set -euo pipefail
build=${1:-build-asan}
cd "$(dirname "$0")/.."
fail=0
for src in tests/fuzz/fuzz_*.c; do
  [ -e "$src" ] || continue
  n=$(basename "$src" .c); n=${n#fuzz_}
  dir=tests/fuzz/corpus/$n
  [ -d "$dir" ] || { echo "fuzz-replay: no corpus for $n"; fail=1; continue; }
  if "$build/replay_$n" "$dir" >/dev/null; then echo "fuzz-replay: $n ok ($(ls "$dir" | wc -l) inputs)"; else echo "fuzz-replay: $n FAILED"; fail=1; fi
done
exit $fail
