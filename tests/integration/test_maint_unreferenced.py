"""Unreferenced-file removal (`floe maintenance run --job unreferenced`, src/iceberg/orphans.c) and
`floe maintenance restore` against a live `floe serve`:
  - a table written by PyIceberg and `floe append`, plus objects a killed writer would leave
    (boto3 puts into the warehouse): young orphans stay; as of now+4 days they become
    noncurrent (gone from their key, under <location>/.noncurrent/<ms>/), PyIceberg reads the
    same rows, every file of every snapshot still exists; `restore` brings one back; as of
    now+15 days the noncurrent ones are deleted;
  - what compaction and an expiry that deletes nothing (PyIceberg's expire_snapshots) leave
    unreferenced, and the metadata.json files floe's expiry leaves past
    write.metadata.previous-versions-max, are swept, while every retained snapshot stays whole."""
import datetime as dt
import json
from urllib.parse import urlparse

import pytest

from rest_fixtures import load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401
from test_maint_expire import ARROW, SCHEMA, SPEC, exists, floe_append, floe_cli, listed, py_append, reachable

pa = pytest.importorskip("pyarrow")


def when(days):
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_job(floe, arn, name, job, *extra, ok=True):
    p = floe_cli(floe, arn, "maintenance", "run", name, "--job", job, "--output", "json", *extra, ok=ok)
    return json.loads(p.stdout.strip().splitlines()[-1]), p


def restore(floe, arn, name, *keys, ok=True):
    p = floe_cli(floe, arn, "maintenance", "restore", name, "--output", "json", *keys, ok=ok)
    return json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else None, p


def ids(t):
    return sorted(t.scan().to_arrow().column("id").to_pylist())


def all_reachable(t):
    """Every file every snapshot of t reaches, plus the metadata files it names."""
    md = t.metadata
    files = reachable(t, [s.snapshot_id for s in md.snapshots])
    files |= {e.metadata_file for e in md.metadata_log} | {t.metadata_location}
    return files


def put(s3, uri, body):
    u = urlparse(uri)
    s3.put_object(Bucket=u.netloc, Key=u.path.lstrip("/"), Body=body)


def get(s3, uri):
    u = urlparse(uri)
    return s3.get_object(Bucket=u.netloc, Key=u.path.lstrip("/"))["Body"].read()


@pytest.fixture(scope="module")
def cat(floe, table_bucket):  # noqa: F811
    c = load_rest_catalog(floe, table_bucket)
    ns = unique("mu")
    c.create_namespace(ns)
    return c, ns


def test_orphans_become_noncurrent_then_deleted_and_restore(floe, table_bucket, cat, s3):  # noqa: F811
    c, ns = cat
    name = "%s.events" % ns
    t = c.create_table(name, schema=SCHEMA, partition_spec=SPEC)
    py_append(t, 0, 30)
    floe_append(floe, table_bucket, name, 30, 30)
    t = c.load_table(name)
    py_append(t, 60, 30)
    t = c.load_table(name)
    loc = t.metadata.location.rstrip("/")
    before_rows = ids(t)
    before = all_reachable(t)
    a_data = next(f for f in before if "/data/" in f)
    # what a killed writer leaves: a data file, a manifest, a half-written metadata file
    orphans = {loc + "/data/cat=c0/00000-0-killed-writer.parquet": get(s3, a_data),
               loc + "/metadata/snap-killed-writer.avro": b"Obj\x01 not really",
               loc + "/metadata/99999-killed.metadata.json": b"{}"}
    for uri, body in orphans.items():
        put(s3, uri, body)

    # now: everything is young
    rep, p = run_job(floe, table_bucket, name, "unreferenced")
    assert rep["status"] == "Successful" and rep["markedNoncurrent"] == 0 and rep["young"] == 3, rep
    assert rep["referenced"] >= len(before) and rep["objectsListed"] == len(before) + 3, rep
    assert "listed" in p.stderr

    # a dry run 4 days on counts and changes nothing
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(4), "--dry-run")
    assert rep["dryRun"] and rep["markedNoncurrent"] == 3, rep
    assert all(exists(s3, u) for u in orphans)

    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(4))
    assert rep["status"] == "Successful" and rep["markedNoncurrent"] == 3 and rep["errors"] == 0, rep
    assert rep["bytesMarkedNoncurrent"] == sum(len(b) for b in orphans.values()), rep
    assert rep["deleted"] == 0
    for uri in orphans:                        # hidden: not under their key, not listed there
        assert not exists(s3, uri)
    assert not set(orphans) & set(listed(s3, loc + "/data/")) and not set(orphans) & set(listed(s3, loc + "/metadata/"))
    hidden = listed(s3, loc + "/.noncurrent/")
    assert len(hidden) == 3, hidden
    ms = {h.split("/.noncurrent/")[1].split("/")[0] for h in hidden}
    assert len(ms) == 1 and abs(int(ms.pop()) / 1000 - (dt.datetime.now().timestamp() + 4 * 86400)) < 600
    t = c.load_table(name)
    assert ids(t) == before_rows               # engines do not notice
    missing = [f for f in all_reachable(t) if not exists(s3, f)]
    assert not missing, missing

    # restore one by its original location; a key that matches nothing fails
    back = loc + "/data/cat=c0/00000-0-killed-writer.parquet"
    rep, _ = restore(floe, table_bucket, name, back)
    assert rep["status"] == "Successful" and rep["restored"] == 1 and rep["bytesRestored"] == len(orphans[back]), rep
    assert get(s3, back) == orphans[back]
    rep, p = restore(floe, table_bucket, name, "data/no-such-file.parquet", ok=False)
    assert p.returncode == 1 and rep["restored"] == 0 and "no-such-file" in rep["failureMessage"], (rep, p.stderr)
    p = floe_cli(floe, table_bucket, "maintenance", "restore", name, ok=False)
    assert p.returncode == 2

    # 15 days on: the noncurrent ones (11 days noncurrent) are deleted; the restored one is
    # dated now, so it becomes noncurrent again
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(15))
    assert rep["deleted"] == 2 and rep["markedNoncurrent"] == 1 and rep["errors"] == 0, rep
    assert rep["bytesDeleted"] == sum(len(b) for u, b in orphans.items() if u != back), rep
    assert len(listed(s3, loc + "/.noncurrent/")) == 1
    assert not any(exists(s3, u) for u in orphans)
    t = c.load_table(name)
    assert ids(t) == before_rows
    missing = [f for f in all_reachable(t) if not exists(s3, f)]
    assert not missing, missing
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(30), "--noncurrent-days", "5")
    assert rep["deleted"] == 1 and listed(s3, loc + "/.noncurrent/") == []

    # the table goes on taking writes
    floe_append(floe, table_bucket, name, 1000, 5)
    assert len(ids(c.load_table(name))) == len(before_rows) + 5


def test_sweeps_what_compaction_and_expiry_left(floe, table_bucket, cat, s3):  # noqa: F811
    c, ns = cat
    name = "%s.compacted" % ns
    t = c.create_table(name, schema=SCHEMA, partition_spec=SPEC,
                       properties={"write.metadata.previous-versions-max": "2"})
    for k in range(4):
        floe_append(floe, table_bucket, name, k * 30, 30)
    t = c.load_table(name)
    for k in range(4, 6):
        py_append(t, k * 30, 30)
        t = c.load_table(name)
    before_rows = ids(t)
    rep, _ = run_job(floe, table_bucket, name, "compaction")
    assert rep["status"] == "Successful" and rep["filesIn"] > rep["filesOut"] > 0, rep
    t = c.load_table(name)
    before = all_reachable(t) | reachable(t, [s.snapshot_id for s in t.metadata.snapshots])
    loc = t.metadata.location.rstrip("/")
    # nothing compaction replaced is touched while the old snapshots remain
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(4))
    metadata_off_log = rep["markedNoncurrent"]      # metadata.json files past previous-versions-max
    assert metadata_off_log >= 5, rep
    assert all(".metadata.json" in h for h in listed(s3, loc + "/.noncurrent/"))
    assert not [f for f in all_reachable(c.load_table(name)) if not exists(s3, f)]

    # an expiry that removes the snapshots but deletes no file (PyIceberg's)
    head = t.metadata.current_snapshot_id
    t.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in t.metadata.snapshots if s.snapshot_id != head]).commit()
    t = c.load_table(name)
    assert len(t.metadata.snapshots) == 1
    kept = all_reachable(t)
    left = {f for f in before - kept if not f.endswith(".metadata.json")}
    assert any("/data/" in f for f in left) and all(exists(s3, f) for f in left)

    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(8))
    assert rep["status"] == "Successful" and rep["errors"] == 0, rep
    assert rep["markedNoncurrent"] >= len(left), (rep, len(left))
    assert not [f for f in left if exists(s3, f)]
    assert not [f for f in kept if not exists(s3, f)]
    assert ids(t) == before_rows

    # floe's expiry without delete-after-commit leaves metadata files too
    floe_append(floe, table_bucket, name, 5000, 3)
    rep, _ = run_job(floe, table_bucket, name, "snapshots", "--as-of", when(10))
    assert rep["status"] == "Successful" and rep["snapshotsRemoved"] == 1, rep
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(20))
    assert rep["deleted"] >= metadata_off_log + len(left), rep
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(40))
    assert listed(s3, loc + "/.noncurrent/") == []
    t = c.load_table(name)
    on_disk = set(listed(s3, loc + "/"))
    assert on_disk == all_reachable(t), (sorted(on_disk - all_reachable(t)), sorted(all_reachable(t) - on_disk))
    assert ids(t) == sorted(before_rows + [5000, 5001, 5002])


def test_gc_disabled_table_is_left_alone(floe, table_bucket, cat, s3):  # noqa: F811
    c, ns = cat
    name = "%s.nogc" % ns
    t = c.create_table(name, schema=SCHEMA, properties={"gc.enabled": "false"})
    py_append(t, 0, 5)
    orphan = t.metadata.location.rstrip("/") + "/data/orphan.parquet"
    put(s3, orphan, b"x")
    rep, _ = run_job(floe, table_bucket, name, "unreferenced", "--as-of", when(30))
    assert rep["status"] == "Disabled" and "gc.enabled" in rep["failureMessage"]
    assert exists(s3, orphan)
