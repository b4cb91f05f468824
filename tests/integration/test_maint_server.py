"""Automatic maintenance inside `floe serve` (src/maint/): a server started with
--maintenance-interval 1 keeps tables healthy on its own.
  - a table with many small appends (floe append and PyIceberg) is compacted by the server within
    a bounded time once icebergCompaction is enabled, PyIceberg reading the same rows throughout;
  - GetTableMaintenanceJobStatus (boto3 s3tables, as `aws s3tables
    get-table-maintenance-job-status`) shows Not_Yet_Run, then Successful with a lastRunTimestamp;
    disabling icebergCompaction with PutTableMaintenanceConfiguration makes it Disabled and no
    further compaction happens;
  - a writer appending (floe append) while the server compacts never sees a failed commit and
    every row is there exactly once;
  - `floe maintenance status|history` show the server's record; /metrics counts the runs;
  - SIGTERM stops the server cleanly with the scheduler running;
  - a format-version 3 table is compacted by the server too, every row keeping its _row_id and
    _last_updated_sequence_number in the rewritten files."""
import datetime as dt
import json
import threading
import time
import urllib.request

import pytest

from rest_fixtures import load_rest_catalog, s3tables_client, unique
from test_append_scan import floe_cli

pa = pytest.importorskip("pyarrow")
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))
CATS = ["a", "b", "c"]
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])
WAIT_S = 60


def rows(first, n):
    return [{"id": i, "cat": CATS[i % 3]} for i in range(first, first + n)]


def floe_append(srv, arn, ident, first, n):
    data = "".join(json.dumps(r) + "\n" for r in rows(first, n))
    floe_cli(srv, arn, "append", ident, "--file", "-", stdin=data)


def ids(t):
    return sorted(r["id"] for r in t.scan().to_arrow().select(["id"]).to_pylist())


def files_per_partition(t):
    n = {}
    for task in t.scan().plan_files():
        k = task.file.partition[0]
        n[k] = n.get(k, 0) + 1
    return n


def set_compaction(s3t, arn, ns, name, status):
    s3t.put_table_maintenance_configuration(
        tableBucketARN=arn, namespace=ns, name=name, type="icebergCompaction",
        value={"status": status, "settings": {"icebergCompaction": {"targetFileSizeMB": 64, "strategy": "binpack"}}})


def job_status(s3t, arn, ns, name):
    return s3t.get_table_maintenance_job_status(tableBucketARN=arn, namespace=ns, name=name)["status"]


def metrics(srv):
    """Every node's /metrics (a cluster's job ran on whichever node claimed it)."""
    text = ""
    for node in getattr(srv, "nodes", [srv]):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.catalog_port, timeout=10) as r:
            text += r.read().decode()
    return text


def metric(text, name, **labels):
    """The sum of the series over the nodes in text (None if absent)."""
    want = ",".join('%s="%s"' % kv for kv in labels.items())
    line = "%s{%s} " % (name, want) if labels else name + " "
    vals = [float(ln.split()[-1]) for ln in text.splitlines() if ln.startswith(line)]
    return sum(vals) if vals else None


@pytest.fixture
def maint_server(floe_factory):
    return floe_factory(extra_args=["--maintenance-interval", "1"])


@pytest.fixture
def setup(maint_server):
    srv = maint_server
    s3t = s3tables_client(srv)
    arn = s3t.create_table_bucket(name="maint-%s" % unique("b").replace("_", "-"))["arn"]
    cat = load_rest_catalog(srv, arn)
    ns = unique("m")
    cat.create_namespace(ns)
    cat.create_table("%s.ev" % ns, schema=SCHEMA, partition_spec=SPEC)
    return srv, s3t, arn, cat, ns


def wait_for(pred, what, timeout=WAIT_S):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.25)
    pytest.fail("timed out after %ss waiting for %s" % (timeout, what))


def test_server_compacts_on_its_own_and_reports(setup):
    srv, s3t, arn, cat, ns = setup
    ident = "%s.ev" % ns
    # small appends while compaction is disabled: nothing is rewritten
    set_compaction(s3t, arn, ns, "ev", "disabled")
    assert job_status(s3t, arn, ns, "ev")["icebergCompaction"] == {"status": "Disabled"}
    for k in range(5):
        floe_append(srv, arn, ident, k * 30, 30)
    for k in range(5, 8):
        cat.load_table(ident).append(pa.Table.from_pylist(rows(k * 30, 30), schema=ARROW))
    t = cat.load_table(ident)
    before = ids(t)
    assert before == list(range(240))
    assert files_per_partition(t) == {"a": 8, "b": 8, "c": 8}
    time.sleep(3)  # three passes
    t = cat.load_table(ident)
    assert files_per_partition(t) == {"a": 8, "b": 8, "c": 8}
    assert all(s.summary.operation.value == "append" for s in t.metadata.snapshots)

    # enabled: the server compacts by itself, PyIceberg reads the same rows throughout
    set_compaction(s3t, arn, ns, "ev", "enabled")
    assert job_status(s3t, arn, ns, "ev")["icebergCompaction"] == {"status": "Not_Yet_Run"}
    t0 = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=2)

    def compacted():
        t = cat.load_table(ident)
        assert ids(t) == before
        return files_per_partition(t) == {"a": 1, "b": 1, "c": 1}
    wait_for(compacted, "the server's compaction")
    t = cat.load_table(ident)
    last = t.metadata.snapshots[-1]
    assert last.summary.operation.value == "replace"
    assert last.summary["deleted-data-files"] == "24" and last.summary["total-records"] == "240"
    st = wait_for(lambda: (lambda s: s if s["icebergCompaction"]["status"] == "Successful" else None)(
        job_status(s3t, arn, ns, "ev")), "status Successful")
    c = st["icebergCompaction"]
    assert set(c) == {"status", "lastRunTimestamp"}, c
    assert t0 <= c["lastRunTimestamp"] <= dt.datetime.now(dt.timezone.utc)
    # snapshots are young (120 h): expiry has nothing to do; unreferenced-file removal ran
    # once (every object is young: nothing to mark) and runs again only a day later
    assert st["icebergSnapshotManagement"] == {"status": "Not_Yet_Run"}
    u = wait_for(lambda: (lambda s: s if s["status"] == "Successful" else None)(
        job_status(s3t, arn, ns, "ev")["icebergUnreferencedFileRemoval"]), "unreferenced-file removal ran")
    assert set(u) == {"status", "lastRunTimestamp"}, u

    m = metrics(srv)
    assert metric(m, "floe_maintenance_runs_total", type="icebergCompaction", status="Successful") >= 1
    assert metric(m, "floe_maintenance_files_rewritten_total") >= 24
    assert metric(m, "floe_maintenance_bytes_rewritten_total") > 0
    assert metric(m, "floe_maintenance_run_seconds_count", type="icebergCompaction") >= 1

    # the CLI reads the server's record
    p = floe_cli(srv, arn, "maintenance", "status", ident, "--output", "json")
    out = json.loads(p.stdout)
    assert out["status"]["icebergCompaction"]["status"] == "Successful", out
    p = floe_cli(srv, arn, "maintenance", "history", ident, "--output", "json")
    runs = json.loads(p.stdout)["runs"]
    comp = [r for r in runs if r["type"] == "icebergCompaction"]
    assert comp and comp[0]["status"] == "Successful" and comp[0]["filesIn"] == 24 and comp[0]["filesOut"] == 3, runs
    assert comp[0]["startTime"] <= comp[0]["endTime"]
    p = floe_cli(srv, arn, "maintenance", "status", ident)
    assert "icebergCompaction" in p.stdout and "Successful" in p.stdout

    # disabled again: Disabled, and new small files stay
    set_compaction(s3t, arn, ns, "ev", "disabled")
    assert job_status(s3t, arn, ns, "ev")["icebergCompaction"]["status"] == "Disabled"
    for k in range(8, 14):
        floe_append(srv, arn, ident, k * 30, 30)
    time.sleep(3)
    t = cat.load_table(ident)
    assert files_per_partition(t) == {"a": 7, "b": 7, "c": 7}
    assert ids(t) == list(range(14 * 30))
    assert sum(1 for s in t.metadata.snapshots if s.summary.operation.value == "replace") == 1


def test_writer_racing_the_server_never_fails(setup):
    srv, s3t, arn, cat, ns = setup
    ident = "%s.ev" % ns
    per, max_commits = 12, 150
    errors = []
    state = {"commits": 0, "replace_at": None}

    def writer():
        # keeps committing until 5 commits after the server's first compaction landed
        try:
            for k in range(max_commits):
                floe_append(srv, arn, ident, k * per, per)  # asserts exit 0: no failed commit
                state["commits"] = k + 1
                if state["replace_at"] is not None and k + 1 >= state["replace_at"] + 5:
                    break
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    th = threading.Thread(target=writer)
    th.start()
    while th.is_alive():
        # PyIceberg reads a consistent table throughout: no duplicates, a prefix of the commits
        t = cat.load_table(ident)
        got = ids(t)
        assert len(got) == len(set(got)) and got == list(range(len(got))), got[:20]
        if state["replace_at"] is None and any(s.summary.operation.value == "replace" for s in t.metadata.snapshots):
            state["replace_at"] = state["commits"]
        time.sleep(0.2)
    th.join()
    assert not errors, errors
    n = state["commits"]
    if state["replace_at"] is None:  # say why: the server's record of its runs
        hist = floe_cli(srv, arn, "maintenance", "history", ident, "--output", "json").stdout
        pytest.fail("no compaction landed in %d commits; runs: %s; status: %s" % (
            n, hist[:4000], job_status(s3t, arn, ns, "ev")))
    assert n >= state["replace_at"] + 5, state
    t = cat.load_table(ident)
    assert ids(t) == list(range(n * per))
    ops = [s.summary.operation.value for s in t.metadata.snapshots]
    assert ops.count("append") == n and "replace" in ops, ops

    # and it settles: the next passes bring every partition under the threshold
    def settled():
        f = files_per_partition(cat.load_table(ident))
        return all(v < 5 for v in f.values()) and f
    wait_for(settled, "compaction to catch up")
    assert ids(cat.load_table(ident)) == list(range(n * per))
    assert job_status(s3t, arn, ns, "ev")["icebergCompaction"]["status"] == "Successful"
    assert srv.stop() == 0, srv.tail()


def test_server_compacts_v3_table_keeping_row_ids(maint_server):
    """A format-version 3 table streamed by `floe append`: the server compacts it by itself
    (it refused v3 before), and the rewritten Parquet files carry every row's _row_id and
    _last_updated_sequence_number (read back with pyarrow) exactly as inheritance gave them
    before: unpartitioned, rows appended in id order, so row id == id; the sequence number is
    that of the append that wrote the row."""
    import pyarrow.parquet as pq
    from rest_fixtures import RestRaw
    srv = maint_server
    s3t = s3tables_client(srv)
    arn = s3t.create_table_bucket(name="maint-%s" % unique("v").replace("_", "-"))["arn"]
    cat = load_rest_catalog(srv, arn)
    ns = unique("m3")
    cat.create_namespace(ns)
    raw = RestRaw(srv, arn)
    body = {"name": "ev", "properties": {"format-version": "3"},
            "schema": json.loads(SCHEMA.model_dump_json()), "partition-spec": {"spec-id": 0, "fields": []}}
    r = raw.request("POST", raw.p("namespaces/%s/tables" % ns), body)
    assert r.status_code == 200, r.text
    ident = "%s.ev" % ns
    set_compaction(s3t, arn, ns, "ev", "disabled")
    n, per = 6, 25
    for k in range(n):
        floe_append(srv, arn, ident, k * per, per)

    def md():
        r = raw.load_table(ns, "ev")
        assert r.status_code == 200, r.text
        return r.json()["metadata"]
    m = md()
    assert m["format-version"] == 3 and m["next-row-id"] == n * per
    seq_of = {}
    for s in m["snapshots"]:
        for i in range(s["first-row-id"], s["first-row-id"] + s["added-rows"]):
            seq_of[i] = s["sequence-number"]
    set_compaction(s3t, arn, ns, "ev", "enabled")
    wait_for(lambda: md()["snapshots"][-1]["summary"]["operation"] == "replace", "the server's compaction (v3)")
    m = md()
    last = m["snapshots"][-1]
    assert last["first-row-id"] == n * per and m["next-row-id"] == n * per + last["added-rows"]
    t = cat.load_table(ident)
    assert ids(t) == list(range(n * per))
    tasks = list(t.scan().plan_files())
    assert len(tasks) == 1
    got = {}
    for task in tasks:
        f = pq.read_table(pa.BufferReader(t.io.new_input(task.file.file_path).open().read()))
        assert "_row_id" in f.column_names and "_last_updated_sequence_number" in f.column_names, f.schema
        for i, rid, seq in zip(f["id"].to_pylist(), f["_row_id"].to_pylist(),
                               f["_last_updated_sequence_number"].to_pylist()):
            got[i] = (rid, seq)
    assert got == {i: (i, seq_of[i]) for i in range(n * per)}
