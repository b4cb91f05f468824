#!/usr/bin/env bash
# make demo: the whole pipeline on a newcomer's machine. floe serve, a local Kafka
# broker and Kafka Connect with the Apache Iceberg sink (all fetched from package
# registries on first use), a stream of sample events at a steady rate, a live count
# of the rows landing in the Iceberg table, and a final query of them.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
export N="${N:-20000}" RATE_EPS="${RATE_EPS:-1000}" COMMIT_INTERVAL_MS="${COMMIT_INTERVAL_MS:-5000}"
export ICEBERG_VERSION="${ICEBERG_VERSION:-1.10.1}" SCENARIO=plain DEMO=1 KEEP="${KEEP:-0}"
ICEBERG_VERSIONS="$ICEBERG_VERSION" bash "$HERE/fetch.sh"
echo "demo: $N events at $RATE_EPS/s into an Iceberg table on floe; rows are counted as the sink commits"
exec bash "$HERE/run.sh"
