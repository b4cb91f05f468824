"""Iceberg REST catalog (/iceberg on the catalog port) driven by PyIceberg and by raw
signed requests: namespaces, partitioned tables, appends/overwrites/deletes, schema
evolution, time travel, tables made through the S3 Tables API, concurrent committers,
staged creates, views, multi-table transactions, and malformed input."""
import multiprocessing
import time
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rest_fixtures import (  # noqa: F401 - fixtures
    RestRaw, assert_rest_error, load_rest_catalog, namespace, raw_rest, rest_catalog, s3tables,
    table_bucket, unique)

pytest.importorskip("pyiceberg")

from pyiceberg.exceptions import (  # noqa: E402
    CommitFailedException, CommitStateUnknownException, NamespaceAlreadyExistsError, RESTError, NamespaceNotEmptyError, NoSuchNamespaceError,
    NoSuchTableError, TableAlreadyExistsError, ValidationException)
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import IntegerType, LongType, NestedField, StringType  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "qty", IntegerType(), required=False),
    NestedField(4, "note", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
ARROW = pa.schema([("id", pa.int64()), ("category", pa.string()), ("qty", pa.int32()), ("note", pa.string())])


def batch(ids, cats=("a", "b", "c")):
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array([cats[i % len(cats)] for i in ids], pa.string()),
        "qty": pa.array([i * 10 for i in ids], pa.int32()),
        "note": pa.array(["n%d" % i for i in ids], pa.string()),
    }, schema=ARROW)


def sorted_rows(t, cols=None):
    t = t.select(cols) if cols else t
    return sorted(t.to_pylist(), key=lambda r: r["id"])


# ------------------------------------------------------------------ config

def test_config_prefix_and_endpoints(raw_rest, table_bucket):
    r = raw_rest.request("GET", "/v1/config", params={"warehouse": table_bucket})
    assert r.status_code == 200, r.text
    doc = r.json()
    enc = quote(table_bucket, safe="")
    assert "%2F" in enc
    assert doc["defaults"]["prefix"] == enc
    assert doc["overrides"]["prefix"] == enc
    eps = set(doc["endpoints"])
    for ep in ("GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
               "POST /v1/{prefix}/transactions/commit", "POST /v1/{prefix}/tables/rename",
               "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
               "POST /v1/{prefix}/namespaces/{namespace}/register",
               "GET /v1/{prefix}/namespaces/{namespace}/views/{view}"):
        assert ep in eps, ep
    assert all(isinstance(v, str) for v in doc["defaults"].values())


def test_config_unknown_or_missing_warehouse(raw_rest, table_bucket):
    missing = table_bucket.rsplit("/", 1)[0] + "/nosuchbucket-" + unique("x").replace("_", "")
    assert_rest_error(raw_rest.request("GET", "/v1/config", params={"warehouse": missing}), 404)
    assert_rest_error(raw_rest.request("GET", "/v1/config"), 400)
    assert_rest_error(raw_rest.request("GET", "/v1/config", params={"warehouse": "not-an-arn:"}), 400)


def test_unknown_prefix_is_404(floe, table_bucket):
    missing = table_bucket.rsplit("/", 1)[0] + "/nosuchbucket-" + unique("x").replace("_", "")
    raw = RestRaw(floe, missing)
    assert_rest_error(raw.request("GET", raw.p("namespaces")), 404)


# ------------------------------------------------------------------ namespaces

def test_namespace_lifecycle(rest_catalog, raw_rest):
    ns = unique("ns")
    rest_catalog.create_namespace(ns, {"owner": "alice", "k": "v"})
    with pytest.raises(NamespaceAlreadyExistsError):
        rest_catalog.create_namespace(ns)
    assert (ns,) in rest_catalog.list_namespaces()
    assert rest_catalog.load_namespace_properties(ns) == {"owner": "alice", "k": "v"}
    assert rest_catalog.namespace_exists(ns)
    assert raw_rest.request("HEAD", raw_rest.p("namespaces/%s" % ns)).status_code == 204
    assert raw_rest.request("HEAD", raw_rest.p("namespaces/%s" % unique("nope"))).status_code == 404

    summary = rest_catalog.update_namespace_properties(ns, removals={"k", "absent"}, updates={"new": "1"})
    assert summary.updated == ["new"]
    assert summary.removed == ["k"]
    assert summary.missing == ["absent"]
    assert rest_catalog.load_namespace_properties(ns) == {"owner": "alice", "new": "1"}

    t = rest_catalog.create_table((ns, "t1"), SCHEMA)
    assert t.metadata_location
    with pytest.raises(NamespaceNotEmptyError):
        rest_catalog.drop_namespace(ns)
    r = raw_rest.request("DELETE", raw_rest.p("namespaces/%s" % ns))
    assert_rest_error(r, 409, "NamespaceNotEmptyException")
    rest_catalog.drop_table((ns, "t1"))
    rest_catalog.drop_namespace(ns)
    assert not rest_catalog.namespace_exists(ns)
    with pytest.raises(NoSuchNamespaceError):
        rest_catalog.load_namespace_properties(ns)


def test_namespace_paging(raw_rest):
    names = sorted(unique("pg") for _ in range(5))
    for n in names:
        r = raw_rest.request("POST", raw_rest.p("namespaces"), {"namespace": [n]})
        assert r.status_code == 200, r.text
    seen, token, pages = [], "", 0
    while True:
        params = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        r = raw_rest.request("GET", raw_rest.p("namespaces"), params=params)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert len(doc["namespaces"]) <= 2
        seen += [n[0] for n in doc["namespaces"]]
        pages += 1
        token = doc.get("next-page-token")
        if not token:
            break
    assert pages >= 3
    assert [n for n in seen if n in names] == names
    assert len(seen) == len(set(seen))
    for n in names:
        assert raw_rest.request("DELETE", raw_rest.p("namespaces/%s" % n)).status_code == 204


def test_multilevel_namespace_rejected(raw_rest):
    r = raw_rest.request("POST", raw_rest.p("namespaces"), {"namespace": ["a", "b"]})
    assert_rest_error(r, 400)
    r = raw_rest.request("GET", raw_rest.p("namespaces/a%1Fb"))
    assert_rest_error(r, 404, "NoSuchNamespaceException")


def test_multilevel_lookups_are_not_found(rest_catalog, namespace, raw_rest):
    """Spark SQL's metadata tables (SELECT * FROM cat.ns.t.snapshots) load table
    "snapshots" of namespace ["ns", "t"] first and fall back on 404 NoSuchTableException;
    every lookup under a multi-level namespace is a 404 of its kind, not a 400."""
    rest_catalog.create_table((namespace, "t"), SCHEMA)
    ml = "%s%%1Ft" % namespace
    for method, tail, typ in [
            ("GET", "namespaces/%s/tables/snapshots" % ml, "NoSuchTableException"),
            ("HEAD", "namespaces/%s/tables/history" % ml, None),
            ("POST", "namespaces/%s/tables/files" % ml, "NoSuchTableException"),
            ("DELETE", "namespaces/%s/tables/files" % ml, "NoSuchTableException"),
            ("GET", "namespaces/%s/views/v" % ml, "NoSuchViewException"),
            ("GET", "namespaces/%s" % ml, "NoSuchNamespaceException"),
            ("HEAD", "namespaces/%s" % ml, None),
            ("DELETE", "namespaces/%s" % ml, "NoSuchNamespaceException"),
            ("GET", "namespaces/%s/tables" % ml, "NoSuchNamespaceException"),
            ("POST", "namespaces/%s/tables" % ml, "NoSuchNamespaceException")]:
        body = {"requirements": [], "updates": []} if method == "POST" else None
        if tail.endswith("/tables") and method == "POST":
            body = {"name": "x", "schema": {"type": "struct", "fields": []}}
        r = raw_rest.request(method, raw_rest.p(tail), body)
        if method == "HEAD":
            assert r.status_code == 404, (tail, r.status_code)
        else:
            assert_rest_error(r, 404, typ)
    ident = {"namespace": [namespace, "t"], "name": "snapshots"}
    r = raw_rest.request("POST", raw_rest.p("tables/rename"),
                         {"source": ident, "destination": {"namespace": [namespace], "name": "u"}})
    assert_rest_error(r, 404, "NoSuchTableException")
    r = raw_rest.request("POST", raw_rest.p("tables/rename"),
                         {"source": {"namespace": [namespace], "name": "t"}, "destination": ident})
    assert_rest_error(r, 404, "NoSuchNamespaceException")
    r = raw_rest.request("POST", raw_rest.p("transactions/commit"),
                         {"table-changes": [{"identifier": ident, "requirements": [], "updates": []}]})
    assert_rest_error(r, 404, "NoSuchTableException")
    # PyIceberg: a missing table, not a bad request
    from pyiceberg.exceptions import NoSuchTableError
    assert not rest_catalog.table_exists((namespace, "t", "snapshots"))
    with pytest.raises(NoSuchTableError):
        rest_catalog.load_table((namespace, "t", "snapshots"))
    assert rest_catalog.table_exists((namespace, "t"))


# ------------------------------------------------------------------ tables through PyIceberg

@pytest.mark.parametrize("signing_name", ["s3tables", "osstables"])
def test_partitioned_table_lifecycle(floe, table_bucket, signing_name):
    cat = load_rest_catalog(floe, table_bucket, signing_name, name="floe-" + signing_name)
    ns = unique("ns")
    cat.create_namespace(ns)
    ident = (ns, "events")
    tbl = cat.create_table(ident, SCHEMA, partition_spec=SPEC)
    assert tbl.metadata.default_spec_id == 0 and len(tbl.spec().fields) == 1
    assert tbl.location().startswith("s3://") and tbl.location().endswith("--table-s3")
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table(ident, SCHEMA)
    assert ident in cat.list_tables(ns)

    tbl.append(batch(range(0, 10)))
    first_snapshot = tbl.current_snapshot().snapshot_id
    first_location = tbl.metadata_location
    tbl.append(batch(range(10, 20)))
    assert len(tbl.snapshots()) == 2
    assert sorted_rows(tbl.scan().to_arrow()) == sorted_rows(batch(range(0, 20)))

    # a fresh load sees what the writer committed
    again = cat.load_table(ident)
    assert again.metadata_location == tbl.metadata_location != first_location
    assert again.metadata.table_uuid == tbl.metadata.table_uuid
    assert sorted_rows(again.scan().to_arrow()) == sorted_rows(batch(range(0, 20)))

    # overwrite, then delete rows
    tbl.overwrite(batch(range(100, 110)))
    assert sorted_rows(tbl.scan().to_arrow()) == sorted_rows(batch(range(100, 110)))
    tbl.delete("id < 105")
    assert sorted_rows(tbl.scan().to_arrow()) == sorted_rows(batch(range(105, 110)))

    # schema evolution: add, rename, widen int -> long
    with tbl.update_schema() as upd:
        upd.add_column("extra", StringType())
        upd.rename_column("note", "comment")
        upd.update_column("qty", LongType())
    tbl = cat.load_table(ident)
    names = [f.name for f in tbl.schema().fields]
    assert names == ["id", "category", "qty", "comment", "extra"]
    assert isinstance(tbl.schema().find_field("qty").field_type, LongType)
    new = pa.table({"id": pa.array([200], pa.int64()), "category": ["z"], "qty": pa.array([2 ** 40], pa.int64()),
                    "comment": ["big"], "extra": ["x"]})
    tbl.append(new)
    got = sorted_rows(cat.load_table(ident).scan().to_arrow())
    assert got[-1] == {"id": 200, "category": "z", "qty": 2 ** 40, "comment": "big", "extra": "x"}
    assert got[0] == {"id": 105, "category": "a" if 105 % 3 == 0 else ("b" if 105 % 3 == 1 else "c"),
                      "qty": 1050, "comment": "n105", "extra": None}
    assert len(got) == 6

    # time travel to the first snapshot
    old = tbl.scan(snapshot_id=first_snapshot).to_arrow()
    assert sorted(old.column("id").to_pylist()) == list(range(0, 10))

    cat.drop_table(ident)
    with pytest.raises(NoSuchTableError):
        cat.load_table(ident)
    cat.drop_namespace(ns)


@pytest.mark.parametrize("enabled", ["true", "false"])
def test_metadata_delete_after_commit(rest_catalog, namespace, raw_rest, s3, enabled):
    """write.metadata.delete-after-commit.enabled=true: the catalog's commit deletes the
    metadata files that fell off the metadata-log (write.metadata.previous-versions-max),
    as Iceberg's own catalogs do (PyIceberg deletes them itself; the commits here are
    raw REST commits, as a client that leaves it to the catalog sends). The table loads
    and both snapshots still time-travel. Off (the default): every file stays."""
    from urllib.parse import urlparse
    keep, name = 3, "mdlog_" + enabled
    tbl = rest_catalog.create_table((namespace, name), SCHEMA, properties={
        "write.metadata.delete-after-commit.enabled": enabled,
        "write.metadata.previous-versions-max": str(keep)})
    tbl.append(batch(range(0, 10)))
    tbl.append(batch(range(10, 20)))
    snaps = [s.snapshot_id for s in tbl.metadata.snapshots]
    path = raw_rest.p("namespaces/%s/tables/%s" % (namespace, name))
    for i in range(keep + 5):
        r = raw_rest.request("POST", path, {
            "requirements": [{"type": "assert-table-uuid", "uuid": str(tbl.metadata.table_uuid)}],
            "updates": [{"action": "set-properties", "updates": {"round": str(i)}}]})
        assert r.status_code == 200, r.text
    tbl = rest_catalog.load_table((namespace, name))
    assert tbl.properties["round"] == str(keep + 4)
    log = [e.metadata_file for e in tbl.metadata.metadata_log]
    assert len(log) == keep
    u = urlparse(tbl.metadata_location)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=u.netloc, Prefix="metadata/"):
        keys += ["s3://%s/%s" % (u.netloc, o["Key"]) for o in page.get("Contents", [])]
    files = {k for k in keys if k.endswith(".metadata.json")}
    if enabled == "true":
        assert files == set(log) | {tbl.metadata_location}, (sorted(files), log)
    else:
        assert len(files) >= keep + 8 and files >= set(log) | {tbl.metadata_location}
    assert len(tbl.scan().to_arrow()) == 20
    assert len(tbl.scan(snapshot_id=snaps[0]).to_arrow()) == 10
    assert len(tbl.scan(snapshot_id=snaps[1]).to_arrow()) == 20


def test_rename_and_exists(rest_catalog, namespace, raw_rest):
    other = unique("ns")
    rest_catalog.create_namespace(other)
    tbl = rest_catalog.create_table((namespace, "src"), SCHEMA)
    tbl.append(batch(range(3)))
    assert rest_catalog.table_exists((namespace, "src"))
    rest_catalog.rename_table((namespace, "src"), (other, "dst"))
    assert not rest_catalog.table_exists((namespace, "src"))
    moved = rest_catalog.load_table((other, "dst"))
    assert moved.metadata.table_uuid == tbl.metadata.table_uuid
    assert sorted(moved.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    r = raw_rest.request("HEAD", raw_rest.p("namespaces/%s/tables/dst" % other))
    assert r.status_code == 204
    r = raw_rest.request("HEAD", raw_rest.p("namespaces/%s/tables/src" % namespace))
    assert r.status_code == 404
    rest_catalog.create_table((namespace, "taken"), SCHEMA)
    r = raw_rest.request("POST", raw_rest.p("tables/rename"), {
        "source": {"namespace": [other], "name": "dst"},
        "destination": {"namespace": [namespace], "name": "taken"}})
    assert_rest_error(r, 409, "AlreadyExistsException")


def test_snapshots_refs_mode(rest_catalog, namespace, raw_rest):
    tbl = rest_catalog.create_table((namespace, "refs"), SCHEMA)
    tbl.append(batch(range(2)))
    tbl.append(batch(range(2, 4)))
    all_doc = raw_rest.request("GET", raw_rest.p("namespaces/%s/tables/refs" % namespace),
                               params={"snapshots": "all"}).json()
    refs_doc = raw_rest.request("GET", raw_rest.p("namespaces/%s/tables/refs" % namespace),
                                params={"snapshots": "refs"}).json()
    assert len(all_doc["metadata"]["snapshots"]) == 2
    cur = all_doc["metadata"]["current-snapshot-id"]
    assert [s["snapshot-id"] for s in refs_doc["metadata"]["snapshots"]] == [cur]
    assert refs_doc["metadata-location"] == all_doc["metadata-location"]
    cfg = all_doc["config"]
    assert cfg["s3.path-style-access"] == "true" and cfg["s3.endpoint"] and cfg["client.region"]


def test_stage_create_then_commit(rest_catalog, namespace, raw_rest):
    ident = (namespace, "staged")
    txn = rest_catalog.create_table_transaction(ident, SCHEMA)
    # staged: nothing visible yet
    assert not rest_catalog.table_exists(ident)
    txn.append(batch(range(7)))
    tbl = txn.commit_transaction()
    assert rest_catalog.table_exists(ident)
    loaded = rest_catalog.load_table(ident)
    assert loaded.metadata_location == tbl.metadata_location
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == list(range(7))
    # a second assert-create commit for the same name fails
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/tables/staged" % namespace),
                         {"requirements": [{"type": "assert-create"}], "updates": []})
    assert_rest_error(r, 409)


# ------------------------------------------------------------------ S3 Tables API interop

def test_table_from_s3tables_api(floe, s3tables, table_bucket, rest_catalog):
    ns = unique("ns")
    s3tables.create_namespace(tableBucketARN=table_bucket, namespace=[ns])
    s3tables.create_table(
        tableBucketARN=table_bucket, namespace=ns, name="made_by_api", format="ICEBERG",
        metadata={"iceberg": {"schema": {"fields": [
            {"name": "id", "type": "long", "required": True},
            {"name": "name", "type": "string"}]}}})
    tbl = rest_catalog.load_table((ns, "made_by_api"))
    assert [f.name for f in tbl.schema().fields] == ["id", "name"]
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["x", "y", "z"]},
                    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())]))
    tbl.append(data)
    got = rest_catalog.load_table((ns, "made_by_api")).scan().to_arrow()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == data.to_pylist()
    loc = s3tables.get_table_metadata_location(tableBucketARN=table_bucket, namespace=ns, name="made_by_api")
    assert loc["metadataLocation"] == tbl.metadata_location


# ------------------------------------------------------------------ concurrency

def _append_worker(args):
    floe_endpoint, catalog_port, arn, ns, name, worker, batches, rows = args
    from types import SimpleNamespace
    from pyiceberg.exceptions import CommitFailedException as CFE
    fake = SimpleNamespace(endpoint=floe_endpoint, catalog_port=catalog_port)
    cat = load_rest_catalog(fake, arn, name="w%d" % worker)
    tbl = cat.load_table((ns, name))
    conflicts, errors = 0, []
    for b in range(batches):
        ids = [worker * 100000 + b * rows + i for i in range(rows)]
        df = batch(ids)
        for _ in range(300):
            try:
                tbl.append(df)
                break
            except CFE:
                conflicts += 1
                time.sleep(0.01)
                tbl = cat.load_table((ns, name))
            except Exception as e:  # noqa: BLE001 - reported to the parent
                errors.append(repr(e))
                break
        else:
            errors.append("gave up after 300 conflicts")
    return conflicts, errors


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_concurrent_appenders(floe, table_bucket, rest_catalog, namespace):
    name = "busy"
    rest_catalog.create_table((namespace, name), SCHEMA, partition_spec=SPEC)
    workers, batches, rows = 8, 4, 5
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        results = pool.map(_append_worker, [(floe.endpoint, floe.catalog_port, table_bucket, namespace, name, w,
                                             batches, rows) for w in range(workers)])
    errors = [e for _, errs in results for e in errs]
    assert not errors, errors
    got = rest_catalog.load_table((namespace, name)).scan().to_arrow().column("id").to_pylist()
    expected = [w * 100000 + b * rows + i for w in range(workers) for b in range(batches) for i in range(rows)]
    assert sorted(got) == sorted(expected)          # every row exactly once
    assert len(rest_catalog.load_table((namespace, name)).snapshots()) == workers * batches


# ------------------------------------------------------------------ bad input

def _commit(raw, ns, name, requirements, updates, raw_body=None):
    body = None if raw_body is not None else {"requirements": requirements, "updates": updates}
    return raw.request("POST", raw.p("namespaces/%s/tables/%s" % (ns, name)), body, raw_body=raw_body)


def test_bad_commits_leave_table_unchanged(rest_catalog, namespace, raw_rest):
    tbl = rest_catalog.create_table((namespace, "guarded"), SCHEMA)
    tbl.append(batch(range(3)))
    before = raw_rest.load_table(namespace, "guarded").json()
    uuid_ = before["metadata"]["table-uuid"]
    ok_req = [{"type": "assert-table-uuid", "uuid": uuid_}]
    cases = [
        (400, [{"type": "assert-something-new"}], []),
        (400, ok_req, [{"action": "do-something-new"}]),
        (400, ok_req, [{"action": "set-properties"}]),  # missing "updates"
        (409, [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
         [{"action": "set-properties", "updates": {"k": "v"}}]),
        (409, [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
         [{"action": "set-properties", "updates": {"k": "v"}}]),
    ]
    for status, reqs, upds in cases:
        r = _commit(raw_rest, namespace, "guarded", reqs, upds)
        err = assert_rest_error(r, status)
        if status == 409:
            assert err["type"] == "CommitFailedException"
    for bad in ("{", "[]", "null", '{"requirements": 5}', '{"updates": {"a": 1}}', '{"a":1,"a":2}', "\xff"):
        r = _commit(raw_rest, namespace, "guarded", None, None, raw_body=bad)
        assert_rest_error(r, 400)
    after = raw_rest.load_table(namespace, "guarded").json()
    assert after["metadata-location"] == before["metadata-location"]
    assert after["metadata"] == before["metadata"]

    # and a good one still lands, with the new location returned
    r = _commit(raw_rest, namespace, "guarded", ok_req, [{"action": "set-properties", "updates": {"k": "v"}}])
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["metadata-location"] != before["metadata-location"]
    assert doc["metadata"]["properties"]["k"] == "v"
    assert raw_rest.load_table(namespace, "guarded").json()["metadata-location"] == doc["metadata-location"]
    assert rest_catalog.load_table((namespace, "guarded")).properties["k"] == "v"


def test_commit_to_dropped_table(rest_catalog, namespace, raw_rest):
    tbl = rest_catalog.create_table((namespace, "gone"), SCHEMA)
    uuid_ = str(tbl.metadata.table_uuid)
    rest_catalog.drop_table((namespace, "gone"))
    r = _commit(raw_rest, namespace, "gone", [{"type": "assert-table-uuid", "uuid": uuid_}],
                [{"action": "set-properties", "updates": {"k": "v"}}])
    assert_rest_error(r, 404, "NoSuchTableException")
    assert not rest_catalog.table_exists((namespace, "gone"))
    # PyIceberg's own commit path against the dropped table: a typed 404, not "state unknown"
    with pytest.raises(RESTError) as ei:
        tbl.transaction().set_properties(a="b").commit_transaction()
    assert not isinstance(ei.value, (CommitFailedException, CommitStateUnknownException))
    assert "NoSuchTableException" in str(ei.value)
    assert not rest_catalog.table_exists((namespace, "gone"))


def test_register_outside_warehouse(rest_catalog, namespace, raw_rest):
    tbl = rest_catalog.create_table((namespace, "orig"), SCHEMA)
    loc = tbl.metadata_location
    for bad in ("s3://some-other-bucket/metadata/00000-x.metadata.json",
                tbl.location() + "/data/not-metadata.parquet",
                "file:///etc/passwd"):
        r = raw_rest.request("POST", raw_rest.p("namespaces/%s/register" % namespace),
                             {"name": "copy", "metadata-location": bad})
        assert_rest_error(r, 400)
        assert not rest_catalog.table_exists((namespace, "copy"))
    # a location in another live table's warehouse cannot be claimed either
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/register" % namespace),
                         {"name": "copy", "metadata-location": loc})
    assert_rest_error(r, 400)
    # registering over an existing name needs overwrite
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/register" % namespace),
                         {"name": "orig", "metadata-location": loc})
    assert_rest_error(r, 409, "AlreadyExistsException")
    assert rest_catalog.load_table((namespace, "orig")).metadata_location == loc


def test_register_after_drop_without_purge(rest_catalog, namespace, raw_rest):
    tbl = rest_catalog.create_table((namespace, "keepfiles"), SCHEMA)
    tbl.append(batch(range(4)))
    loc = tbl.metadata_location
    rest_catalog.drop_table((namespace, "keepfiles"))  # purgeRequested=False: files stay
    reg = rest_catalog.register_table((namespace, "revived"), loc)
    assert reg.metadata_location == loc
    assert sorted(reg.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 3]


def catalog_store_sql(srv, sql):
    """Runs sql on srv's catalog store (SQLite file or its PostgreSQL database)."""
    import pgserver
    if pgserver.wanted():
        pgserver.psql(sql, pgserver.database_for(srv.data_dir))
        return
    import os
    import sqlite3
    db = sqlite3.connect(os.path.join(srv.data_dir, "catalog.db"), timeout=10)
    try:
        db.execute(sql)
        db.commit()
    finally:
        db.close()


def test_register_waits_for_a_claimed_warehouse(floe, rest_catalog, namespace):
    """A warehouse no table owns is claimed by whoever acts on it: the sweep of abandoned
    warehouses deletes it under a claim, so a registerTable adopting it meanwhile is refused
    (503, to be retried; nothing registered) instead of landing between the sweep's check and its purge;
    once the claim is gone the same registration succeeds."""
    tbl = rest_catalog.create_table((namespace, "claimed"), SCHEMA)
    tbl.append(batch(range(3)))
    loc = tbl.metadata_location
    rest_catalog.drop_table((namespace, "claimed"))  # purgeRequested=False: files stay, unowned
    key = "warehouse:" + loc.split("/")[2]
    now = int(time.time() * 1000)
    catalog_store_sql(floe, "INSERT INTO maintenance_jobs(table_arn, type, owner, claimed_ms, heartbeat_ms,"
                            " lease_until_ms) VALUES ('%s', 'warehouse', 'sweeper', %d, %d, %d)"
                            % (key, now, now, now + 600000))
    try:
        with pytest.raises(Exception, match="claimed by another operation"):
            rest_catalog.register_table((namespace, "adopted"), loc)
        with pytest.raises(NoSuchTableError):
            rest_catalog.load_table((namespace, "adopted"))
    finally:
        catalog_store_sql(floe, "DELETE FROM maintenance_jobs WHERE table_arn = '%s'" % key)
    reg = rest_catalog.register_table((namespace, "adopted"), loc)
    assert sorted(reg.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]


def test_create_table_errors(raw_rest, namespace):
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/tables" % unique("nons")),
                         {"name": "t", "schema": {"type": "struct", "fields": []}})
    assert_rest_error(r, 404, "NoSuchNamespaceException")
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/tables" % namespace), {"name": "t"})
    assert_rest_error(r, 400)
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/tables" % namespace), raw_body='{"name": ')
    assert_rest_error(r, 400)
    r = raw_rest.request("GET", raw_rest.p("namespaces/%s/tables/nosuch" % namespace))
    assert_rest_error(r, 404, "NoSuchTableException")
    r = raw_rest.request("PUT", raw_rest.p("namespaces/%s/tables/nosuch" % namespace))
    assert r.status_code == 405
    r = raw_rest.request("GET", raw_rest.p("nothing/here"))
    assert_rest_error(r, 404)


def test_metrics_accepted(rest_catalog, namespace, raw_rest):
    rest_catalog.create_table((namespace, "m"), SCHEMA)
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/tables/m/metrics" % namespace),
                         {"report-type": "commit-report", "table-name": "m", "snapshot-id": 1,
                          "sequence-number": 1, "operation": "append", "metrics": {}})
    assert r.status_code == 204


# ------------------------------------------------------------------ transactions

def test_multi_table_transaction_all_or_nothing(rest_catalog, namespace, raw_rest):
    a = rest_catalog.create_table((namespace, "ta"), SCHEMA)
    b = rest_catalog.create_table((namespace, "tb"), SCHEMA)
    la, lb = a.metadata_location, b.metadata_location

    def change(name, uuid_, props):
        return {"identifier": {"namespace": [namespace], "name": name},
                "requirements": [{"type": "assert-table-uuid", "uuid": uuid_}],
                "updates": [{"action": "set-properties", "updates": props}]}

    ua, ub = str(a.metadata.table_uuid), str(b.metadata.table_uuid)
    bad = raw_rest.request("POST", raw_rest.p("transactions/commit"), {"table-changes": [
        change("ta", ua, {"x": "1"}), change("tb", "00000000-0000-0000-0000-000000000000", {"x": "1"})]})
    assert_rest_error(bad, 409, "CommitFailedException")
    assert rest_catalog.load_table((namespace, "ta")).metadata_location == la
    assert rest_catalog.load_table((namespace, "tb")).metadata_location == lb

    good = raw_rest.request("POST", raw_rest.p("transactions/commit"), {"table-changes": [
        change("ta", ua, {"x": "1"}), change("tb", ub, {"x": "2"})]})
    assert good.status_code == 204, good.text
    assert rest_catalog.load_table((namespace, "ta")).properties["x"] == "1"
    assert rest_catalog.load_table((namespace, "tb")).properties["x"] == "2"

    missing = raw_rest.request("POST", raw_rest.p("transactions/commit"), {"table-changes": [
        {"requirements": [], "updates": []}]})
    assert_rest_error(missing, 400)


# ------------------------------------------------------------------ views

def test_view_lifecycle(raw_rest, namespace, rest_catalog):
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"}]}
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": int(time.time() * 1000),
               "summary": {"engine-name": "test"}, "default-namespace": [namespace],
               "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}]}
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/views" % namespace),
                         {"name": "v1", "schema": schema, "view-version": version, "properties": {}})
    assert r.status_code == 200, r.text
    created = r.json()
    assert created["metadata"]["current-version-id"] == 1
    vuuid = created["metadata"]["view-uuid"]
    assert raw_rest.request("HEAD", raw_rest.p("namespaces/%s/views/v1" % namespace)).status_code == 204
    lst = raw_rest.request("GET", raw_rest.p("namespaces/%s/views" % namespace)).json()
    assert {"namespace": [namespace], "name": "v1"} in lst["identifiers"]
    # a view is not a table, and its name is taken for tables
    assert_rest_error(raw_rest.load_table(namespace, "v1"), 404, "NoSuchTableException")
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/tables" % namespace),
                         {"name": "v1", "schema": schema})
    assert_rest_error(r, 409, "AlreadyExistsException")

    v2 = dict(version, **{"version-id": 2, "representations": [
        {"type": "sql", "sql": "select 2 as id", "dialect": "spark"}]})
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/views/v1" % namespace), {
        "requirements": [{"type": "assert-view-uuid", "uuid": vuuid}],
        "updates": [{"action": "add-view-version", "view-version": v2},
                    {"action": "set-current-view-version", "view-version-id": -1}]})
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"] != created["metadata-location"]
    loaded = raw_rest.request("GET", raw_rest.p("namespaces/%s/views/v1" % namespace)).json()
    cur = loaded["metadata"]["current-version-id"]
    ver = [v for v in loaded["metadata"]["versions"] if v["version-id"] == cur][0]
    assert ver["representations"][0]["sql"] == "select 2 as id"
    r = raw_rest.request("POST", raw_rest.p("namespaces/%s/views/v1" % namespace), {
        "requirements": [{"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
        "updates": []})
    assert_rest_error(r, 409, "CommitFailedException")

    r = raw_rest.request("POST", raw_rest.p("views/rename"), {
        "source": {"namespace": [namespace], "name": "v1"},
        "destination": {"namespace": [namespace], "name": "v2"}})
    assert r.status_code == 204, r.text
    assert raw_rest.request("HEAD", raw_rest.p("namespaces/%s/views/v1" % namespace)).status_code == 404
    assert raw_rest.request("DELETE", raw_rest.p("namespaces/%s/views/v2" % namespace)).status_code == 204
    assert_rest_error(raw_rest.request("GET", raw_rest.p("namespaces/%s/views/v2" % namespace)), 404,
                      "NoSuchViewException")


def test_pointer_moved_by_s3tables_api(rest_catalog, s3tables, table_bucket, namespace):
    """The S3 Tables API rolls the pointer back; REST loads follow it (the cache is keyed
    by location) and a stale PyIceberg writer is refused by its requirements, not by luck."""
    tbl = rest_catalog.create_table((namespace, "rollback"), SCHEMA)
    tbl.append(batch(range(0, 5)))
    first = tbl.metadata_location
    tbl.append(batch(range(5, 10)))
    cur = s3tables.get_table(tableBucketARN=table_bucket, namespace=namespace, name="rollback")
    assert cur["metadataLocation"] == tbl.metadata_location
    s3tables.update_table_metadata_location(tableBucketARN=table_bucket, namespace=namespace, name="rollback",
                                            versionToken=cur["versionToken"], metadataLocation=first)
    fresh = rest_catalog.load_table((namespace, "rollback"))
    assert fresh.metadata_location == first
    assert sorted(fresh.scan().to_arrow().column("id").to_pylist()) == list(range(5))
    # based on the snapshot that was rolled away: 409; PyIceberg's retry then finds its
    # parent snapshot gone and gives up
    with pytest.raises((CommitFailedException, ValidationException)):
        tbl.append(batch(range(100, 101)))
    fresh.append(batch(range(20, 22)))
    got = rest_catalog.load_table((namespace, "rollback")).scan().to_arrow().column("id").to_pylist()
    assert sorted(got) == list(range(5)) + [20, 21]
