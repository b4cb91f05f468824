"""Snapshot expiry (`floe maintenance run --job snapshots`, src/iceberg/expire.c) against a live
`floe serve`: a partitioned table written by PyIceberg and `floe append` (appends, an overwrite
that leaves data files only old snapshots reach, a tag and a branch), expired with `--as-of`
in the future. PyIceberg is the independent reader: the snapshots S3 Tables' rules keep
remain, time travel to each reads the same rows as before, every file a retained snapshot
reaches still exists, the files only expired snapshots reached are gone (listed with boto3),
and metadata.json files beyond write.metadata.previous-versions-max are gone."""
import datetime as dt
import json
import os
import subprocess
from urllib.parse import urlparse

import pytest

from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY
from rest_fixtures import catalog_url, load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401

pa = pytest.importorskip("pyarrow")
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True),
                NestedField(2, "cat", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("cat", pa.string())])


def floe_cli(floe, arn, *args, ok=True, stdin=None):
    env = dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    cmd = [FLOE_BIN, *args, "--catalog-uri", catalog_url(floe) + "/iceberg", "--warehouse", arn,
           "--region", REGION]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, input=stdin)
    if ok:
        assert p.returncode == 0, "%s\nstdout: %s\nstderr: %s" % (cmd, p.stdout[-2000:], p.stderr[-4000:])
    return p


def rows(first, n):
    return [{"id": i, "cat": "c%d" % (i % 3)} for i in range(first, first + n)]


def py_append(t, first, n):
    t.append(pa.Table.from_pylist(rows(first, n), schema=ARROW))


def floe_append(floe, arn, name, first, n):
    data = "".join(json.dumps(r) + "\n" for r in rows(first, n))
    floe_cli(floe, arn, "append", name, "--file", "-", "--output", "json", stdin=data)


def maint(floe, arn, name, *extra, ok=True):
    p = floe_cli(floe, arn, "maintenance", "run", name, "--job", "snapshots", "--output", "json", *extra, ok=ok)
    return json.loads(p.stdout.strip().splitlines()[-1]), p


def ids_at(t, snapshot_id):
    return sorted(t.scan(snapshot_id=snapshot_id).to_arrow().column("id").to_pylist())


def reachable(t, snapshot_ids):
    """Every file the given snapshots reach: manifest lists, manifests, live content files."""
    io = t.io
    files = set()
    for sid in snapshot_ids:
        s = t.metadata.snapshot_by_id(sid)
        files.add(s.manifest_list)
        for m in s.manifests(io):
            files.add(m.manifest_path)
            for e in m.fetch_manifest_entry(io, discard_deleted=True):
                files.add(e.data_file.file_path)
    return files


def exists(s3, uri):
    u = urlparse(uri)
    try:
        s3.head_object(Bucket=u.netloc, Key=u.path.lstrip("/"))
        return True
    except s3.exceptions.ClientError as e:
        if e.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise


def listed(s3, uri_prefix):
    u = urlparse(uri_prefix)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=u.netloc, Prefix=u.path.lstrip("/")):
        keys += ["s3://%s/%s" % (u.netloc, o["Key"]) for o in page.get("Contents", [])]
    return keys


@pytest.fixture(scope="module")
def cat(floe, table_bucket):  # noqa: F811
    c = load_rest_catalog(floe, table_bucket)
    ns = unique("mx")
    c.create_namespace(ns)
    return c, ns


def test_expiry_keeps_what_the_rules_keep_and_deletes_only_unreachable_files(floe, table_bucket, cat, s3):  # noqa: F811
    c, ns = cat
    name = "%s.events" % ns
    t = c.create_table(name, schema=SCHEMA, partition_spec=SPEC,
                       properties={"write.metadata.previous-versions-max": "3",
                                   "write.metadata.delete-after-commit.enabled": "true"})
    py_append(t, 0, 30)                       # s1
    floe_append(floe, table_bucket, name, 30, 30)   # s2
    t = c.load_table(name)
    t.manage_snapshots().create_tag(t.metadata.current_snapshot_id, "v1").commit()
    py_append(t, 60, 30)                      # s3: its files only s3 reaches after the overwrite
    t.overwrite(pa.Table.from_pylist(rows(1000, 20), schema=ARROW))  # s4 (delete) + s5 (append)
    floe_append(floe, table_bucket, name, 1020, 10)  # s6
    t = c.load_table(name)
    t.manage_snapshots().create_branch(t.metadata.current_snapshot_id, "audit").commit()
    py_append(t, 1030, 10)                    # s7
    floe_append(floe, table_bucket, name, 1040, 10)  # s8
    t = c.load_table(name)
    md = t.metadata
    snaps = {s.snapshot_id: s for s in md.snapshots}
    assert len(snaps) >= 8
    before_rows = {sid: ids_at(t, sid) for sid in snaps}
    before_files = reachable(t, list(snaps))
    meta_prefix = md.location.rstrip("/") + "/metadata/"

    # what S3 Tables' rules keep with min 2 and every snapshot older than 120 h: main's head and
    # its parent, the tag's snapshot, the branch's head and its parent
    def chain(sid, n):
        out = []
        while sid is not None and len(out) < n:
            out.append(sid)
            sid = snaps[sid].parent_snapshot_id
        return out
    keep = set(chain(md.current_snapshot_id, 2)) | {md.refs["v1"].snapshot_id} | set(chain(md.refs["audit"].snapshot_id, 2))
    expire = set(snaps) - keep
    assert expire

    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # a dry run changes nothing
    rep, _ = maint(floe, table_bucket, name, "--as-of", future, "--min-snapshots-to-keep", "2", "--dry-run")
    assert rep["status"] == "Successful" and rep["dryRun"] and not rep["committed"]
    assert set(rep["removedSnapshotIds"]) == expire
    assert {s.snapshot_id for s in c.load_table(name).metadata.snapshots} == set(snaps)

    rep, p = maint(floe, table_bucket, name, "--as-of", future, "--min-snapshots-to-keep", "2")
    assert rep["status"] == "Successful" and rep["committed"], rep
    assert "committed" in p.stderr and "planned" in p.stderr
    assert set(rep["removedSnapshotIds"]) == expire
    assert rep["snapshotsRemoved"] == len(expire) and rep["deleteErrors"] == 0, rep

    t = c.load_table(name)
    after = {s.snapshot_id for s in t.metadata.snapshots}
    assert after == keep
    assert set(t.metadata.refs) == {"main", "v1", "audit"}
    for sid in keep:                           # time travel reads what it read before
        assert ids_at(t, sid) == before_rows[sid]
    kept_files = reachable(t, list(keep))
    missing = [f for f in kept_files if not exists(s3, f)]
    assert not missing, missing
    gone = before_files - kept_files
    assert any("/data/" in f for f in gone), gone  # the overwrite's victims
    still = [f for f in gone if exists(s3, f)]
    assert not still, still
    assert rep["filesDeleted"]["data"] == len([f for f in gone if "/data/" in f])
    assert rep["filesDeleted"]["manifest-lists"] == len(expire)

    # metadata.json files: only the current one and the log (previous-versions-max 3)
    log = [e.metadata_file for e in t.metadata.metadata_log]
    assert len(log) <= 3
    on_disk = {k for k in listed(s3, meta_prefix) if k.endswith(".metadata.json")}
    assert on_disk == set(log) | {t.metadata_location}, (sorted(on_disk), log, t.metadata_location)
    assert rep["filesDeleted"]["metadata"] >= 1

    # the table still takes writes and reads through every client
    floe_append(floe, table_bucket, name, 2000, 5)
    t = c.load_table(name)
    assert len(t.scan().to_arrow()) == len(before_rows[md.current_snapshot_id]) + 5

    # again after one more commit: only main's previous parent goes
    rep, _ = maint(floe, table_bucket, name, "--as-of", future, "--min-snapshots-to-keep", "2")
    assert rep["status"] == "Successful" and rep["snapshotsRemoved"] == 1, rep


def test_gc_disabled_table_is_left_alone(floe, table_bucket, cat):  # noqa: F811
    c, ns = cat
    name = "%s.nogc" % ns
    t = c.create_table(name, schema=SCHEMA, properties={"gc.enabled": "false"})
    py_append(t, 0, 5)
    py_append(t, 5, 5)
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    rep, _ = maint(floe, table_bucket, name, "--as-of", future)
    assert rep["status"] == "Disabled"
    assert "gc.enabled" in rep["failureMessage"]
    assert len(c.load_table(name).metadata.snapshots) == 2


def test_bad_usage(floe, table_bucket, cat):  # noqa: F811
    c, ns = cat
    p = floe_cli(floe, table_bucket, "maintenance", "run", "%s.events" % ns, "--job", "nope", ok=False)
    assert p.returncode == 2 and "unknown job" in p.stderr
    p = floe_cli(floe, table_bucket, "maintenance", "run", "%s.events" % ns, "--job", "snapshots",
                 "--as-of", "yesterday", ok=False)
    assert p.returncode == 2
