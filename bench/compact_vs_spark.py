#!/usr/bin/env python3
"""floe's compaction beside Spark's rewrite_data_files on the same small-file table, and the
PyIceberg scan time of a 10,000-small-file table before and after floe's compaction (issue 10).

Usage: .venv/bin/python bench/compact_vs_spark.py [--files 1000] [--file-kib 100] [--partitions 10]
           [--spark-masters local[1],local[2]] [--scan-files 10000] [--scan-runs 3]
           [--skip-spark] [--skip-scan] [--floe build/floe]
       make bench-compact

Starts one `floe serve` (free 127.0.0.1 ports, fresh data directory under bench/, removed at the
end, `--maintenance-interval 0` so the server's own scheduler never compacts behind the bench's
back), one table bucket and namespace, then:

1. Compaction. The same JSON lines (deterministic: seeded random payloads) are appended by
   `floe append` into one table per compactor ("floe", and one per Spark master), all with the
   same schema, identity(cat) partitioning and --target-file-size, so each holds the same rows
   in the same number of files of the same sizes (printed). Then:
   - floe: `floe maintenance run NS.T --job compaction` (default target 512 MiB: one file per
     partition), timed; CPU = the CLI process's rusage (user + system). Its rewrite is one thread.
   - Spark: per master, a fresh pyspark process (Spark 3.5 + iceberg-spark-runtime, the session
     of tests/integration/test_spark_sql.py: REST catalog with SigV4, S3FileIO on floe's S3)
     first compacts a small warm-up table (JIT, class loading, catalog clients), then runs
     `CALL cat.system.rewrite_data_files(table => 'ns.t', options => map('min-input-files','2',
     'target-file-size-bytes','536870912'))`, timed; CPU = the JVM's utime + stime from
     /proc/PID/stat (all its threads: tasks, driver, GC, JIT) over the CALL.
   floe serve's own CPU over each window (the S3 GETs/PUTs and catalog commits it served) is
   printed beside, and counted in the "with server" figures. MB = input bytes (the data files
   replaced, as each compactor reports them). "per core" = per CPU-second of the compactor.
   Afterwards PyIceberg reads every table: the rows must equal the floe table's (sorted by id),
   and each table must be down to one file per partition.
2. Scan. A table of --scan-files small files (one `floe append`, one file per batch and
   partition), timed `table.scan().to_arrow()` in PyIceberg (fresh load_table, median of
   --scan-runs) before and after `floe maintenance run --job compaction`.
"""
import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3

sys.path.insert(0, str(Path(__file__).resolve().parent))
from commit_updates import KEY, REGION, SECRET, Rest, free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ICEBERG_VERSION = os.environ.get("SPARK_ICEBERG_VERSION", "1.10.1")
JARS = ROOT / "tests/compat/.cache" / ("spark-iceberg-" + ICEBERG_VERSION)
TARGET = 512 * 1024 * 1024
NS = "bench"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "cat", "required": False, "type": "string"},
    {"id": 3, "name": "payload", "required": False, "type": "string"}]}
SPEC = {"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "name": "cat", "transform": "identity"}]}
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """utime + stime of a whole process (every thread), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def aws_env():
    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION=REGION,
                      AWS_REGION=REGION, AWS_EC2_METADATA_DISABLED="true")


# ---------------------------------------------------------------- Spark child process
def spark_child(cfg):
    """Runs in its own process (one JVM per master); prints one JSON line."""
    aws_env()
    from pyspark.sql import SparkSession
    jars = sorted(str(p) for p in JARS.glob("*.jar"))
    tmp = tempfile.mkdtemp(prefix="spark-", dir=cfg["tmp"])
    c = "spark.sql.catalog.floe"
    conf = {
        "spark.jars": ",".join(jars),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": "-Daws.region=%s -Duser.timezone=UTC" % REGION,
        "spark.local.dir": tmp + "/local",
        "spark.sql.warehouse.dir": tmp + "/warehouse",
        c: "org.apache.iceberg.spark.SparkCatalog",
        c + ".type": "rest",
        c + ".uri": cfg["catalog"] + "/iceberg",
        c + ".warehouse": cfg["arn"],
        c + ".rest.sigv4-enabled": "true",
        c + ".rest.signing-name": "s3tables",
        c + ".rest.signing-region": REGION,
        c + ".rest.access-key-id": KEY,
        c + ".rest.secret-access-key": SECRET,
        c + ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        c + ".s3.endpoint": cfg["s3"],
        c + ".s3.path-style-access": "true",
        c + ".s3.access-key-id": KEY,
        c + ".s3.secret-access-key": SECRET,
        c + ".client.region": REGION,
        c + ".cache-enabled": "false",
    }
    t0 = time.perf_counter()
    b = SparkSession.builder.master(cfg["master"]).appName("floe-compact-bench")
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    started = time.perf_counter() - t0

    def call(table):
        return spark.sql("CALL floe.system.rewrite_data_files(table => '%s.%s', options => map("
                         "'min-input-files','2','target-file-size-bytes','%d'))" % (NS, table, TARGET)).collect()

    t0 = time.perf_counter()
    call(cfg["warm"])
    warm = time.perf_counter() - t0
    j0, s0, t0 = proc_cpu(jvm_pid), proc_cpu(cfg["server_pid"]), time.perf_counter()
    row = call(cfg["table"])[0].asDict()
    wall = time.perf_counter() - t0
    j1, s1 = proc_cpu(jvm_pid), proc_cpu(cfg["server_pid"])
    spark.stop()
    print(json.dumps({"master": cfg["master"], "start_s": started, "warmup_s": warm, "wall": wall,
                      "cpu": j1 - j0, "server_cpu": s1 - s0, "files_in": row["rewritten_data_files_count"],
                      "files_out": row["added_data_files_count"], "bytes_in": row["rewritten_bytes_count"],
                      "failed": row.get("failed_data_files_count", 0)}))


# ---------------------------------------------------------------- helpers of the main process
class Bench:
    def __init__(self, a):
        self.a = a
        self.data = tempfile.mkdtemp(prefix="floe-cvsbench-", dir=ROOT / "bench")
        s3p, catp = free_port(), free_port()
        env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET)
        self.proc = subprocess.Popen([a.floe, "serve", "--data-dir", self.data + "/d", "--s3-listen",
                                      "127.0.0.1:%d" % s3p, "--catalog-listen", "127.0.0.1:%d" % catp,
                                      "--region", REGION, "--maintenance-interval", "0", "--access-log", "false"],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.s3 = "http://127.0.0.1:%d" % s3p
        self.catalog = "http://127.0.0.1:%d" % catp
        for _ in range(400):
            try:
                urllib.request.urlopen(self.s3 + "/health", timeout=1)
                break
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.05)
        tb = boto3.client("s3tables", endpoint_url=self.catalog, aws_access_key_id=KEY,
                          aws_secret_access_key=SECRET, region_name=REGION)
        self.arn = tb.create_table_bucket(name="compactbench")["arn"]
        self.rest = Rest(self.catalog, self.arn)
        assert self.rest.req("POST", "namespaces", {"namespace": [NS]}).status_code == 200
        self.cli_env = dict(os.environ, FLOE_ACCESS_KEY_ID=KEY, FLOE_SECRET_ACCESS_KEY=SECRET)
        self.common = ["--catalog-uri", self.catalog + "/iceberg", "--warehouse", self.arn, "--region", REGION]
        self._cat = None

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)

    def create(self, name, spec=SPEC):
        r = self.rest.req("POST", "namespaces/%s/tables" % NS, {"name": name, "schema": SCHEMA, "partition-spec": spec})
        assert r.status_code == 200, r.text

    def append(self, name, lines, target_bytes, batch_rows=4096):
        p = subprocess.run([self.a.floe, "append", "%s.%s" % (NS, name), "--file", "-", "--output", "json",
                            "--batch-rows", str(batch_rows), "--target-file-size", str(target_bytes)] + self.common,
                           input=lines, env=self.cli_env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def compact(self, name):
        """floe maintenance run --job compaction: (report, wall s, CLI CPU s, server CPU s)."""
        before, s0 = resource.getrusage(resource.RUSAGE_CHILDREN), proc_cpu(self.proc.pid)
        t0 = time.perf_counter()
        p = subprocess.run([self.a.floe, "maintenance", "run", "%s.%s" % (NS, name), "--job", "compaction",
                            "--output", "json"] + self.common, env=self.cli_env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after, s1 = resource.getrusage(resource.RUSAGE_CHILDREN), proc_cpu(self.proc.pid)
        assert p.returncode == 0, p.stdout + p.stderr
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return json.loads(p.stdout), wall, cpu, s1 - s0

    def catalog_(self):
        if self._cat is None:
            from pyiceberg.catalog import load_catalog
            aws_env()
            self._cat = load_catalog("floe", **{
                "type": "rest", "uri": self.catalog + "/iceberg", "warehouse": self.arn,
                "rest.sigv4-enabled": "true", "rest.signing-name": "s3tables", "rest.signing-region": REGION,
                "s3.endpoint": self.s3, "s3.access-key-id": KEY, "s3.secret-access-key": SECRET,
                "s3.region": REGION, "s3.force-virtual-addressing": "false"})
        return self._cat

    def table(self, name):
        return self.catalog_().load_table("%s.%s" % (NS, name))

    def files(self, name):
        """(data files, bytes) of the current snapshot, as PyIceberg plans them."""
        tasks = list(self.table(name).scan().plan_files())
        return len(tasks), sum(t.file.file_size_in_bytes for t in tasks)


def gen_lines(n_rows, partitions, seed=10):
    rnd = random.Random(seed)
    return "".join('{"id":%d,"cat":"c%d","payload":"%s"}\n' % (i, i % partitions, rnd.randbytes(50).hex())
                   for i in range(n_rows))


def fmt_row(name, files, mb, wall, cpu, scpu):
    return "%-16s %6d %8.1f %7.2f %7.2f %7.2f %8.1f %8.0f %9.1f %9.0f %9.1f" % (
        name, files, mb, wall, cpu, scpu, mb / wall, files / wall, mb / cpu, files / cpu, mb / (cpu + scpu))


# ---------------------------------------------------------------- the two parts
def part_compaction(b, a):
    masters = [] if a.skip_spark else [m for m in a.spark_masters.split(",") if m]
    names = ["floe"] + ["spark%d" % i for i in range(len(masters))]
    per_file = max(1, a.file_kib * 1024 // 84)  # files roll at ~70 KB of Parquet per 100 KiB target
    lines = gen_lines(per_file * a.files, a.partitions)
    t0 = time.perf_counter()
    for n in names:
        b.create(n)
        b.append(n, lines, a.file_kib * 1024)
    if masters:
        b.create("warm")
        b.append("warm", gen_lines(20000, a.partitions, seed=11), 20 * 1024)
    layouts = {n: b.files(n) for n in names}
    print("set-up: %d rows into %d table(s) in %.1f s; files, bytes per table: %s" % (
        lines.count("\n"), len(names), time.perf_counter() - t0,
        ", ".join("%s %d / %d" % (n, f, by) for n, (f, by) in layouts.items())), flush=True)
    assert len(set(layouts.values())) == 1, "the tables differ before compaction: %s" % layouts

    res, wall, cpu, scpu = b.compact("floe")
    assert res["filesIn"] == layouts["floe"][0], res
    rows = [("floe", res["filesIn"], res["bytesIn"] / 1e6, wall, cpu, scpu, res["filesOut"])]
    print("floe: %s" % json.dumps({k: res[k] for k in ("filesIn", "bytesIn", "filesOut", "bytesOut", "recordsIn",
                                                          "recordsOut", "commits", "durationMs") if k in res}),
          flush=True)

    for i, m in enumerate(masters):
        cfg = {"master": m, "table": "spark%d" % i, "warm": "warm", "catalog": b.catalog, "s3": b.s3, "arn": b.arn,
               "server_pid": b.proc.pid, "tmp": b.data}
        p = subprocess.run([sys.executable, __file__, "--spark-child", json.dumps(cfg)], capture_output=True,
                           text=True, timeout=900)
        out = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        assert p.returncode == 0 and out, p.stdout[-2000:] + p.stderr[-4000:]
        r = json.loads(out[-1])
        print("spark %s: %s" % (m, json.dumps(r)), flush=True)
        assert r["files_in"] == layouts["floe"][0] and not r["failed"], r
        rows.append(("spark " + m, r["files_in"], r["bytes_in"] / 1e6, r["wall"], r["cpu"], r["server_cpu"],
                     r["files_out"]))

    # every table reads back the same rows, now in one file per partition
    ref = b.table("floe").scan().to_arrow().sort_by("id")
    assert ref.num_rows == lines.count("\n")
    out_bytes = []
    for n in names:
        nf, nb = b.files(n)
        assert nf == a.partitions, (n, nf)
        out_bytes.append("%s %d" % (n, nb))
        if n != "floe":
            t = b.table(n).scan().to_arrow().select(ref.column_names).sort_by("id")
            assert t.equals(ref), "%s reads different rows than floe" % n
    print("read back: %d tables, each %d rows equal to floe's table, %d files each (PyIceberg); bytes out: %s" % (
        len(names), ref.num_rows, a.partitions, ", ".join(out_bytes)))

    print()
    print("%-16s %6s %8s %7s %7s %7s %8s %8s %9s %9s %9s" % (
        "compactor", "files", "MB in", "wall s", "CPU s", "srv CPU", "MB/s", "files/s", "MB/CPU-s",
        "files/CPU", "MB/(CPU+srv)"))
    for name, files, mb, wall, cpu, scpu, _ in rows:
        print(fmt_row(name, files, mb, wall, cpu, scpu))
    floe = rows[0]
    for name, files, mb, wall, cpu, scpu, _ in rows[1:]:
        print("floe / %-14s per core (CPU-s): %.1fx MB/s, %.1fx files/s; with server CPU: %.1fx; wall: %.1fx" % (
            name, (floe[2] / floe[4]) / (mb / cpu), (floe[1] / floe[4]) / (files / cpu),
            (floe[2] / (floe[4] + floe[5])) / (mb / (cpu + scpu)), wall / floe[3]))
    print(flush=True)


def part_scan(b, a):
    # one file per batch and partition: --target-file-size 1 rolls after every batch written
    parts, batch = 10, 1000
    n_rows = a.scan_files * batch // parts
    t0 = time.perf_counter()
    b.create("scan")
    r = b.append("scan", gen_lines(n_rows, parts, seed=12), 1, batch_rows=batch)
    nf, nb = b.files("scan")
    print("scan set-up: %d rows in %d files (%.1f MB) in %.1f s" % (r["added-records"], nf, nb / 1e6,
                                                                    time.perf_counter() - t0), flush=True)

    def timed_scans():
        """(to_arrow times, plan_files times): each run loads the table afresh."""
        times, plans, rows = [], [], None
        for _ in range(a.scan_runs):
            t0 = time.perf_counter()
            rows = b.table("scan").scan().to_arrow().num_rows
            times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            list(b.table("scan").scan().plan_files())
            plans.append(time.perf_counter() - t0)
        assert rows == n_rows, rows
        return times, plans

    before, plan_before = timed_scans()
    res, wall, cpu, scpu = b.compact("scan")
    nf2, _ = b.files("scan")
    after, plan_after = timed_scans()
    print("floe compaction: %d -> %d files in %.1f s wall (CLI CPU %.1f s, server CPU %.1f s)" % (
        res["filesIn"], res["filesOut"], wall, cpu, scpu))
    med = statistics.median
    print("PyIceberg scan().to_arrow() of %d rows, %d runs each:" % (n_rows, a.scan_runs))
    for label, n, t, pl in (("before", nf, before, plan_before), ("after", nf2, after, plan_after)):
        print("  %-6s %6d files: %s s, median %.2f s (load + plan_files alone: median %.2f s)" % (
            label, n, " ".join("%.2f" % x for x in t), med(t), med(pl)))
    print("  before/after: %.1fx" % (med(before) / med(after)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--file-kib", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--spark-masters", default="local[1],local[2]")
    ap.add_argument("--scan-files", type=int, default=10000)
    ap.add_argument("--scan-runs", type=int, default=3)
    ap.add_argument("--skip-spark", action="store_true")
    ap.add_argument("--skip-scan", action="store_true")
    ap.add_argument("--skip-compaction", action="store_true")
    ap.add_argument("--floe", default=os.environ.get("FLOE_BIN", str(ROOT / "build" / "floe")))
    ap.add_argument("--spark-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.spark_child:
        return spark_child(json.loads(a.spark_child))
    if not a.skip_spark and not a.skip_compaction:
        if not shutil.which("java"):
            sys.exit("java is not installed (scripts/install-deps.sh installs it), or pass --skip-spark")
        if not JARS.is_dir():
            subprocess.run(["bash", str(ROOT / "tests/compat/fetch.sh"), "spark"], check=True,
                           env=dict(os.environ, SPARK_ICEBERG_VERSION=ICEBERG_VERSION))
    load = os.getloadavg()
    print("compact_vs_spark: %s, %d cores, load %.1f %.1f %.1f, floe %s, Iceberg Spark runtime %s" % (
        time.strftime("%Y-%m-%d %H:%M"), os.cpu_count(), *load, a.floe, ICEBERG_VERSION), flush=True)
    t0 = time.perf_counter()
    b = Bench(a)
    try:
        if not a.skip_compaction:
            part_compaction(b, a)
        if not a.skip_scan:
            part_scan(b, a)
    finally:
        b.close()
    print("total %.0f s, load %.1f %.1f %.1f" % (time.perf_counter() - t0, *os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
