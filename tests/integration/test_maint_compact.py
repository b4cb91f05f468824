"""Compaction (`floe maintenance run --job compaction`, src/iceberg/rewrite.c) against a live `floe serve`:
  - many small appends by `floe append` and PyIceberg into a partitioned table -> one
    `replace` snapshot; PyIceberg and DuckDB (over the files PyIceberg plans) read exactly the
    rows they read before, one data file per partition, totals in the summary;
  - Spark SQL merge-on-read DELETE/UPDATE/MERGE (position deletes) -> after compaction Spark
    and PyIceberg read exactly what Spark read before and no delete file is left;
  - the same on a format-version 3 table (deletion vectors in Puffin files) and on a v2 table
    with position deletes upgraded to v3 and deleted from again: Spark, PyIceberg and DuckDB
    read what Spark read before, no delete file is left, and Spark's _row_id /
    _last_updated_sequence_number are unchanged (DuckDB, without its iceberg extension, is
    checked only once no deletes are left);
  - manifest merge: one manifest per commit merged into one, rows unchanged;
  - `--strategy sort` on a PyIceberg table with a sort order (id desc): PyIceberg and DuckDB read
    the same rows, every file's rows are in order and the files' id bounds (inspect.files) do not
    overlap; z-order keeps the rows; sort on a table without a sort order bin-packs and says so."""
import json
import os

import pytest

from rest_fixtures import load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401
from test_append_scan import floe_cli

pa = pytest.importorskip("pyarrow")
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "v", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))
CATS = ["a", "b", "c"]


def rows(first, n):
    return [{"id": i, "cat": CATS[i % 3], "v": "v%d" % (i * 7)} for i in range(first, first + n)]


def compact(floe, arn, ident, *extra):
    p = floe_cli(floe, arn, "maintenance", "run", ident, "--job", "compaction", "--output", "json", *extra)
    return json.loads(p.stdout)


def py_rows(t):
    return sorted(tuple(r.values()) for r in t.scan().to_arrow().select(["id", "cat", "v"]).to_pylist())


def duck_rows(t):
    """DuckDB reading the Parquet files PyIceberg plans (no deletes in these tables)."""
    duckdb = pytest.importorskip("duckdb")
    io = t.io
    con = duckdb.connect()
    out = []
    for task in t.scan().plan_files():
        assert not task.delete_files
        data = io.new_input(task.file.file_path).open().read()
        tbl = pa.BufferReader(data)
        import pyarrow.parquet as pq
        arrow = pq.read_table(tbl)
        con.register("f", arrow)
        out += con.execute("SELECT id, cat, v FROM f").fetchall()
        con.unregister("f")
    return sorted(out)


def files_per_partition(t):
    n = {}
    for task in t.scan().plan_files():
        k = task.file.partition[0]
        n[k] = n.get(k, 0) + 1
    return n


def test_compact_floe_and_pyiceberg_appends(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("cmp")
    cat.create_namespace(ns)
    t = cat.create_table("%s.ev" % ns, schema=SCHEMA, partition_spec=SPEC)
    ident = "%s.ev" % ns
    for k in range(6):
        data = "".join(json.dumps(r) + "\n" for r in rows(k * 40, 40))
        floe_cli(floe, table_bucket, "append", ident, "--file", "-", stdin=data)
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                              pa.field("v", pa.string())])
    for k in range(6, 10):
        t = cat.load_table(ident)
        t.append(pa.Table.from_pylist(rows(k * 40, 40), schema=arrow_schema))
    t = cat.load_table(ident)
    before_py, before_duck = py_rows(t), duck_rows(t)
    assert len(before_py) == 400 and before_py == before_duck
    assert files_per_partition(t) == {"a": 10, "b": 10, "c": 10}
    before_snaps = len(t.metadata.snapshots)

    r = compact(floe, table_bucket, ident)
    assert r["filesIn"] == 30 and r["filesOut"] == 3 and r["recordsIn"] == r["recordsOut"] == 400, r
    assert r["groupsCommitted"] == 3 and r["groupsFailed"] == 0 and r["commits"] == 1, r

    t = cat.load_table(ident)
    assert py_rows(t) == before_py
    assert duck_rows(t) == before_py
    assert files_per_partition(t) == {"a": 1, "b": 1, "c": 1}
    snaps = t.metadata.snapshots
    assert len(snaps) == before_snaps + 1
    s = snaps[-1].summary
    assert s.operation.value == "replace"
    assert s["added-data-files"] == "3" and s["deleted-data-files"] == "30"
    assert s["total-records"] == "400" and s["total-data-files"] == "3"
    # the new files carry the starting snapshot's sequence number
    entries = t.inspect.entries().to_pylist()
    added = [e for e in entries if e["status"] == 1]
    assert len(added) == 3 and {e["sequence_number"] for e in added} == {snaps[-2].sequence_number}
    # time travel to the pre-compaction snapshot still reads the same rows
    old = sorted(tuple(x.values()) for x in
                 t.scan(snapshot_id=snaps[-2].snapshot_id).to_arrow().select(["id", "cat", "v"]).to_pylist())
    assert old == before_py
    # nothing more to do
    r2 = compact(floe, table_bucket, ident)
    assert r2["groupsPlanned"] == 0 and r2["commits"] == 0


def test_compact_merges_manifests(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("cmpm")
    cat.create_namespace(ns)
    cat.create_table("%s.ev" % ns, schema=SCHEMA, partition_spec=SPEC)
    ident = "%s.ev" % ns
    for k in range(8):
        data = "".join(json.dumps(r) + "\n" for r in rows(k * 10, 10))
        floe_cli(floe, table_bucket, "append", ident, "--file", "-", stdin=data)
    t = cat.load_table(ident)
    before = py_rows(t)
    assert len(t.current_snapshot().manifests(t.io)) == 8
    r = compact(floe, table_bucket, ident, "--manifests-only", "--merge-manifests", "4")
    assert r["manifestsReplaced"] == 8 and r["manifestsCreated"] == 1, r
    t = cat.load_table(ident)
    assert len(t.current_snapshot().manifests(t.io)) == 1
    assert t.current_snapshot().summary.operation.value == "replace"
    assert py_rows(t) == before


# ---------------------------------------------------------------- sort and z-order strategies

from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder  # noqa: E402

ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string()),
                          pa.field("v", pa.string())])


def scrambled_appends(t, cat, ident, n, k):
    """n rows over k PyIceberg appends, ids scrambled across them; v is ~128 random bytes of hex
    so that a 1 MB target makes several output files."""
    for c in range(k):
        ids = [(i * 7919) % n for i in range(c, n, k)]
        t = cat.load_table(ident)
        t.append(pa.Table.from_pylist([{"id": i, "cat": CATS[i % 3] if i % 11 else None, "v": os.urandom(64).hex()}
                                       for i in ids], schema=ARROW_SCHEMA))


def file_bounds(t):
    """(lower, upper, sort_order_id, path) of id per live data file, from PyIceberg's inspect.files."""
    out = []
    for f in t.inspect.files().to_pylist():
        if f["content"] != 0:
            continue
        m = f["readable_metrics"]["id"]
        out.append((m["lower_bound"], m["upper_bound"], f["sort_order_id"], f["file_path"]))
    return sorted(out)


def test_compact_sort_strategy_orders_files(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("cmps")
    cat.create_namespace(ns)
    ident = "%s.ev" % ns
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform(), direction=SortDirection.DESC,
                                null_order=NullOrder.NULLS_LAST))
    t = cat.create_table(ident, schema=SCHEMA, sort_order=order)
    assert t.sort_order().order_id == 1
    scrambled_appends(t, cat, ident, 24000, 6)
    t = cat.load_table(ident)
    before = py_rows(t)
    assert len(before) == 24000 and duck_rows(t) == before
    # PyIceberg does not sort on write: the input files all span (almost) every id
    assert all(hi - lo > 20000 for lo, hi, _, _ in file_bounds(t))

    r = compact(floe, table_bucket, ident, "--strategy", "sort", "--target-file-size-mb", "1")
    assert r["strategy"] == "sort" and r["sortOrderId"] == 1 and r["note"] == "", r
    assert r["filesIn"] == 6 and r["filesOut"] >= 2 and r["recordsIn"] == r["recordsOut"] == 24000, r
    assert r["groupsCommitted"] == 1 and r["sortedRuns"] == 1, r

    t = cat.load_table(ident)
    assert py_rows(t) == before
    assert duck_rows(t) == before
    bounds = file_bounds(t)
    assert len(bounds) == r["filesOut"]
    for (lo, hi, order_id, _), nxt in zip(bounds, bounds[1:] + [None]):
        assert order_id == 1
        assert lo <= hi
        if nxt:
            assert hi < nxt[0], bounds  # non-overlapping id ranges
    # each file's rows in the table's order (id descending), read by pyarrow
    import pyarrow.parquet as pq
    for _, _, _, path in bounds:
        ids = pq.read_table(pa.BufferReader(t.io.new_input(path).open().read())).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
    assert t.current_snapshot().summary.operation.value == "replace"
    # a filter on id now prunes to one file
    assert len(list(t.scan(row_filter="id = 12345").plan_files())) == 1

    # z-order (over the order's one column: the same order, ascending) with the table's own target:
    # every file is small again and the lot becomes one file, every row kept
    scrambled_appends(t, cat, ident, 3000, 3)
    t = cat.load_table(ident)
    before = py_rows(t)
    r = compact(floe, table_bucket, ident, "--strategy", "z-order")
    assert r["strategy"] == "z-order" and r["recordsIn"] == r["recordsOut"] == 27000, r
    assert r["filesOut"] == 1 and r["sortOrderId"] == 1, r
    t = cat.load_table(ident)
    assert py_rows(t) == before
    (lo, hi, order_id, path), = file_bounds(t)
    assert order_id is None  # z-order is not the table's sort order
    ids = pq.read_table(pa.BufferReader(t.io.new_input(path).open().read())).column("id").to_pylist()
    assert ids == sorted(ids)


def test_compact_sort_without_sort_order_bin_packs(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("cmpn")
    cat.create_namespace(ns)
    ident = "%s.ev" % ns
    t = cat.create_table(ident, schema=SCHEMA)
    scrambled_appends(t, cat, ident, 600, 3)
    t = cat.load_table(ident)
    before = py_rows(t)
    r = compact(floe, table_bucket, ident, "--strategy", "sort")
    assert r["strategy"] == "binpack" and r["strategyAsked"] == "sort", r
    assert r["note"] == "strategy sort needs a sort order on the table: bin-packed", r
    assert r["status"] == "Successful" and r["filesIn"] == 3 and r["filesOut"] == 1, r
    t = cat.load_table(ident)
    assert py_rows(t) == before
    assert [b[2] for b in file_bounds(t)] == [None]  # not written in a sort order


# ---------------------------------------------------------------- Spark merge-on-read deletes

from test_spark_sql import (apply_changes, create_events, gen_rows, insert, ns, py_read, pycat,  # noqa: E402,F401
                            spark, spark_read)


@pytest.mark.timeout(900)
def test_compact_applies_spark_merge_on_read_deletes(spark, ns, pycat, floe, table_bucket):  # noqa: F811
    ident = create_events(spark, ns, "mor_cmp", mode="merge-on-read")
    for k in range(4):
        insert(spark, ident, gen_rows(k * 40, 40))
    all_rows = gen_rows(0, 160)
    want = apply_changes(spark, ident, all_rows)
    before = spark_read(spark, ident)
    assert before == want
    name = ident.split(".", 1)[1]
    t = pycat.load_table(name)
    assert any(task.delete_files for task in t.scan().plan_files())
    assert py_read(pycat, ident) == want

    r = compact(floe, table_bucket, name)
    assert r["groupsFailed"] == 0 and r["commits"] >= 1 and r["deleteFilesRemoved"] > 0, r

    assert spark_read(spark, ident) == want
    assert py_read(pycat, ident) == want
    t = pycat.load_table(name)
    assert not any(task.delete_files for task in t.scan().plan_files())
    assert t.current_snapshot().summary.operation.value == "replace"
    assert int(t.current_snapshot().summary["total-delete-files"]) == 0
    spark.sql("SELECT * FROM %s.files" % ident).collect()  # Spark's metadata tables read the new manifests
    per = {}
    for task in t.scan().plan_files():
        per[tuple(task.file.partition)] = per.get(tuple(task.file.partition), 0) + 1
    assert max(per.values()) == 1, per


def lineage(spark, ident):
    """Spark's row-lineage metadata columns of a v3 table: {id: (_row_id, _last_updated_sequence_number)}."""
    got = sql_rows(spark, "SELECT id, _row_id, _last_updated_sequence_number FROM %s" % ident)
    return {r[0]: (r[1], r[2]) for r in got}


def sql_rows(spark, text):
    return [tuple(r) for r in spark.sql(text).collect()]


def duck_read_events(t):
    """DuckDB reading the Parquet files PyIceberg plans for an events table (only once no delete
    file is left: DuckDB without its iceberg extension, which cannot be installed here, applies
    no deletion vector)."""
    duckdb = pytest.importorskip("duckdb")
    import pyarrow.parquet as pq
    con = duckdb.connect()
    out = []
    for task in t.scan().plan_files():
        assert not task.delete_files
        con.register("f", pq.read_table(pa.BufferReader(t.io.new_input(task.file.file_path).open().read())))
        out += con.execute("SELECT id, epoch_us(ts), category, amount, score FROM f").fetchall()
        con.unregister("f")
    return sorted(out)


@pytest.mark.timeout(900)
def test_compact_applies_spark_deletion_vectors_v3(spark, ns, pycat, floe, table_bucket):  # noqa: F811
    """v3: Spark's merge-on-read DELETE/UPDATE/MERGE write deletion vectors (Puffin); floe's
    compaction applies them, drops them, and keeps every surviving row's _row_id and
    _last_updated_sequence_number (as Spark reads them) unchanged."""
    ident = create_events(spark, ns, "dv_cmp", mode="merge-on-read", version=3)
    for k in range(4):
        insert(spark, ident, gen_rows(k * 40, 40))
    all_rows = gen_rows(0, 160)
    want = apply_changes(spark, ident, all_rows)
    assert spark_read(spark, ident) == want
    lin_before = lineage(spark, ident)
    assert len(lin_before) == len(want) and all(v[0] is not None for v in lin_before.values())
    name = ident.split(".", 1)[1]
    t = pycat.load_table(name)
    assert t.metadata.format_version == 3
    dels = [d for task in t.scan().plan_files() for d in task.delete_files]
    assert dels and all(d.file_format.value == "PUFFIN" for d in dels), dels  # deletion vectors, no position files
    dump = os.environ.get("FLOE_DUMP_DV")
    if dump:  # fixtures for the unit tests and the fuzz corpus: Puffin files Spark wrote
        for i, p in enumerate(sorted(set(d.file_path for d in dels))):
            with open("%s-%d.puffin" % (dump, i), "wb") as f:
                f.write(t.io.new_input(p).open().read())
    assert py_read(pycat, ident) == want  # PyIceberg applies DVs itself
    md_before = t.metadata
    next_before = md_before.next_row_id

    r = compact(floe, table_bucket, name)
    assert r["groupsFailed"] == 0 and r["commits"] >= 1 and r["deleteFilesRemoved"] >= len(set(d.file_path
                                                                                                for d in dels)), r

    assert spark_read(spark, ident) == want
    assert py_read(pycat, ident) == want
    t = pycat.load_table(name)
    assert duck_read_events(t) == [(a, b, c, d, e) for a, b, c, d, e in want]
    assert not any(task.delete_files for task in t.scan().plan_files())
    snap = t.current_snapshot()
    assert snap.summary.operation.value == "replace"
    assert int(snap.summary["total-delete-files"]) == 0
    # row lineage: same ids and sequence numbers; the replace snapshot took row ids for the files it added
    assert lineage(spark, ident) == lin_before
    assert snap.first_row_id == next_before
    assert t.metadata.next_row_id == next_before + snap.added_rows
    assert snap.added_rows == int(snap.summary["added-records"])
    spark.sql("SELECT * FROM %s.files" % ident).collect()


@pytest.mark.timeout(900)
def test_compact_upgraded_table_position_deletes_and_dvs(spark, ns, pycat, floe, table_bucket):  # noqa: F811
    """A v2 merge-on-read table with position delete files, upgraded to v3, then deleted from
    again: Spark writes deletion vectors that take over the old position deletes of the files
    they touch (which readers then ignore). Compaction applies both kinds, drops both, and the
    rows Spark gave row ids keep them."""
    ident = create_events(spark, ns, "upg_cmp", mode="merge-on-read")
    for k in range(3):
        insert(spark, ident, gen_rows(k * 40, 40))
    spark.sql("DELETE FROM %s WHERE id %% 7 = 0" % ident).collect()
    spark.sql("ALTER TABLE %s SET TBLPROPERTIES ('format-version'='3')" % ident).collect()
    insert(spark, ident, gen_rows(120, 40))
    spark.sql("DELETE FROM %s WHERE id %% 5 = 0" % ident).collect()
    spark.sql("UPDATE %s SET score = -1 WHERE id %% 9 = 1" % ident).collect()
    want = spark_read(spark, ident)
    assert len(want) > 100
    lin_before = lineage(spark, ident)
    name = ident.split(".", 1)[1]
    t = pycat.load_table(name)
    assert t.metadata.format_version == 3
    kinds = {d.file_format.value for task in t.scan().plan_files() for d in task.delete_files}
    assert kinds == {"PARQUET", "PUFFIN"}, kinds  # v2 position delete files and v3 DVs side by side
    assert py_read(pycat, ident) == want

    r = compact(floe, table_bucket, name)
    assert r["groupsFailed"] == 0 and r["deleteFilesRemoved"] > 0, r
    assert spark_read(spark, ident) == want
    assert py_read(pycat, ident) == want
    t = pycat.load_table(name)
    assert duck_read_events(t) == want
    assert not any(task.delete_files for task in t.scan().plan_files())
    assert int(t.current_snapshot().summary["total-delete-files"]) == 0
    assert lineage(spark, ident) == lin_before
