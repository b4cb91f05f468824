#!/usr/bin/env bash
# bench/run.sh: floe vs. a peer S3 server (MinIO), same load, same machine.
# Prints PUT/GET MiB/s for 64 MiB objects (1 and 8 clients), 4 KiB PUT/GET
# req/s (16 clients) and floe's peak RSS, each as floe, peer, floe/peer.
# See bench/README.md. Usage: make bench   (or: bash bench/run.sh)
#
# Environment (all optional):
#   BENCH_SECONDS=4     length of one timed run
#   BENCH_RUNS=3        runs per figure and server; the median is reported
#   BENCH_ENGINE=raw    s3load engine: raw (default) or curl
#   BENCH_THREADS=      s3load --threads for the timed phase (default: one per client)
#   BENCH_SERVERS="floe peer"   which servers to run
#   BENCH_TMPDIR=bench/out      where the data dirs go (a real disk, not tmpfs)
#   FLOE_BIN=build/floe
#   MINIO_BIN=bench/.cache/gobin/minio   built on first use (go install)
#   MINIO_VERSION=<module version to build if MINIO_BIN is missing>
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # ROOT, CACHE, RUN_SECONDS, RUNS, FLOE_BIN, keys, helpers
ENGINE=${BENCH_ENGINE:-raw}
THREADS=${BENCH_THREADS:-0}
SERVERS=${BENCH_SERVERS:-floe peer}
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}
MINIO_BIN=${MINIO_BIN:-$CACHE/gobin/minio}
S3LOAD=$CACHE/bin/s3load
BUCKET=bench
BUDGET_S=570 # stop starting new runs after this many seconds (whole script < 10 min)

bench_start bench "" # OUT=bench/out/STAMP, RESULTS, DATA

declare -A SERVER_PID ENDPOINT # [floe|peer]
stop_server() { # name
    local pid=${SERVER_PID[$1]:-}
    [ -n "$pid" ] || return 0
    unset "SERVER_PID[$1]"
    stop_pid "$pid"
}
cleanup() {
    stop_server floe
    stop_server peer
    rm -rf "$DATA"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------- build ----------
build_loadgen s3load "$S3LOAD" -lcurl -lcrypto -lpthread
if [[ " $SERVERS " == *" floe "* ]] && [ ! -x "$FLOE_BIN" ]; then
    log "building floe"
    make -C "$ROOT" build >&2 || log "floe build failed"
fi
if [[ " $SERVERS " == *" peer "* ]] && [ ! -x "$MINIO_BIN" ]; then
    log "building MinIO $MINIO_VERSION (one time, cached in bench/.cache; a few minutes)"
    mkdir -p "$CACHE/gobin"
    GOBIN=$(dirname "$MINIO_BIN") GOFLAGS=-mod=mod timeout 420 \
        go install "github.com/minio/minio@$MINIO_VERSION" >"$OUT/minio-build.log" 2>&1 ||
        log "MinIO build failed (see $OUT/minio-build.log)"
fi

# ---------- figures ----------
# name|op|size|clients|unit|target (floe, >=)|extra s3load args
FIGURES=(
    "PUT 64 MiB, 1 client|put|64M|1|MiB/s|500|--key-ring 2"
    "PUT 64 MiB, 8 clients|put|64M|8|MiB/s|500|--key-ring 2"
    "GET 64 MiB, 1 client|get|64M|1|MiB/s|1536|"
    "GET 64 MiB, 8 clients|get|64M|8|MiB/s|1536|"
    "PUT 4 KiB, 16 clients|put|4K|16|req/s||"
    "GET 4 KiB, 16 clients|get|4K|16|req/s|15000|"
)

declare -A VALUE # [server|figure index] -> median of the good runs
declare -A PEAK  # [server] -> VmHWM MiB

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print ""; else if (NR%2) print v[(NR+1)/2]; else printf "%.1f\n", (v[NR/2]+v[NR/2+1])/2}'; }

declare -A VALS # [server|figure index] -> newline-separated values of good runs

run_one() { # server figure-index run
    local server=$1 i=$2 r=$3 name op size clients unit target extra field line
    IFS='|' read -r name op size clients unit target extra <<<"${FIGURES[$i]}"
    field=mib_s
    [ "$unit" = "req/s" ] && field=req_s
    # start each run with no dirty page-cache data from earlier writes:
    # write-back of GiBs would otherwise slow down whichever run comes next
    timeout 120 sync || true
    # shellcheck disable=SC2086
    line=$(timeout $((RUN_SECONDS + 120)) "$S3LOAD" --endpoint "${ENDPOINT[$server]}" \
        --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" --bucket "$BUCKET" \
        --engine "$ENGINE" --threads "$THREADS" --op "$op" --size "$size" --clients "$clients" \
        --seconds "$RUN_SECONDS" --label "$server|$i|$r" --server-pid "${SERVER_PID[$server]}" $extra \
        2>>"$OUT/s3load.err") || true
    if [ -z "$line" ]; then
        log "$server '$name' run $r: no result (see $OUT/s3load.err)"
        return 0
    fi
    echo "$line" >>"$RESULTS"
    if [ "$(echo "$line" | jget errors)" = 0 ] && [ "$(echo "$line" | jget ops)" != 0 ]; then
        VALS[$server|$i]+="$(echo "$line" | jget "$field")"$'\n'
    else
        log "$server '$name' run $r had errors: $line"
    fi
    log "$server $name run $r: $(echo "$line" | jget "$field") $unit" \
        "(p50 $(echo "$line" | jget p50_ms) ms, p99 $(echo "$line" | jget p99_ms) ms;" \
        "cpu s: server $(echo "$line" | jget server_cpu_s), client $(echo "$line" | jget client_cpu_s)," \
        "other $(echo "$line" | jget other_cpu_s), in $(echo "$line" | jget seconds) s)"
}

start_floe() {
    local p1 p2
    p1=$(pick_port) && p2=$(pick_port) || return 1
    while [ "$p2" = "$p1" ]; do p2=$(pick_port) || return 1; done
    mkdir -p "$DATA/floe"
    log "starting floe on 127.0.0.1:$p1 (catalog 127.0.0.1:$p2)"
    FLOE_ROOT_ACCESS_KEY_ID=$ACCESS_KEY FLOE_ROOT_SECRET_ACCESS_KEY=$SECRET_KEY \
        "$FLOE_BIN" serve --data-dir "$DATA/floe" --s3-listen "127.0.0.1:$p1" \
        --catalog-listen "127.0.0.1:$p2" >"$OUT/floe.log" 2>&1 &
    SERVER_PID[floe]=$!
    ENDPOINT[floe]=http://127.0.0.1:$p1
    wait_http_200 "${ENDPOINT[floe]}/health" 30 "${SERVER_PID[floe]}"
}

start_peer() {
    local p1 p2
    p1=$(pick_port) && p2=$(pick_port) || return 1
    while [ "$p2" = "$p1" ]; do p2=$(pick_port) || return 1; done
    mkdir -p "$DATA/minio"
    log "starting MinIO on 127.0.0.1:$p1"
    MINIO_ROOT_USER=$ACCESS_KEY MINIO_ROOT_PASSWORD=$SECRET_KEY MINIO_BROWSER=off \
        MINIO_UPDATE=off CI=true \
        "$MINIO_BIN" server --quiet --address "127.0.0.1:$p1" \
        --console-address "127.0.0.1:$p2" "$DATA/minio" >"$OUT/minio.log" 2>&1 &
    SERVER_PID[peer]=$!
    ENDPOINT[peer]=http://127.0.0.1:$p1
    wait_http_200 "${ENDPOINT[peer]}/minio/health/live" 30 "${SERVER_PID[peer]}"
}

# Both servers run side by side (idle, each uses ~0 CPU); runs alternate
# between them, first one then the other, swapping the order every run, so
# that drift in the machine's load affects both alike.
UP=()
for server in $SERVERS; do
    case $server in
    floe) if [ -x "$FLOE_BIN" ] && start_floe; then UP+=(floe); else log "floe did not start (see $OUT/floe.log)"; stop_server floe; fi ;;
    peer) if [ -x "$MINIO_BIN" ] && start_peer; then UP+=(peer); else log "peer did not start (see $OUT/minio.log)"; stop_server peer; fi ;;
    *) log "unknown server $server" ;;
    esac
done
for i in "${!FIGURES[@]}"; do
    for r in $(seq "$RUNS"); do
        order=("${UP[@]}")
        if [ $((r % 2)) = 0 ] && [ ${#UP[@]} = 2 ]; then order=("${UP[1]}" "${UP[0]}"); fi
        for server in "${order[@]}"; do
            if [ "$(elapsed)" -ge "$BUDGET_S" ]; then
                log "time budget reached: skipping $server figure $i run $r"
                continue
            fi
            run_one "$server" "$i" "$r"
        done
    done
done
for server in "${UP[@]}"; do
    PEAK[$server]=$(peak_rss_mib "${SERVER_PID[$server]}")
    stop_server "$server"
done
# floe's access log is ~100 bytes per request (tens of MB per run)
for f in "$OUT/floe.log" "$OUT/minio.log"; do
    if [ -s "$f" ]; then timeout 60 gzip -f "$f" || true; fi
done
for k in "${!VALS[@]}"; do
    VALUE[$k]=$(printf '%s' "${VALS[$k]}" | grep . | median || true)
done

# ---------- report ----------
GIT_REV=$(git_rev)
MINIO_MOD=$( (go version -m "$MINIO_BIN" 2>/dev/null || true) | awk '$1=="mod" && $2=="github.com/minio/minio" {print $3}')
FSTYPE=$(fs_of "$DATA")
{
    echo "floe S3 benchmark  $STAMP"
    echo "machine : $(machine_line); data dirs on $FSTYPE"
    echo "servers : floe $GIT_REV ($FLOE_BIN); peer MinIO github.com/minio/minio@${MINIO_MOD:-?} (single drive); both up, runs alternating, 127.0.0.1"
    echo "client  : bench/s3load, engine=$ENGINE, one keep-alive connection per client, $([ "$THREADS" -gt 0 ] && echo "$THREADS epoll thread(s)" || echo "one thread per client"), SigV4 (UNSIGNED-PAYLOAD),"
    echo "          1 untimed warm-up request per client; 64 MiB PUTs overwrite a ring of 2 keys per client, 4 KiB PUTs create new keys;"
    echo "          GETs read objects uploaded before the timed phase (served from page cache)"
    echo "load    : load average at start $LOAD_AT_START; 'other' CPU below = processes other than server and client"
    echo "runs    : $RUNS x ${RUN_SECONDS}s per figure per server, median reported; ratio = floe/peer (peak RSS: lower is better)"
    echo
    printf '%-26s %10s %10s %8s %11s  %s\n' "figure" "floe" "peer" "ratio" "target" "verdict"
    for i in "${!FIGURES[@]}"; do
        IFS='|' read -r name op size clients unit target extra <<<"${FIGURES[$i]}"
        fv=${VALUE[floe|$i]:-} pv=${VALUE[peer|$i]:-}
        awk -v n="$name" -v u="$unit" -v f="$fv" -v p="$pv" -v t="$target" 'BEGIN {
            ratio = (f != "" && p != "" && p > 0) ? sprintf("%.2f", f / p) : "n/a"
            tgt = (t != "") ? sprintf(">= %d", t) : "> peer"
            v = "ok"
            if (f == "") v = "NO DATA"
            else {
                if (t != "" && f + 0 < t + 0) v = "BELOW TARGET"
                if (p != "" && f + 0 <= p + 0) v = (v == "ok") ? "BEHIND PEER" : v ", BEHIND PEER"
            }
            printf "%-26s %10s %10s %8s %11s  %s\n", n " (" u ")", (f == "" ? "n/a" : sprintf("%.0f", f)), (p == "" ? "n/a" : sprintf("%.0f", p)), ratio, tgt, v
        }'
    done
    fr=${PEAK[floe]:-} pr=${PEAK[peer]:-}
    awk -v f="$fr" -v p="$pr" 'BEGIN {
        ratio = (f != "" && p != "" && p > 0) ? sprintf("%.2f", f / p) : "n/a"
        v = (f == "") ? "NO DATA" : ((p != "" && f + 0 > p + 0) ? "ABOVE PEER" : "ok")
        printf "%-26s %10s %10s %8s %11s  %s\n", "peak RSS (MiB, VmHWM)", (f == "" ? "n/a" : f), (p == "" ? "n/a" : p), ratio, "< peer", v
    }'
    echo
    echo "per figure, medians over runs: p99 latency (ms); CPU cores busy in the timed window: server / s3load / other processes"
    printf '%-26s %9s %9s   %-17s %-17s\n' "" "floe p99" "peer p99" "floe srv/cli/oth" "peer srv/cli/oth"
    awk -v names="$(printf '%s\n' "${FIGURES[@]}" | cut -d'|' -f1 | paste -sd'|')" "$AWK_LIB"'
        function add(key, v) { if (v != "" && v >= 0) vals[key] = vals[key] (vals[key] == "" ? "" : " ") v }
        {
            if (!match($0, /"label":"[^"]*"/)) next
            split(substr($0, RSTART + 9, RLENGTH - 10), lb, "|")
            if (get($0, "errors") != 0 || get($0, "ops") == 0) next
            k = lb[1] "|" lb[2]; secs = get($0, "seconds"); if (secs <= 0) next
            add(k "|p99", get($0, "p99_ms"))
            add(k "|srv", get($0, "server_cpu_s") / secs); add(k "|cli", get($0, "client_cpu_s") / secs)
            add(k "|oth", get($0, "other_cpu_s") / secs)
        }
        function cores(s, i,   a, b, c) {
            a = med(s "|" i "|srv"); b = med(s "|" i "|cli"); c = med(s "|" i "|oth")
            if (c != "" && c > maxoth) maxoth = c
            return (a == "") ? "n/a" : sprintf("%.2f/%.2f/%.2f", a, b, c)
        }
        function ms(s, i,   v) { v = med(s "|" i "|p99"); return (v == "") ? "n/a" : sprintf("%.1f", v) }
        END {
            n = split(names, nm, "|")
            for (i = 1; i <= n; i++)
                printf "%-26s %9s %9s   %-17s %-17s\n", nm[i], ms("floe", i - 1), ms("peer", i - 1), cores("floe", i - 1), cores("peer", i - 1)
            if (maxoth > 0.25)
                printf "WARNING: other processes used up to %.2f of the %d cores during some figures: those figures are\n" \
                       "         understated, and the ratios noisy; rerun on a quiet machine for reference numbers.\n", maxoth, ncpu
        }' ncpu="$(nproc)" "$RESULTS"
    echo
    echo "raw results: $RESULTS; server logs: $OUT; total $(elapsed)s"
} | tee "$OUT/table.txt"
