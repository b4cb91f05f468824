#!/usr/bin/env python3
"""floe's Parquet writer and reader beside pyarrow on the same data.

Usage: make bench-parquet   (or: .venv/bin/python bench/parquet.py [--rows N] [--runs K])

Method, per codec (zstd, snappy):
  1. floe writes ROWS generated event rows (bench/parquet_bench.c: longs, a
     timestamptz, low- and high-cardinality strings, a nullable double, a
     decimal(18,2), a nested struct, a list of strings); only the writer's own
     calls are timed.
  2. pyarrow reads that file (untimed) into an Arrow table, the very same
     values, and writes it with the same codec, the same compression level
     (zstd 3, floe's and Iceberg Java's default; pyarrow's own default is 1)
     and the same rows per row group as floe's file (pq.write_table,
     dictionary and statistics on, its defaults otherwise), timed.
  3. Both readers read both files: floe (one thread, whole schema) and
     pyarrow (pq.read_table with use_threads=False, and, for reference, its
     default multi-threaded read).
Each figure is the median of RUNS runs. MB/s counts the Arrow in-memory size
of the table (table.nbytes), the same number of bytes for both sides.
Prints a table and the ratios floe/pyarrow (> 1 = floe faster / larger)."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]


def run_floe(*args):
    exe = os.environ.get("PARQUET_BENCH", str(ROOT / "build" / "parquet_bench"))
    out = subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout
    return dict(kv.split("=") for kv in out.split()[1:])


def median_time(fn, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=int(os.environ.get("BENCH_ROWS", 10_000_000)))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 3)))
    ap.add_argument("--codecs", default="zstd,snappy")
    a = ap.parse_args()
    base = Path(os.environ.get("BENCH_TMPDIR", ROOT / "bench" / "out"))
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="floe-pqbench-", dir=base))
    print(f"parquet bench: {a.rows} rows, median of {a.runs} runs, pyarrow {pa.__version__}, "
          f"{os.cpu_count()} cpus, load {open('/proc/loadavg').read().split()[:3]}")
    rows_out = []
    for codec in a.codecs.split(","):
        ff = tmp / f"floe-{codec}.parquet"
        pf = tmp / f"pyarrow-{codec}.parquet"
        wt = []
        for _ in range(a.runs):
            r = run_floe("write", codec, str(a.rows), str(ff))
            wt.append(float(r["seconds"]))
        floe_write = statistics.median(wt)
        meta = pq.ParquetFile(ff).metadata
        rg_rows = max(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        table = pq.read_table(ff)
        nbytes = table.nbytes
        level = {"zstd": 3}.get(codec)
        py_write = median_time(lambda: pq.write_table(table, pf, compression=codec, compression_level=level,
                                                      row_group_size=rg_rows), a.runs)
        del table
        fsize, psize = ff.stat().st_size, pf.stat().st_size
        floe_read_own = statistics.median(float(run_floe("read", str(ff))["seconds"]) for _ in range(a.runs))
        floe_read_py = statistics.median(float(run_floe("read", str(pf))["seconds"]) for _ in range(a.runs))
        py_read_py = median_time(lambda: pq.read_table(pf, use_threads=False), a.runs)
        py_read_own = median_time(lambda: pq.read_table(ff, use_threads=False), a.runs)
        py_read_mt = median_time(lambda: pq.read_table(pf), a.runs)
        mb = nbytes / 1e6

        def fig(label, secs):
            return f"  {label:<44} {secs:8.3f} s  {a.rows / secs / 1e6:7.2f} Mrows/s  {mb / secs:8.1f} MB/s"
        print(f"\n{codec}: {a.rows} rows, {mb:.1f} MB in Arrow, row groups of {rg_rows} rows")
        print(fig("floe write", floe_write) + f"  file {fsize / 1e6:.1f} MB")
        print(fig("pyarrow write", py_write) + f"  file {psize / 1e6:.1f} MB")
        print(fig("floe read (own file)", floe_read_own))
        print(fig("floe read (pyarrow's file)", floe_read_py))
        print(fig("pyarrow read, 1 thread (own file)", py_read_py))
        print(fig("pyarrow read, 1 thread (floe's file)", py_read_own))
        print(fig("pyarrow read, threads (own file)", py_read_mt))
        ratios = {
            "write speed floe/pyarrow": py_write / floe_write,
            "file size floe/pyarrow": fsize / psize,
            "read speed floe/pyarrow (each its own file, 1 thread)": py_read_py / floe_read_own,
            "read speed floe/pyarrow (pyarrow's file, 1 thread)": py_read_py / floe_read_py,
        }
        for k, v in ratios.items():
            print(f"  {k:<56} {v:6.2f}")
        rows_out.append((codec, ratios))
        for f in (ff, pf):
            f.unlink()
    tmp.rmdir()
    print("\ntargets: write speed >= 1.00, file size <= 1.05, read speed >= 1.00")
    ok = all(r["write speed floe/pyarrow"] >= 1.0 and r["file size floe/pyarrow"] <= 1.05 and
             r["read speed floe/pyarrow (each its own file, 1 thread)"] >= 1.0 for _, r in rows_out)
    print("all targets met" if ok else "some targets missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
