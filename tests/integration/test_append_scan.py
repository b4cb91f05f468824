"""floe's append API (`floe append`, src/iceberg/append.c) and `floe scan` against a live
`floe serve`, checked with PyIceberg as the independent reader: a table written only by
floe is read by PyIceberg with equal values, PyIceberg prunes its files by partition and
by column bounds (so the manifests' partition tuples and metrics are right), snapshots
chain with the caller's summary, and `floe scan` agrees with PyIceberg."""
import datetime as dt
import decimal
import json
import os
import subprocess

import pytest

from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY
from rest_fixtures import catalog_url, load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401

pa = pytest.importorskip("pyarrow")
from pyiceberg.expressions import EqualTo, GreaterThan  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform  # noqa: E402
from pyiceberg.types import (DecimalType, DoubleType, ListType, LongType, MapType, NestedField,  # noqa: E402
                             StringType, StructType, TimestamptzType, IntegerType)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestamptzType(), required=False),
    NestedField(3, "category", StringType(), required=False),
    NestedField(4, "amount", DecimalType(10, 2), required=False),
    NestedField(5, "score", DoubleType(), required=False),
    NestedField(6, "info", StructType(NestedField(7, "a", IntegerType(), required=False),
                                      NestedField(8, "b", StringType(), required=False)), required=False),
    NestedField(9, "tags", ListType(10, StringType(), element_required=False), required=False),
    NestedField(11, "attrs", MapType(12, StringType(), 13, LongType(), value_required=False), required=False),
)
SPEC = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"),
    PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="category"),
    PartitionField(source_id=1, field_id=1002, transform=BucketTransform(4), name="id_bucket"),
)
BASE = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
CATS = ["alpha", "beta", "gamma"]


def make_rows(first, n):
    rows = []
    for i in range(first, first + n):
        ts = BASE + dt.timedelta(hours=(i * 7) % 72, microseconds=i)
        rows.append({
            "id": i,
            "ts": None if i % 97 == 0 else ts.isoformat(timespec="microseconds"),
            "category": None if i % 89 == 0 else CATS[i % 3],
            "amount": None if i % 5 == 0 else "%d.%02d" % (i % 1000 - 500, i % 100),
            "score": None if i % 7 == 0 else i / 8.0,
            "info": None if i % 11 == 0 else {"a": i % 13, "b": "b%d" % (i % 4)},
            "tags": None if i % 17 == 0 else ["t%d" % (i % 5)] * (i % 3),
            "attrs": {"k%d" % (i % 2): i},
        })
    return rows


def floe_cli(floe, arn, *args, ok=True, stdin=None):
    env = dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    cmd = [FLOE_BIN, *args, "--catalog-uri", catalog_url(floe) + "/iceberg", "--warehouse", arn,
           "--region", REGION]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, input=stdin)
    if ok:
        assert p.returncode == 0, "%s\nstdout: %s\nstderr: %s" % (cmd, p.stdout[-2000:], p.stderr[-4000:])
    return p


def norm_row(r):
    """A JSON-input or PyIceberg row in one comparable form."""
    out = dict(r)
    ts = out.get("ts")
    if isinstance(ts, dt.datetime):
        out["ts"] = ts.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")
    elif isinstance(ts, str):
        out["ts"] = dt.datetime.fromisoformat(ts).astimezone(dt.timezone.utc).isoformat(timespec="microseconds")
    am = out.get("amount")
    if am is not None:
        out["amount"] = str(decimal.Decimal(str(am)).quantize(decimal.Decimal("0.01")))
    a = out.get("attrs")
    if isinstance(a, list):
        out["attrs"] = {k: v for k, v in a}
    return out


@pytest.fixture(scope="module")
def table(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("app")
    cat.create_namespace(ns)
    t = cat.create_table("%s.events" % ns, schema=SCHEMA, partition_spec=SPEC,
                         properties={"write.parquet.compression-codec": "zstd"})
    return cat, ns, t


def append(floe, arn, ns, rows, *extra):
    data = "".join(json.dumps(r) + "\n" for r in rows)
    p = floe_cli(floe, arn, "append", "%s.events" % ns, "--file", "-", "--output", "json", *extra, stdin=data)
    return json.loads(p.stdout)


def test_append_then_pyiceberg_reads_equal_values(floe, table_bucket, table):  # noqa: F811
    cat, ns, _ = table
    first, second = make_rows(0, 1500), make_rows(1500, 700)
    r1 = append(floe, table_bucket, ns, first, "--summary", "floe.test.batch=1", "--batch-rows", "400")
    assert r1["added-records"] == 1500 and r1["snapshot-id"] > 0
    r2 = append(floe, table_bucket, ns, second, "--summary", "floe.test.batch=2")
    t = cat.load_table("%s.events" % ns)
    snaps = t.metadata.snapshots
    assert [s.snapshot_id for s in snaps] == [r1["snapshot-id"], r2["snapshot-id"]]
    assert snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert snaps[1].sequence_number == snaps[0].sequence_number + 1
    s2 = snaps[1].summary
    assert s2["floe.test.batch"] == "2" and s2.operation.value == "append"
    assert s2["added-records"] == "700" and s2["total-records"] == "2200"
    assert int(s2["total-data-files"]) == len(list(t.scan().plan_files()))

    got = [norm_row(r) for r in t.scan().to_arrow().to_pylist()]
    want = [norm_row(r) for r in first + second]
    assert len(got) == len(want)
    assert sorted(got, key=lambda r: r["id"]) == sorted(want, key=lambda r: r["id"])

    # The first snapshot alone, as of its id.
    old = t.scan(snapshot_id=r1["snapshot-id"]).to_arrow()
    assert sorted(old.column("id").to_pylist()) == list(range(1500))


def test_pyiceberg_prunes_by_partition_and_bounds(floe, table_bucket, table):  # noqa: F811
    cat, ns, _ = table
    t = cat.load_table("%s.events" % ns)
    all_files = list(t.scan().plan_files())
    assert len(all_files) > 10  # days x categories x buckets
    cat_files = list(t.scan(row_filter=EqualTo("category", "beta")).plan_files())
    assert 0 < len(cat_files) < len(all_files) / 2
    for task in cat_files:
        assert task.file.partition[1] == "beta"
    # id bounds: the second commit's files hold ids >= 1500 only.
    late = list(t.scan(row_filter=GreaterThan("id", 1600)).plan_files())
    assert 0 < len(late) < len(all_files)
    id_field = t.schema().find_field("id").field_id
    for task in late:
        assert int.from_bytes(task.file.upper_bounds[id_field], "little", signed=True) > 1600
    rows = t.scan(row_filter=GreaterThan("id", 2150)).to_arrow()
    assert sorted(rows.column("id").to_pylist()) == list(range(2151, 2200))
    # Metrics: counts per leaf column, bounds for top-level/struct leaves.
    # (The catalog assigned fresh ids: look them up by name.)
    sid = {n: t.schema().find_field(n).field_id for n in ("id", "category", "info.a", "info.b", "tags.element")}
    f = all_files[0].file
    assert f.record_count > 0 and f.file_size_in_bytes > 0 and f.split_offsets
    assert f.value_counts[sid["id"]] == f.record_count and f.null_value_counts[sid["id"]] == 0
    assert sid["info.a"] in f.value_counts and sid["tags.element"] in f.value_counts
    for n in ("id", "category", "info.b"):
        assert sid[n] in f.lower_bounds and sid[n] in f.upper_bounds
    assert sid["tags.element"] not in f.lower_bounds  # no bounds inside lists, as Java


def test_floe_scan_matches_pyiceberg(floe, table_bucket, table):  # noqa: F811
    cat, ns, _ = table
    t = cat.load_table("%s.events" % ns)
    p = floe_cli(floe, table_bucket, "scan", "%s.events" % ns)
    floe_rows = [norm_row(json.loads(line)) for line in p.stdout.splitlines()]
    py_rows = [norm_row(r) for r in t.scan().to_arrow().to_pylist()]
    assert sorted(floe_rows, key=lambda r: r["id"]) == sorted(py_rows, key=lambda r: r["id"])

    first = t.metadata.snapshots[0].snapshot_id
    p = floe_cli(floe, table_bucket, "scan", "%s.events" % ns, "--snapshot", str(first),
                 "--columns", "id,info.b")
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == list(range(1500))
    assert all(set(r) == {"id", "info"} for r in rows)
    assert all(r["info"] is None or set(r["info"]) == {"b"} for r in rows)

    p = floe_cli(floe, table_bucket, "scan", "%s.events" % ns, "--limit", "7")
    assert len(p.stdout.splitlines()) == 7

    p = floe_cli(floe, table_bucket, "scan", "%s.events" % ns, "--format", "csv", "--columns",
                 "id,category", "--limit", "3")
    lines = p.stdout.splitlines()
    assert lines[0] == "id,category" and len(lines) == 4

    p = floe_cli(floe, table_bucket, "scan", "%s.events" % ns, "--columns", "nope", ok=False)
    assert p.returncode != 0 and "nope" in p.stderr


def test_snapshots_lists_floe_commits(floe, table_bucket, table):  # noqa: F811
    cat, ns, _ = table
    t = cat.load_table("%s.events" % ns)
    p = floe_cli(floe, table_bucket, "snapshots", "%s.events" % ns, "--output", "json")
    doc = json.loads(p.stdout)
    snaps = doc["snapshots"] if isinstance(doc, dict) else doc
    assert [s["snapshot-id"] for s in snaps] == [s.snapshot_id for s in t.metadata.snapshots]


def test_bad_rows_are_rejected_and_nothing_is_committed(floe, table_bucket, table):  # noqa: F811
    cat, ns, _ = table
    before = cat.load_table("%s.events" % ns).metadata.current_snapshot_id
    rows = make_rows(5000, 10)
    rows[4]["amount"] = "12.345"  # more fraction digits than the scale
    data = "".join(json.dumps(r) + "\n" for r in rows)
    p = floe_cli(floe, table_bucket, "append", "%s.events" % ns, "--file", "-", stdin=data, ok=False)
    assert p.returncode != 0 and "line 5" in p.stderr and "amount" in p.stderr
    p = floe_cli(floe, table_bucket, "append", "%s.events" % ns, "--file", "-", stdin="{not json\n", ok=False)
    assert p.returncode != 0 and "line 1" in p.stderr
    assert cat.load_table("%s.events" % ns).metadata.current_snapshot_id == before


def test_concurrent_commit_is_rebased(floe, table_bucket, table):  # noqa: F811
    """Two floe appends racing on one table: both land (the loser re-bases on 409)."""
    cat, ns, _ = table
    before = cat.load_table("%s.events" % ns)
    n_before = len(before.metadata.snapshots)
    env = dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    procs = []
    for k in range(4):
        data = "".join(json.dumps(r) + "\n" for r in make_rows(10000 + k * 100, 100))
        cmd = [FLOE_BIN, "append", "%s.events" % ns, "--file", "-", "--catalog-uri",
               catalog_url(floe) + "/iceberg", "--warehouse", table_bucket, "--region", REGION]
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        procs.append((p, data))
    for p, data in procs:
        p.stdin.write(data)
        p.stdin.close()
    for p, _ in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    t = cat.load_table("%s.events" % ns)
    assert len(t.metadata.snapshots) == n_before + 4
    ids = t.scan(row_filter=GreaterThan("id", 9999)).to_arrow().column("id").to_pylist()
    assert sorted(ids) == [i for k in range(4) for i in range(10000 + k * 100, 10100 + k * 100)]


def test_killed_append_leaves_the_table_as_it_was(floe, table_bucket, table):  # noqa: F811
    """kill -9 a `floe append` after it has uploaded data files but before it commits: the
    table keeps its snapshot and rows (the orphans are unreferenced), and the next append
    works."""
    import signal
    import time
    cat, ns, _ = table
    t0 = cat.load_table("%s.events" % ns)
    before, rows_before = t0.metadata.current_snapshot_id, t0.scan().to_arrow().num_rows
    env = dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    cmd = [FLOE_BIN, "append", "%s.events" % ns, "--file", "-", "--batch-rows", "50",
           "--target-file-size", "1", "--catalog-uri", catalog_url(floe) + "/iceberg",
           "--warehouse", table_bucket, "--region", REGION]
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdin.write("".join(json.dumps(r) + "\n" for r in make_rows(20000, 600)))
    p.stdin.flush()  # stdin stays open: floe append is still waiting for more rows
    loc = t0.metadata.location.split("://", 1)[1].rstrip("/")
    bucket, _, prefix = loc.partition("/")
    prefix = prefix + "/data/" if prefix else "data/"

    import boto3
    s3 = boto3.client("s3", endpoint_url=floe.endpoint, aws_access_key_id=ACCESS_KEY,
                      aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def data_files():
        out, tok = [], None
        while True:
            kw = {"Bucket": bucket, "Prefix": prefix}
            if tok:
                kw["ContinuationToken"] = tok
            r = s3.list_objects_v2(**kw)
            out += [o["Key"] for o in r.get("Contents", [])]
            tok = r.get("NextContinuationToken")
            if not tok:
                return set(out)
    known = {f.file.file_path.split("://", 1)[1].partition("/")[2] for f in t0.scan().plan_files()}
    deadline = time.time() + 60
    while time.time() < deadline and not (data_files() - known):
        time.sleep(0.2)
    assert data_files() - known, "floe append uploaded nothing within 60 s"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    t1 = cat.load_table("%s.events" % ns)
    assert t1.metadata.current_snapshot_id == before
    assert t1.scan().to_arrow().num_rows == rows_before
    r = append(floe, table_bucket, ns, make_rows(30000, 10))
    assert r["added-records"] == 10
    assert cat.load_table("%s.events" % ns).scan().to_arrow().num_rows == rows_before + 10


def test_scan_reads_files_without_field_ids_through_the_name_mapping(floe, table_bucket, tmp_path):  # noqa: F811
    """PyIceberg's add_files registers a plain pyarrow file (no field ids) and sets the
    table's schema.name-mapping.default; floe scan resolves the columns through it."""
    import pyarrow.parquet as pq
    import boto3
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("nm")
    cat.create_namespace(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "info", StructType(NestedField(4, "a", IntegerType(), required=False)),
                                required=False))
    t = cat.create_table("%s.plain" % ns, schema=schema)
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["x", None, "z"],
                     "info": pa.array([{"a": 1}, None, {"a": 3}], pa.struct([("a", pa.int32())]))})
    local = tmp_path / "plain.parquet"
    pq.write_table(data, local)
    assert b"field_id" not in pq.read_schema(local).to_string().encode()
    loc = t.metadata.location.split("://", 1)[1].rstrip("/")
    bucket, _, prefix = loc.partition("/")
    key = (prefix + "/" if prefix else "") + "data/plain.parquet"
    s3 = boto3.client("s3", endpoint_url=floe.endpoint, aws_access_key_id=ACCESS_KEY,
                      aws_secret_access_key=SECRET_KEY, region_name=REGION)
    s3.upload_file(str(local), bucket, key)
    t.add_files(["s3://%s/%s" % (bucket, key)])
    t = cat.load_table("%s.plain" % ns)
    assert "schema.name-mapping.default" in t.properties
    p = floe_cli(floe, table_bucket, "scan", "%s.plain" % ns)
    rows = sorted((json.loads(line) for line in p.stdout.splitlines()), key=lambda r: r["id"])
    assert rows == [{"id": 1, "name": "x", "info": {"a": 1}}, {"id": 2, "name": None, "info": None},
                    {"id": 3, "name": "z", "info": {"a": 3}}]
