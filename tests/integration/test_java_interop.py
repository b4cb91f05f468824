"""The Java Iceberg library (the Kafka Connect sink plugin's jars, tests/compat/fetch.sh)
against tables that floe writes and reads:
  - rows appended by floe's append API (floe's Parquet files, manifests, manifest list) are
    scanned by Java's IcebergGenerics with equal values, and Java prunes by floe's metrics;
  - rows appended by Java (Java's Parquet writer, manifests, commit) are read by `floe scan`
    with the values Java itself reads, and by PyIceberg too."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, REGION, SECRET_KEY
from rest_fixtures import catalog_url, load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401
from test_append_scan import SCHEMA, SPEC, append, floe_cli, make_rows, norm_row

ROOT = Path(__file__).resolve().parents[2]
ICEBERG_VERSION = os.environ.get("JAVA_PEER_ICEBERG_VERSION", "1.10.1")
PLUGIN = ROOT / "tests/compat/.cache/plugins" / ("iceberg-" + ICEBERG_VERSION) / "iceberg-sink"


@pytest.fixture(scope="module")
def java_peer(floe, table_bucket):  # noqa: F811
    if not shutil.which("java"):
        pytest.fail("java is not installed (scripts/install-deps.sh installs it)")
    if not PLUGIN.is_dir():
        r = subprocess.run(["bash", str(ROOT / "tests/compat/fetch.sh")], capture_output=True, text=True,
                           env=dict(os.environ, ICEBERG_VERSIONS=ICEBERG_VERSION), timeout=1200)
        assert r.returncode == 0, r.stderr[-3000:]
    env = dict(os.environ, FLOE_CATALOG_URI=catalog_url(floe) + "/iceberg", FLOE_WAREHOUSE=table_bucket,
               FLOE_S3_ENDPOINT=floe.endpoint, FLOE_ACCESS_KEY_ID=ACCESS_KEY,
               FLOE_SECRET_ACCESS_KEY=SECRET_KEY, FLOE_REGION=REGION, AWS_REGION=REGION)

    def run(*args):
        p = subprocess.run(["java", "-cp", str(PLUGIN) + "/*", str(ROOT / "tests/compat/JavaPeer.java"), *args],
                           env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-4000:]
        return p.stdout
    return run


@pytest.fixture(scope="module")
def jtable(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("java")
    cat.create_namespace(ns)
    cat.create_table("%s.events" % ns, schema=SCHEMA, partition_spec=SPEC)
    return cat, ns


def test_java_reads_what_floe_appends(floe, table_bucket, jtable, java_peer):  # noqa: F811
    cat, ns = jtable
    rows = make_rows(0, 1200)
    append(floe, table_bucket, ns, rows)
    got = [norm_row(json.loads(line)) for line in java_peer("scan", "%s.events" % ns).splitlines()]
    want = [norm_row(r) for r in rows]
    assert sorted(got, key=lambda r: r["id"]) == sorted(want, key=lambda r: r["id"])
    # Java's planner prunes with floe's partition tuples and column bounds.
    some, total = map(int, java_peer("plan", "%s.events" % ns, "id", "1000").split())
    assert 0 < some < total


def test_floe_reads_what_java_appends(floe, table_bucket, jtable, java_peer):  # noqa: F811
    cat, ns = jtable
    java_peer("append", "%s.events" % ns, "50000", "900")
    t = cat.load_table("%s.events" % ns)
    assert t.metadata.current_snapshot().summary["java.peer"] == "1"
    java_rows = [norm_row(json.loads(line)) for line in java_peer("scan", "%s.events" % ns).splitlines()]
    floe_rows = [norm_row(json.loads(line)) for line in floe_cli(floe, table_bucket, "scan", "%s.events" % ns).stdout.splitlines()]
    py_rows = [norm_row(r) for r in t.scan().to_arrow().to_pylist()]
    key = lambda r: r["id"]  # noqa: E731
    assert len(java_rows) == 2100
    assert sorted(floe_rows, key=key) == sorted(java_rows, key=key)
    assert sorted(py_rows, key=key) == sorted(java_rows, key=key)
    # And floe appends on top of Java's snapshot (reading Java's manifest list).
    append(floe, table_bucket, ns, make_rows(90000, 50))
    got = [json.loads(line)["id"] for line in java_peer("scan", "%s.events" % ns).splitlines()]
    assert len(got) == 2150 and len(set(got)) == 2150
