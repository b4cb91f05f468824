#!/usr/bin/env python3
"""bench/nodes.py: floe serve as 1 and as 3 nodes behind HAProxy, on a PostgreSQL
catalog and one shared object store (`make bench-nodes`, about 2 minutes).

For each node count it prints commits/s on one table (BENCH_WRITERS concurrent
writers, each reloading and retrying on a 409), commits/s spread over 100
tables (each writer on tables of its own), loadTable/s, and per request:
  - CPU of the floe nodes, of PostgreSQL (postmaster and backends) and of
    HAProxy, from /proc/PID/stat over the timed window (catalogload --cpu-group);
  - what the database did: statements (pg_stat_statements calls, BEGIN and
    COMMIT included), transactions (pg_stat_database xact_commit+rollback) and
    round trips (floe's floe_catalog_pg_round_trips_total on /metrics);
then PUT and GET MiB/s of 8 MiB objects through the floe nodes onto the store
against the store directly, with the CPU per MiB of floe and of the store.
"per commit" counts everything a successful commit cost, its lost
compare-and-swaps and reloads included. The CPU per request is the figure to
project from: a node's ceiling is about cores / (floe CPU per request), the
database's cores / (PostgreSQL CPU per request).

Method: PostgreSQL from scripts/pg-test-server.sh (initdb in a temp dir, fsync
off, synchronous_commit on, pg_stat_statements loaded); each node count gets a
fresh database. The store is another floe serve's data plane (its own fs data
dir under bench/out/, fsyncs on). Nodes: `floe serve --catalog-db URL
--object-store s3://bench-store/nN --object-store-endpoint ... --access-log
false --maintenance-interval 0`, each with its own data dir. HAProxy (Debian)
balances both ports round-robin over the nodes, also for 1 node, so both rows
pay the same hop. The load generators are bench/catalogload.c and
bench/s3load.c (built into bench/.cache/bin when stale), one keep-alive
connection per client. Each phase runs BENCH_SECONDS (default 4) once.

Env: FLOE_BIN (build/floe), BENCH_SECONDS, BENCH_WRITERS (8), BENCH_READERS (8),
BENCH_NODES ("1 3"), BENCH_TABLES (100), BENCH_TMPDIR. Raw JSON lines and the
top statements of each phase go to bench/out/nodes-<stamp>/.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOE = os.environ.get("FLOE_BIN", os.path.join(ROOT, "build", "floe"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
WRITERS = int(os.environ.get("BENCH_WRITERS", "8"))
READERS = int(os.environ.get("BENCH_READERS", "8"))
NODE_COUNTS = [int(x) for x in os.environ.get("BENCH_NODES", "1 3").split()]
NTABLES = int(os.environ.get("BENCH_TABLES", "100"))
AK, SK = "benchadmin", "bench-secret-key-0123456789"
CACHE = os.path.join(ROOT, "bench", ".cache", "bin")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
PG_SCRIPT = os.path.join(ROOT, "scripts", "pg-test-server.sh")
START = time.time()
PROCS = []


def log(msg):
    print("[nodes %3ds] %s" % (time.time() - START, msg), file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build(name, libs):
    src, hdr, out = (os.path.join(ROOT, "bench", name + ".c"), os.path.join(ROOT, "bench", "loadgen.h"),
                     os.path.join(CACHE, name))
    if not os.path.exists(out) or max(os.path.getmtime(src), os.path.getmtime(hdr)) > os.path.getmtime(out):
        log("building " + name)
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(["gcc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-std=gnu17", src, "-o", out] + libs,
                       check=True)
    return out


def wait_health(url, proc, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit("%s exited (%d) before %s answered" % (proc.args[0], proc.returncode, url))
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.1)
    raise SystemExit("%s did not answer in %d s" % (url, timeout))


def spawn(cmd, logpath, env=None):
    p = subprocess.Popen(cmd, stdout=open(logpath, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         env=env)
    PROCS.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


_IAM_KEY = []


def iam_master_key():
    """One IAM master key file for every node: nodes on one catalog must share it."""
    if not _IAM_KEY:
        path = os.path.join(tempfile.mkdtemp(prefix="floe-bench-key-"), "iam-master-key")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32))
        os.close(fd)
        _IAM_KEY.append(path)
    return _IAM_KEY[0]


def floe(data, logpath, extra):
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=AK, FLOE_ROOT_SECRET_ACCESS_KEY=SK,
               FLOE_OBJECT_STORE_SECRET_ACCESS_KEY=SK, FLOE_IAM_MASTER_KEY_FILE=iam_master_key())
    for attempt in range(3):     # a free port can be taken by another process before floe binds it
        s3p, catp = free_port(), free_port()
        p = spawn([FLOE, "serve", "--data-dir", data, "--s3-listen", "127.0.0.1:%d" % s3p, "--catalog-listen",
                   "127.0.0.1:%d" % catp, "--access-log", "false", "--maintenance-interval", "0"] + extra, logpath,
                  env)
        try:
            wait_health("http://127.0.0.1:%d/health" % catp, p)
            return p, s3p, catp
        except SystemExit:
            stop(p)
            if attempt == 2:
                raise


def psql(url, sql):
    r = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", url, "-c", sql], capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        raise SystemExit("psql %r: %s" % (sql, r.stderr))
    return r.stdout.strip()


def metric(port, name):
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    m = re.search(r"^%s (\d+)" % name, body, re.M)
    return int(m.group(1)) if m else 0


def haproxy(out, tag, nodes):
    cat_port, s3_port = free_port(), free_port()
    def servers(idx):
        return "\n".join("    server n%d 127.0.0.1:%d" % (i, n[idx]) for i, n in enumerate(nodes))
    cfg = os.path.join(out, "haproxy-%s.cfg" % tag)
    with open(cfg, "w") as f:
        f.write("""global
    maxconn 1024
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    http-reuse always
frontend catalog
    bind 127.0.0.1:%d
    default_backend catalog
frontend s3
    bind 127.0.0.1:%d
    default_backend s3
backend catalog
    balance roundrobin
%s
backend s3
    balance roundrobin
%s
""" % (cat_port, s3_port, servers(2), servers(1)))
    p = spawn([HAPROXY, "-f", cfg, "-db"], os.path.join(out, "haproxy-%s.log" % tag))
    wait_health("http://127.0.0.1:%d/health" % cat_port, p)
    return p, cat_port, s3_port


def run_json(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS + 120)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit("%s failed (%d): %s" % (what, r.returncode, r.stderr[-2000:]))
    res = json.loads(lines[-1])
    if r.returncode:
        log("%s: exit %d, %s errors: %s" % (what, r.returncode, res.get("errors"), r.stderr.strip()[-600:]))
    return res


def main():
    if not os.path.exists(HAPROXY):
        raise SystemExit("haproxy is not installed (apt-get install haproxy)")
    catload = build("catalogload", ["-lcrypto", "-lpthread"])
    s3load = build("s3load", ["-lcurl", "-lcrypto", "-lpthread"])
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = os.path.join(ROOT, "bench", "out", "nodes-" + stamp)
    os.makedirs(out)
    tmp = os.environ.get("BENCH_TMPDIR", os.path.join(ROOT, "bench", "out"))
    data = tempfile.mkdtemp(prefix="data.nodes.", dir=tmp)
    pgdir = tempfile.mkdtemp(prefix="floe-pg-bench-", dir="/tmp")
    results = open(os.path.join(out, "results.jsonl"), "w")
    load_at_start = open("/proc/loadavg").read().split()[:3]
    rows, dataplane = [], []
    try:
        env = dict(os.environ, PG_TEST_SERVER_OPTS="-c shared_preload_libraries=pg_stat_statements"
                   " -c pg_stat_statements.track=all -c pg_stat_statements.max=1000")
        r = subprocess.run(["bash", PG_SCRIPT, "start", pgdir], capture_output=True, text=True, env=env, timeout=120)
        if r.returncode:
            raise SystemExit("PostgreSQL did not start (%d): %s" % (r.returncode, r.stderr))
        pg_base = r.stdout.strip().splitlines()[-1]
        pg_version = psql(pg_base, "SHOW server_version")
        postmaster = int(open(os.path.join(pgdir, "data", "postmaster.pid")).readline())
        log("PostgreSQL %s, postmaster %d" % (pg_version, postmaster))

        store, store_s3, _ = floe(os.path.join(data, "store"), os.path.join(out, "store.log"), [])
        store_ep = "http://127.0.0.1:%d" % store_s3
        r = subprocess.run([s3load, "--endpoint", store_ep, "--access-key", AK, "--secret-key", SK, "--bucket",
                            "bench-store", "--op", "put", "--size", "1K", "--clients", "1", "--requests", "1"],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("cannot make the store's bucket: %s" % r.stderr)

        for n in NODE_COUNTS:
            db = "nodes%d" % n
            psql(pg_base, "CREATE DATABASE %s" % db)
            url = pg_base.rsplit("/", 1)[0] + "/" + db
            psql(url, "CREATE EXTENSION pg_stat_statements")
            dbid = psql(url, "SELECT oid FROM pg_database WHERE datname = current_database()")
            nodes = []
            for i in range(n):
                nodes.append(floe(os.path.join(data, "n%d-%d" % (n, i)), os.path.join(out, "node%d-%d.log" % (n, i)),
                                  ["--catalog-db", url, "--object-store", "s3://bench-store/n%d" % n,
                                   "--object-store-endpoint", store_ep, "--object-store-path-style",
                                   "--object-store-access-key-id", AK]))
            lb, lb_cat, lb_s3 = haproxy(out, str(n), nodes)
            floe_pids = ",".join(str(p.pid) for p, _, _ in nodes)
            groups = ["--cpu-group", "floe:" + floe_pids, "--cpu-group", "postgres:+%d" % postmaster,
                      "--cpu-group", "haproxy:%d" % lb.pid]
            base = [catload, "--endpoint", "http://127.0.0.1:%d" % lb_cat, "--access-key", AK, "--secret-key", SK,
                    "--bucket", "bench", "--namespace", "bench"]
            log("%d node(s) up (pids %s), HAProxy %d; setup" % (n, floe_pids, lb.pid))
            subprocess.run(base + ["--table", "m", "--tables", str(NTABLES), "--setup-only"], check=True,
                           capture_output=True)
            # loadTable reads a table with 50 snapshots (as bench/catalog.sh)
            run_json(base + ["--table", "l", "--op", "commit", "--clients", "1", "--requests", "50"], "setup")

            phases = [
                ("commit, 1 table", "commit", WRITERS, ["--table", "one"]),
                ("commit, %d tables" % NTABLES, "commit", WRITERS, ["--table", "m", "--tables", str(NTABLES)]),
                ("loadTable", "load", READERS, ["--table", "l"]),
            ]
            q = ("FROM pg_stat_statements WHERE dbid = %s AND query NOT ILIKE '%%pg_stat%%'"
                 " AND query NOT ILIKE '%%xact_commit%%'" % dbid)

            def db_counts():
                # one transaction of its own; backends flush their counters at most once a second
                time.sleep(1.1)
                x, st = psql(url, "SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = "
                                  "'%s'), (SELECT coalesce(sum(calls), 0) %s)" % (db, q)).split("|")
                rt = sum(metric(c, "floe_catalog_pg_round_trips_total") for _, _, c in nodes)
                return int(x), int(st), rt

            for label, op, clients, extra in phases:
                cmd = base + extra + ["--op", op, "--clients", str(clients)]
                psql(url, "SELECT pg_stat_statements_reset()")
                c0 = db_counts()
                # the same command for one request: its set-up and warm-up, subtracted below
                dry = run_json(cmd + ["--requests", "1"], label + " (set-up)")
                c1 = db_counts()
                res = run_json(cmd + ["--seconds", str(SECONDS), "--label", "%s/%d" % (label, n)] + groups, label)
                c2 = db_counts()
                setup = [b - a for a, b in zip(c0, c1)]
                timed = [b - a for a, b in zip(c1, c2)]
                net = [t - s for t, s in zip(timed, setup)]
                stmts, xacts, trips = net[1], net[0], net[2]
                res["ops_net"] = max(1, res["ops"] - dry["ops"])
                top = psql(url, "SELECT calls || E'\\t' || round(total_exec_time::numeric, 1) || E' ms\\t' || "
                                "left(regexp_replace(query, '\\s+', ' ', 'g'), 160) %s ORDER BY calls DESC LIMIT 25" % q)
                with open(os.path.join(out, "statements-%d-%s.txt" % (n, op + ("-many" if "tables" in label else ""))),
                          "w") as f:
                    f.write(top + "\n")
                res.update(nodes=n, figure=label, statements=stmts, xacts=xacts, round_trips=trips)
                results.write(json.dumps(res) + "\n")
                results.flush()
                rows.append(res)
                log("%s, %d node(s): %.0f/s, %d errors" % (label, n, res["req_s"], res["errors"]))

            # the data plane: 8 MiB objects through the nodes onto the store
            for op in ("put", "get"):
                res = run_json([s3load, "--endpoint", "http://127.0.0.1:%d" % lb_s3, "--access-key", AK, "--secret-key",
                                SK, "--bucket", "bench-data", "--op", op, "--size", "8M", "--clients", "4",
                                "--seconds", str(SECONDS), "--key-ring", "2", "--objects", "8",
                                "--label", "through %d" % n] + groups[:2] + ["--cpu-group", "store:%d" % store.pid,
                                                                          "--cpu-group", "haproxy:%d" % lb.pid],
                               "%s through floe" % op)
                res.update(nodes=n, figure="%s 8 MiB through %d node(s)" % (op.upper(), n))
                results.write(json.dumps(res) + "\n")
                dataplane.append(res)
            stop(lb)
            for p, _, _ in nodes:
                stop(p)
        for op in ("put", "get"):
            res = run_json([s3load, "--endpoint", store_ep, "--access-key", AK, "--secret-key", SK, "--bucket",
                            "bench-direct", "--op", op, "--size", "8M", "--clients", "4", "--seconds", str(SECONDS),
                            "--key-ring", "2", "--objects", "8", "--label", "direct",
                            "--cpu-group", "store:%d" % store.pid], "%s direct" % op)
            res.update(nodes=0, figure="%s 8 MiB, the store directly" % op.upper())
            results.write(json.dumps(res) + "\n")
            dataplane.append(res)
    finally:
        for p in PROCS:
            stop(p)
        subprocess.run(["bash", PG_SCRIPT, "stop", pgdir], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)
        results.close()
    report(rows, dataplane, pg_version, load_at_start, out)


def report(rows, dataplane, pg_version, load_at_start, out):
    cores = os.cpu_count()
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--", "src"]).returncode
    hv = subprocess.run([HAPROXY, "-v"], capture_output=True, text=True).stdout.split("\n")[0]
    print("floe nodes on PostgreSQL (bench/nodes.py): %s (tree %s%s), PostgreSQL %s, %s" % (
        FLOE, rev, "+dirty" if dirty else "", pg_version, hv))
    print("machine: %d cores (%s), load average at start %s; %g s per figure, one run each; %d writers, %d readers" % (
        cores, model, " ".join(load_at_start), SECONDS, WRITERS, READERS))
    if max(NODE_COUNTS) > 1 and cores < max(NODE_COUNTS) + 2:
        print("NOTE: %d nodes share this machine's %d cores with PostgreSQL, HAProxy, the store and the load "
              "generator:\n      the multi-node rows show what coordination costs, not a speed-up. Project from "
              "the CPU per request." % (max(NODE_COUNTS), cores))
    print()
    print("%-20s %5s %8s %7s %7s %6s | %-28s | %-22s" % ("", "", "", "", "", "", "CPU per request (ms)",
                                                            "PostgreSQL per request"))
    print("%-20s %5s %8s %7s %7s %6s | %6s %6s %6s %6s | %6s %6s %7s" % (
        "figure", "nodes", "req/s", "p50 ms", "p99 ms", "409s", "floe", "pg", "proxy", "other", "stmts", "xacts",
        "trips"))
    for r in rows:
        ops = r["ops"] or 1
        cpu = r.get("cpu", {})
        ms = lambda k: 1000.0 * cpu.get(k, 0) / ops  # noqa: E731
        known = sum(cpu.values()) + r["client_cpu_s"]
        other = max(0.0, r["other_cpu_s"] + r["server_cpu_s"] + r["client_cpu_s"] - known) if r["other_cpu_s"] >= 0 else 0
        print("%-20s %5d %8.0f %7.2f %7.2f %6d | %6.3f %6.3f %6.3f %6.3f | %6.2f %6.2f %7.2f" % (
            r["figure"], r["nodes"], r["req_s"], r["e2e_p50_ms"], r["e2e_p99_ms"], r["conflicts"], ms("floe"),
            ms("postgres"), ms("haproxy"), 1000.0 * other / ops, r["statements"] / r["ops_net"],
            r["xacts"] / r["ops_net"], r["round_trips"] / r["ops_net"]))
    print()
    print("Per commit: everything a successful commit cost, its lost compare-and-swaps (409s) and reloads included;")
    print("stmts = pg_stat_statements calls (BEGIN and COMMIT count), xacts = pg_stat_database commits+rollbacks,")
    print("trips = floe's floe_catalog_pg_round_trips_total; 'other' = the rest of the machine (other users, kernel).")
    print("The load generator's set-up and warm-up (measured by the same command for one request) are subtracted.")
    print("Ceilings per core, from the CPU per request (1000 / ms):")
    for r in rows:
        ops = r["ops"] or 1
        cpu = r.get("cpu", {})
        f, p = cpu.get("floe", 0) / ops, cpu.get("postgres", 0) / ops
        print("  %-20s %d node(s): floe %7.0f req/s per core, PostgreSQL %7.0f req/s per core" % (
            r["figure"], r["nodes"], 1 / f if f else 0, 1 / p if p else 0))
    print()
    print("%-32s %8s %8s %10s %10s %10s" % ("data plane (4 clients)", "MiB/s", "p99 ms", "floe ms/MiB",
                                           "store ms/MiB", "proxy ms/MiB"))
    for r in dataplane:
        mib = r["bytes"] / 1048576.0 or 1
        cpu = r.get("cpu", {})
        print("%-32s %8.0f %8.1f %10.2f %10.2f %10.2f" % (
            r["figure"], r["mib_s"], r["p99_ms"], 1000 * cpu.get("floe", 0) / mib, 1000 * cpu.get("store", 0) / mib,
            1000 * cpu.get("haproxy", 0) / mib))
    errs = [r for r in rows + dataplane if r.get("errors")]
    if errs:
        print("\nERRORS in: " + ", ".join("%s (%d)" % (r["figure"], r["errors"]) for r in errs))
    print("\nraw: %s" % out)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        for p in PROCS:
            stop(p)
        sys.exit(130)
