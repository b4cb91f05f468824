#!/usr/bin/env bash
# bench/catalog.sh: floe's Iceberg REST catalog: loadTable req/s with 1, 8 and
# 16 clients, and append commits/s on one table with 1, 4 and 8 clients; p50
# and p99 latency; CPU of floe, of the load generator and of everything else.
# The same load runs against peer catalogs in the same run (runs alternate),
# and the report gives floe/peer ratios.
# See bench/README.md ("Catalog benchmark"). Usage: bash bench/catalog.sh
#
# Environment (all optional):
#   CATALOG_PEERS="ref seaweedfs"  peers to run beside floe ("" = none):
#                            ref = Apache Iceberg's reference REST server
#                            (tests/compat/restfixture.sh, Maven Central; JDBC
#                            catalog on SQLite, local-file warehouse);
#                            seaweedfs = SeaweedFS's Iceberg REST catalog
#                            (weed mini), used when WEED_BIN exists
#   WEED_BIN=bench/.cache/gobin/weed
#   BENCH_SECONDS=4          length of one timed run
#   BENCH_RUNS=3             runs per figure; the median is reported
#   CATALOG_LOAD_SNAPSHOTS=50  snapshots committed to the loadTable table first
#   BENCH_TMPDIR=bench/out   where the data dir goes (a real disk, not tmpfs)
#   FLOE_BIN=build/floe
#   BENCH_CATALOG=postgres   floe's catalog in a throw-away PostgreSQL (scripts/pg-test-server.sh)
#                            instead of its SQLite file
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # ROOT, CACHE, RUN_SECONDS, RUNS, FLOE_BIN, keys, helpers
LOAD_SNAPSHOTS=${CATALOG_LOAD_SNAPSHOTS:-50}
LOADGEN=$CACHE/bin/catalogload
PEERS=${CATALOG_PEERS-ref seaweedfs}
WEED_BIN=${WEED_BIN:-$CACHE/gobin/weed}
BUDGET_S=240 # no new runs after this many seconds (whole script < 5 min; with peers < 10 min)
[ -n "${PEERS// /}" ] && BUDGET_S=480

bench_start catalog catalog- # OUT=bench/out/catalog-STAMP, RESULTS, DATA

FLOE_PID=
PG_DIR=
declare -A PEER_PID=() # peer -> pid (a process group leader for ref and seaweedfs)
cleanup() {
    if [ -n "$PG_DIR" ]; then bash "$ROOT/scripts/pg-test-server.sh" stop "$PG_DIR" || true; fi
    if [ -n "$FLOE_PID" ]; then stop_pid "$FLOE_PID"; fi
    local p
    for p in "${!PEER_PID[@]}"; do
        kill -TERM -- "-${PEER_PID[$p]}" 2>/dev/null || true
        stop_pid "${PEER_PID[$p]}"
        kill -KILL -- "-${PEER_PID[$p]}" 2>/dev/null || true
    done
    PEER_PID=()
    rm -rf "$DATA"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------- build (the load generator does not depend on src/) ----------
build_loadgen catalogload "$LOADGEN" -lcrypto -lpthread
if [ ! -x "$FLOE_BIN" ]; then
    log "building floe"
    make -C "$ROOT" build >&2
fi

# ---------- floe ----------
P1=$(pick_port)
P2=$(pick_port)
while [ "$P2" = "$P1" ]; do P2=$(pick_port); done
CATALOG_ARGS=()
CATALOG_DESC="SQLite catalog (WAL, synchronous=FULL)"
if [ "${BENCH_CATALOG:-}" = postgres ]; then
    PG_DIR=$(mktemp -d /tmp/floe-pg-bench-XXXXXX)
    PG_URL=$(bash "$ROOT/scripts/pg-test-server.sh" start "$PG_DIR")
    CATALOG_ARGS=(--catalog-db "$PG_URL")
    CATALOG_DESC="PostgreSQL $(psql -XAtq "$PG_URL" -c 'show server_version') catalog on 127.0.0.1 (fsync off, synchronous_commit on)"
fi
log "starting floe: S3 127.0.0.1:$P1, catalog 127.0.0.1:$P2, $CATALOG_DESC"
FLOE_ROOT_ACCESS_KEY_ID=$ACCESS_KEY FLOE_ROOT_SECRET_ACCESS_KEY=$SECRET_KEY \
    "$FLOE_BIN" serve --data-dir "$DATA" --s3-listen "127.0.0.1:$P1" \
    --catalog-listen "127.0.0.1:$P2" --access-log false "${CATALOG_ARGS[@]}" >"$OUT/floe.log" 2>&1 &
FLOE_PID=$!
ENDPOINT=http://127.0.0.1:$P2
wait_http_200 "$ENDPOINT/health" 30 "$FLOE_PID" || { log "floe did not start (see $OUT/floe.log)"; cat "$OUT/floe.log" >&2; exit 1; }

LG=("$LOADGEN" --endpoint "$ENDPOINT" --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY"
    --bucket bench --namespace bench --server-pid "$FLOE_PID")

# ---------- peers: each gets its catalogload arguments in PEER_LG[peer] ----------
declare -A PEER_LG=() PEER_DESC=()
start_ref() { # Apache Iceberg's reference REST catalog server (tests/compat/RestFixture.java)
    command -v java >/dev/null || { log "ref: no java"; return 1; }
    local cp port=$(pick_port) d=$DATA/ref
    cp=$(bash "$ROOT/tests/compat/restfixture.sh" 2>>"$OUT/ref.log" | tail -1) || { log "ref: restfixture.sh failed (see $OUT/ref.log)"; return 1; }
    mkdir -p "$d/wh"
    # JDBC catalog on SQLite (its default: rollback journal, synchronous=FULL); HadoopFileIO
    # on the local disk; its per-request INFO log is turned down, as floe's access log is.
    env $(env | sed -n 's/^\(CATALOG_[A-Z_]*\)=.*/-u \1/p') CATALOG_REST_PORT="$port" \
        CATALOG_URI="jdbc:sqlite:$d/catalog.db" CATALOG_WAREHOUSE="file://$d/wh" \
        setsid java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp" "$ROOT/tests/compat/RestFixture.java" \
        >>"$OUT/ref.log" 2>&1 &
    PEER_PID[ref]=$!
    wait_http_200 "http://127.0.0.1:$port/v1/config" 90 "${PEER_PID[ref]}" || { log "ref did not start (see $OUT/ref.log)"; return 1; }
    PEER_LG[ref]="--endpoint http://127.0.0.1:$port --base /v1 --warehouse ref --auth none --namespace bench --server-pid ${PEER_PID[ref]}"
    PEER_DESC[ref]="Apache Iceberg $(sed -n 's:.*<iceberg.version>\(.*\)</iceberg.version>.*:\1:p' "$ROOT/tests/compat/restfixture/pom.xml") reference REST server (RESTCatalogServer, JdbcCatalog on SQLite, HadoopFileIO on the same disk), java $(java -version 2>&1 | awk -F'"' 'NR==1 {print $2}')"
}
start_seaweedfs() { # SeaweedFS's Iceberg REST catalog (weed mini: master, volume, filer, S3 gateway + Iceberg)
    [ -x "$WEED_BIN" ] || { log "seaweedfs: no $WEED_BIN (bench/README.md says how to build it)"; return 1; }
    local d=$DATA/seaweedfs icep
    icep=$(pick_port)
    mkdir -p "$d"
    # the admin identity from AWS_*; -tableBucket makes the S3 Tables bucket at start
    AWS_ACCESS_KEY_ID=$ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY \
        setsid "$WEED_BIN" mini -dir="$d" -ip=127.0.0.1 -ip.bind=127.0.0.1 -tableBucket=bench \
        -master.port="$(pick_port)" -volume.port="$(pick_port)" -filer.port="$(pick_port)" \
        -webdav=false -admin.ui=false -s3.port="$(pick_port)" -s3.port.iceberg="$icep" -s3.port.lance=0 \
        >>"$OUT/seaweedfs.log" 2>&1 &
    PEER_PID[seaweedfs]=$!
    wait_http_200 "http://127.0.0.1:$icep/v1/config" 120 "${PEER_PID[seaweedfs]}" || { log "seaweedfs did not start (see $OUT/seaweedfs.log)"; return 1; }
    PEER_LG[seaweedfs]="--endpoint http://127.0.0.1:$icep --access-key $ACCESS_KEY --secret-key $SECRET_KEY --base /v1 --warehouse s3://bench --auth sigv4 --sign-name ${WEED_SIGN_NAME:-s3} --namespace bench --server-pid ${PEER_PID[seaweedfs]}"
    local ver
    ver=$(cat "$WEED_BIN.version" 2>/dev/null || (go version -m "$WEED_BIN" 2>/dev/null || true) | awk '$1=="mod" {print $3; exit}')
    PEER_DESC[seaweedfs]="SeaweedFS github.com/seaweedfs/seaweedfs@${ver:-?} weed mini (Iceberg REST catalog of its S3 gateway, table bucket from -tableBucket), SigV4"
}
UP=()
for p in $PEERS; do
    if "start_$p"; then UP+=("$p"); log "peer $p up"; else log "peer $p left out"; fi
done

# lg_cmd SERVER: CMD = the catalogload command line for floe or a peer
lg_cmd() {
    if [ "$1" = floe ]; then CMD=("${LG[@]}"); else
        # shellcheck disable=SC2206 # PEER_LG holds words
        CMD=("$LOADGEN" ${PEER_LG[$1]})
    fi
}
run_lg() { lg_cmd "$1"; shift; "${CMD[@]}" "$@"; }
for p in "${UP[@]}"; do : >"$OUT/results-$p.jsonl"; done

# the loadTable table: created, then LOAD_SNAPSHOTS appends so its metadata is not trivial
for srv in floe "${UP[@]}"; do
    run_lg "$srv" --table t --setup-only 2>>"$OUT/catalogload.err"
    if [ "$LOAD_SNAPSHOTS" -gt 0 ]; then
        run_lg "$srv" --table t --op commit --clients 1 --requests "$LOAD_SNAPSHOTS" --label "prefill|$srv" \
            >>"$OUT/prefill.jsonl" 2>>"$OUT/catalogload.err" || log "$srv: prefill failed"
    fi
    # untimed warm-up (a JVM peer compiles its hot paths): 2 s of loadTable, 4 clients
    run_lg "$srv" --table t --op load --clients 4 --seconds 2 --label "warmup|$srv" \
        >>"$OUT/prefill.jsonl" 2>>"$OUT/catalogload.err" || log "$srv: warm-up failed"
done

# ---------- commit cost against table size (one table, batches of 100 appends) ----------
SCALE_BATCHES=${CATALOG_SCALE_BATCHES:-6}
: >"$OUT/scale.jsonl"
for b in $(seq "$SCALE_BATCHES"); do
    timeout 60 "${LG[@]}" --table scale --op commit --clients 1 --requests 100 --label "scale|$b" \
        >>"$OUT/scale.jsonl" 2>>"$OUT/catalogload.err" || log "scale batch $b failed"
done

# ---------- figures ----------
# name|op|clients|unit|target
FIGURES=(
    "loadTable, 1 client|load|1|req/s|10000"
    "loadTable, 8 clients|load|8|req/s|10000"
    "loadTable, 16 clients|load|16|req/s|10000"
    "append commit, 1 client|commit|1|commits/s|200"
    "append commit, 4 clients|commit|4|commits/s|200"
    "append commit, 8 clients|commit|8|commits/s|200"
)
P99_MAX_LOAD=5 # ms, loadTable

SERVERS=(floe "${UP[@]}")
for i in "${!FIGURES[@]}"; do
    IFS='|' read -r name op clients unit target <<<"${FIGURES[$i]}"
    for r in $(seq "$RUNS"); do
        # the servers take turns, and the order rotates on every run
        order=()
        for k in "${!SERVERS[@]}"; do order+=("${SERVERS[$(((k + r - 1) % ${#SERVERS[@]}))]}"); done
        for srv in "${order[@]}"; do
            if [ "$(elapsed)" -ge "$BUDGET_S" ]; then
                log "time budget reached: skipping '$name' run $r on $srv"
                continue
            fi
            table=t
            # every commit run starts from a new, empty table (metadata grows with each append)
            [ "$op" = commit ] && table=c${clients}r$r
            res=$RESULTS
            [ "$srv" = floe ] || res=$OUT/results-$srv.jsonl
            lg_cmd "$srv"
            line=$(timeout $((RUN_SECONDS + 60)) "${CMD[@]}" --table "$table" --op "$op" \
                --clients "$clients" --seconds "$RUN_SECONDS" --label "$i|$r" \
                2>>"$OUT/catalogload.err") || true
            if [ -z "$line" ]; then
                log "$srv '$name' run $r: no result (see $OUT/catalogload.err)"
                continue
            fi
            echo "$line" >>"$res"
            log "$srv $name run $r: $(echo "$line" | jget req_s) $unit (p50 $(echo "$line" | jget p50_ms) ms," \
                "p99 $(echo "$line" | jget p99_ms) ms; conflicts $(echo "$line" | jget conflicts);" \
                "errors $(echo "$line" | jget errors); cpu s: server $(echo "$line" | jget server_cpu_s)," \
                "client $(echo "$line" | jget client_cpu_s), other $(echo "$line" | jget other_cpu_s))"
        done
    done
done
PEAK_RSS=$(peak_rss_mib "$FLOE_PID")
declare -A PEER_RSS=()
for p in "${UP[@]}"; do PEER_RSS[$p]=$(peak_rss_mib "${PEER_PID[$p]}"); done
cleanup
FLOE_PID=

# ---------- report ----------
GIT_REV=$(git_rev)
FSTYPE=$(fs_of "${BENCH_TMPDIR:-$ROOT/bench/out}")
LOAD_META=$(jget resp_bytes <"$RESULTS" | head -1)
{
    echo "floe catalog benchmark  $STAMP"
    echo "machine : $(machine_line); data dir on $FSTYPE"
    echo "server  : floe $GIT_REV serve --access-log false, catalog port 127.0.0.1, $CATALOG_DESC"
    echo "client  : bench/catalogload, one thread + one keep-alive HTTP/1.1 connection per client, SigV4 's3tables'"
    echo "          (body SHA-256 signed), 1 untimed loadTable per client, then all start at a barrier"
    echo "load    : GET /iceberg/v1/{arn}/namespaces/bench/tables/t; the table has $LOAD_SNAPSHOTS snapshots (metadata ${LOAD_META:-?} bytes)"
    echo "commit  : POST append (assert-ref-snapshot-id main + add-snapshot + set-snapshot-ref) to one table,"
    echo "          new empty table per run; on 409 the client reloads (GET) and retries; value = successful commits/s;"
    echo "          p50/p99 = successful POST; e2e = first attempt to success (conflicts and retries included)"
    echo "runs    : $RUNS x ${RUN_SECONDS}s per figure, median; load average at start $LOAD_AT_START"
    echo
    awk -v names="$(printf '%s\n' "${FIGURES[@]}" | paste -sd'#')" -v p99max="$P99_MAX_LOAD" -v ncpu="$(nproc)" "$AWK_LIB"'
        function add(key, v) { if (v != "") vals[key] = vals[key] (vals[key] == "" ? "" : " ") v }
        {
            if (!match($0, /"label":"[^"]*"/)) next
            split(substr($0, RSTART + 9, RLENGTH - 10), lb, "|")
            k = lb[1]; secs = get($0, "seconds")
            if (get($0, "errors") != 0 || get($0, "ops") == 0 || secs <= 0) { bad[k]++; next }
            add(k "|v", get($0, "req_s")); add(k "|p50", get($0, "p50_ms")); add(k "|p99", get($0, "p99_ms"))
            add(k "|e50", get($0, "e2e_p50_ms")); add(k "|e99", get($0, "e2e_p99_ms"))
            add(k "|cf", get($0, "conflicts") / secs); add(k "|mb", get($0, "resp_bytes") / 1024)
            add(k "|srv", get($0, "server_cpu_s") / secs); add(k "|cli", get($0, "client_cpu_s") / secs)
            add(k "|oth", get($0, "other_cpu_s") / secs)
        }
        END {
            n = split(names, nm, "#")
            printf "%-36s %8s %8s %8s %-21s %s\n", "figure", "value", "p50 ms", "p99 ms", "target", "verdict"
            for (i = 1; i <= n; i++) {
                split(nm[i], f, "|"); k = i - 1
                v = med(k "|v"); p50 = med(k "|p50"); p99 = med(k "|p99")
                load = (f[2] == "load")
                tgt = load ? sprintf(">= %d, p99 < %d ms", f[5], p99max) : sprintf(">= %d", f[5])
                if (v == "") verdict = "NO DATA"
                else {
                    verdict = "ok"
                    if (v + 0 < f[5] + 0) verdict = "BELOW TARGET"
                    if (load && p99 + 0 >= p99max) verdict = (verdict == "ok") ? "P99 ABOVE TARGET" : verdict ", P99 ABOVE TARGET"
                }
                if (bad[k]) verdict = verdict " (" bad[k] " run(s) with errors left out)"
                printf "%-36s %8s %8s %8s %-21s %s\n", f[1] " (" f[4] ")", (v == "" ? "n/a" : sprintf("%.0f", v)),
                       (p50 == "" ? "n/a" : sprintf("%.2f", p50)), (p99 == "" ? "n/a" : sprintf("%.2f", p99)), tgt, verdict
            }
            printf "\nper figure, medians over runs: CPU cores busy in the timed window (floe / catalogload / other processes);\n"
            printf "commits: conflicts (409) per second, end-to-end p50/p99 (ms), metadata size at the end of the run (KiB)\n"
            printf "%-26s %-17s %10s %14s %10s\n", "", "floe/cli/oth", "409/s", "e2e p50/p99", "meta KiB"
            for (i = 1; i <= n; i++) {
                split(nm[i], f, "|"); k = i - 1
                a = med(k "|srv"); b = med(k "|cli"); c = med(k "|oth")
                if (c != "" && c > maxoth) maxoth = c
                cores = (a == "") ? "n/a" : sprintf("%.2f/%.2f/%.2f", a, b, c)
                if (f[2] == "commit" && med(k "|v") != "")
                    printf "%-26s %-17s %10.0f %14s %10.0f\n", f[1], cores, med(k "|cf"),
                           sprintf("%.1f/%.1f", med(k "|e50"), med(k "|e99")), med(k "|mb")
                else
                    printf "%-26s %-17s %10s %14s %10s\n", f[1], cores, "", "", (med(k "|mb") == "" ? "" : sprintf("%.1f", med(k "|mb")))
            }
            if (maxoth > 0.25)
                printf "WARNING: other processes used up to %.2f of the %d cores during some figures: those figures are\n" \
                       "         understated; rerun on a quiet machine for reference numbers.\n", maxoth, ncpu
        }' "$RESULTS"
    echo
    echo "commit cost against table size: 1 client, one table, consecutive batches of 100 appends"
    printf '%-12s %10s %8s %8s %12s %16s\n' "snapshots" "commits/s" "p50 ms" "p99 ms" "meta KiB" "floe CPU ms/commit"
    awk -F'[,:]' '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
        printf "%5d-%-6d %10.0f %8.2f %8.2f %12.0f %16.2f\n", (NR - 1) * 100, NR * 100, v["\"req_s\""], v["\"p50_ms\""],
               v["\"p99_ms\""], v["\"resp_bytes\""] / 1024, v["\"server_cpu_s\""] * 1000 / (v["\"ops\""] > 0 ? v["\"ops\""] : 1) }' "$OUT/scale.jsonl"
    echo
    echo "floe peak RSS (VmHWM): ${PEAK_RSS:-?} MiB"
    if [ "${#UP[@]}" -gt 0 ]; then
        echo
        echo "side by side: the same catalogload runs against each peer in the same run (runs alternate,"
        echo "the order rotates); medians; ratio = floe/peer (above 1: floe ahead)"
        for p in "${UP[@]}"; do echo "  $p: ${PEER_DESC[$p]}"; done
        awk -v names="$(printf '%s\n' "${FIGURES[@]}" | paste -sd'#')" -v peers="${UP[*]}" "$AWK_LIB"'
            FNR == 1 { srv = FILENAME; sub(/.*\/results-?/, "", srv); sub(/\.jsonl$/, "", srv); if (srv == "") srv = "floe" }
            {
                if (!match($0, /"label":"[^"]*"/)) next
                split(substr($0, RSTART + 9, RLENGTH - 10), lb, "|")
                if (get($0, "errors") != 0 || get($0, "ops") == 0 || get($0, "seconds") <= 0) next
                vals[srv "|" lb[1]] = vals[srv "|" lb[1]] (vals[srv "|" lb[1]] == "" ? "" : " ") get($0, "req_s")
                vals[srv "|" lb[1] "|p99"] = vals[srv "|" lb[1] "|p99"] (vals[srv "|" lb[1] "|p99"] == "" ? "" : " ") get($0, "p99_ms")
            }
            END {
                n = split(names, nm, "#"); np = split(peers, pr, " ")
                printf "%-36s %8s", "figure", "floe"
                for (j = 1; j <= np; j++) printf " %10s %8s", pr[j], "ratio"
                printf "   p99 ms: floe"
                for (j = 1; j <= np; j++) printf " / %s", pr[j]
                printf "\n"
                for (i = 1; i <= n; i++) {
                    split(nm[i], f, "|"); k = i - 1
                    fv = med("floe|" k)
                    printf "%-36s %8s", f[1] " (" f[4] ")", (fv == "" ? "n/a" : sprintf("%.0f", fv))
                    p99s = (med("floe|" k "|p99") == "" ? "n/a" : sprintf("%.1f", med("floe|" k "|p99")))
                    for (j = 1; j <= np; j++) {
                        pv = med(pr[j] "|" k)
                        printf " %10s %8s", (pv == "" ? "n/a" : sprintf("%.0f", pv)),
                               (pv == "" || fv == "" || pv == 0) ? "n/a" : sprintf("%.2f", fv / pv)
                        p99s = p99s " / " (med(pr[j] "|" k "|p99") == "" ? "n/a" : sprintf("%.1f", med(pr[j] "|" k "|p99")))
                    }
                    printf "   %s\n", p99s
                }
            }' "$RESULTS" $(for p in "${UP[@]}"; do echo "$OUT/results-$p.jsonl"; done)
        for p in "${UP[@]}"; do echo "$p peak RSS (VmHWM): ${PEER_RSS[$p]:-?} MiB"; done
    fi
    echo
    echo "raw results: $RESULTS; floe log: $OUT/floe.log; total $(elapsed)s"
} | tee "$OUT/table.txt"
