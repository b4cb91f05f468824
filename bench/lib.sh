# bench/lib.sh: what bench/run.sh and bench/catalog.sh share; sourced by both
# (not run on its own). Sets ROOT, CACHE, RUN_SECONDS, RUNS, FLOE_BIN and the
# root credentials; bench_start sets up a run's output and data directories.
# Environment: BENCH_SECONDS, BENCH_RUNS, BENCH_TMPDIR, FLOE_BIN (see the scripts).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=$ROOT/bench/.cache
RUN_SECONDS=${BENCH_SECONDS:-4}
RUNS=${BENCH_RUNS:-3}
FLOE_BIN=${FLOE_BIN:-$ROOT/build/floe}
ACCESS_KEY=benchadmin
SECRET_KEY=bench-secret-key-0123456789

# bench_start TAG OUT_NAME_PREFIX: log tag, clock, load average, bench/out/<prefix>STAMP
# (OUT, RESULTS) and a data dir (DATA) under BENCH_TMPDIR.
bench_start() {
    LOG_TAG=$1
    START_TS=$(date +%s)
    LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
    STAMP=$(date -u +%Y%m%dT%H%M%SZ)
    OUT=$ROOT/bench/out/$2$STAMP
    mkdir -p "$OUT" "$CACHE/bin"
    RESULTS=$OUT/results.jsonl
    : >"$RESULTS"
    mkdir -p "${BENCH_TMPDIR:-$ROOT/bench/out}"
    DATA=$(mktemp -d -p "${BENCH_TMPDIR:-$ROOT/bench/out}" data.XXXXXX)
}

log() { printf '[%s %3ds] %s\n' "$LOG_TAG" "$(($(date +%s) - START_TS))" "$*" >&2; }
elapsed() { echo $(($(date +%s) - START_TS)); }

stop_pid() { # pid: TERM, up to 10 s, then KILL; reaps it
    local pid=$1
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 20000))
        if port_free "$p"; then echo "$p"; return 0; fi
    done
    return 1
}

wait_http_200() { # url timeout_s pid
    local deadline=$(($(date +%s) + $2)) code
    while [ "$(date +%s)" -lt "$deadline" ]; do
        kill -0 "$3" 2>/dev/null || return 1
        code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" || true)
        [ "$code" = 200 ] && return 0
        sleep 0.1
    done
    return 1
}

# build_loadgen NAME BIN LIBS...: bench/NAME.c (+ bench/loadgen.h) -> BIN when stale
build_loadgen() {
    local name=$1 bin=$2
    shift 2
    if [ ! -x "$bin" ] || [ "$ROOT/bench/$name.c" -nt "$bin" ] || [ "$ROOT/bench/loadgen.h" -nt "$bin" ]; then
        log "building $name"
        gcc -O2 -g -Wall -Wextra -Werror -std=gnu17 "$ROOT/bench/$name.c" -o "$bin" "$@"
    fi
}

jget() { sed -n "s/.*\"$1\":\\([-0-9.]*\\).*/\\1/p"; }
peak_rss_mib() { awk '/^VmHWM:/ {printf "%.0f\n", $2/1024}' "/proc/$1/status" 2>/dev/null || true; }
git_rev() { # short HEAD, +dirty when src/ has changes
    local rev
    rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || rev="$rev+dirty"
    echo "$rev"
}
fs_of() { df -T "$1" | awk 'NR==2 {print $2" on "$1}'; }
machine_line() { # "N cores (model), M GiB RAM, Linux R"
    echo "$(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, Linux $(uname -r)"
}

# awk functions for the report: get(line, key) = a number field of a JSON line;
# med(key) = median of vals[key] (space-separated numbers), "" if none.
AWK_LIB='
        function get(l, k) { return match(l, "\"" k "\":[-0-9.]+") ? substr(l, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : "" }
        function med(key,   n, i, j, t, a) {
            if (vals[key] == "") return ""
            n = split(vals[key], a, " ")
            for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }'
