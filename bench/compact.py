#!/usr/bin/env python3
"""Compaction throughput of `floe maintenance run --job compaction` (src/iceberg/rewrite.c) on a table of many
small files.

Usage: .venv/bin/python bench/compact.py [--files 1000] [--file-kib 100] [--partitions 10]
                                         [--floe build/floe]

Starts `floe serve` on free 127.0.0.1 ports with a fresh data directory (removed at the
end), creates a table bucket, a namespace and a table partitioned by identity(cat) (REST),
writes about --files Parquet files of about --file-kib KiB each with one `floe append`
(files rolled at that size; rows of random hex so they do not compress away), then runs
`floe maintenance run --job compaction` (default target 512 MiB: one output file per partition) and prints files,
bytes and rows in and out, wall time, MB/s and files/s, and the CPU seconds of the compact
process (user + system), so MB/s per core = MB / CPU seconds."""
import argparse
import json
import os
import resource
import secrets
import shutil
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--file-kib", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--floe", default=os.environ.get("FLOE_BIN", str(ROOT / "build" / "floe")))
    a = ap.parse_args()
    data = tempfile.mkdtemp(prefix="floe-compactbench-", dir=ROOT / "bench")
    s3p, catp = free_port(), free_port()
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET)
    proc = subprocess.Popen([a.floe, "serve", "--data-dir", data, "--s3-listen", "127.0.0.1:%d" % s3p,
                             "--catalog-listen", "127.0.0.1:%d" % catp, "--region", REGION,
                             "--maintenance-interval", "0"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % s3p, timeout=1)
                break
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.05)
        base = "http://127.0.0.1:%d" % catp
        tb = boto3.client("s3tables", endpoint_url=base, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name=REGION)
        arn = tb.create_table_bucket(name="compactbench")["arn"]
        rest = Rest(base, arn)
        assert rest.req("POST", "namespaces", {"namespace": ["ns"]}).status_code == 200
        r = rest.req("POST", "namespaces/ns/tables", {
            "name": "ev",
            "schema": {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": True, "type": "long"},
                {"id": 2, "name": "cat", "required": False, "type": "string"},
                {"id": 3, "name": "payload", "required": False, "type": "string"}]},
            "partition-spec": {"spec-id": 0, "fields": [
                {"source-id": 2, "field-id": 1000, "name": "cat", "transform": "identity"}]}})
        assert r.status_code == 200, r.text
        cli_env = dict(os.environ, FLOE_ACCESS_KEY_ID=KEY, FLOE_SECRET_ACCESS_KEY=SECRET)
        common = ["--catalog-uri", base + "/iceberg", "--warehouse", arn, "--region", REGION]
        # ~100 bytes of hex per row: rows per file ~ file size / 110
        per_file = max(1, a.file_kib * 1024 // 110)
        n_rows = per_file * a.files
        lines = "".join(json.dumps({"id": i, "cat": "c%d" % (i % a.partitions), "payload": secrets.token_hex(50)})
                        + "\n" for i in range(n_rows))
        t0 = time.perf_counter()
        p = subprocess.run([a.floe, "append", "ns.ev", "--file", "-", "--output", "json", "--batch-rows", "4096",
                            "--target-file-size", str(a.file_kib * 1024)] + common,
                           input=lines, env=cli_env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        print("setup: %s (%.1f s)" % (p.stdout.strip(), time.perf_counter() - t0), flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run([a.floe, "maintenance", "run", "ns.ev", "--job", "compaction", "--output", "json"] + common, env=cli_env,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert p.returncode == 0, p.stdout + p.stderr
        res = json.loads(p.stdout)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        mb = res["bytesIn"] / 1e6
        print("files in  %8d   bytes in  %12d   rows in  %10d" % (res["filesIn"], res["bytesIn"], res["recordsIn"]))
        print("files out %8d   bytes out %12d   rows out %10d" % (res["filesOut"], res["bytesOut"],
                                                                 res["recordsOut"]))
        print("wall %.2f s (compact's own clock %.2f s), compact CPU %.2f s" % (wall, res["durationMs"] / 1e3, cpu))
        print("throughput: %.1f MB/s, %.0f files/s; per CPU second: %.1f MB/s, %.0f files/s" % (
            mb / wall, res["filesIn"] / wall, mb / cpu, res["filesIn"] / cpu))
        print("(floe serve runs beside it on the same cores: the S3 GETs/PUTs and the catalog are in the wall time)")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
