"""`floe append` on a format-version 3 table (row lineage) against a live `floe serve`:
each snapshot carries first-row-id (the table's next-row-id at commit) and added-rows,
next-row-id advances by the rows added, the manifest lists give every data manifest a
first_row_id, concurrent appends that re-base get disjoint row-id ranges, and PyIceberg
and `floe scan` read every row."""
import io
import json

import pytest

from rest_fixtures import RestRaw, catalog_url, load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401
from test_append_scan import SCHEMA, SPEC, append, floe_cli, make_rows

pytest.importorskip("pyarrow")


def create_v3(floe, arn, cat, ns):
    """The table through PyIceberg if it can create v3, else through the REST API."""
    try:
        cat.create_table("%s.events" % ns, schema=SCHEMA, partition_spec=SPEC,
                         properties={"format-version": "3"})
    except Exception:  # noqa: BLE001  (older PyIceberg refuses v3)
        raw = RestRaw(floe, arn)
        body = {"name": "events", "schema": json.loads(SCHEMA.model_dump_json()),
                "partition-spec": json.loads(SPEC.model_dump_json()),
                "properties": {"format-version": "3"}}
        r = raw.request("POST", raw.p("namespaces/%s/tables" % ns), body)
        assert r.status_code == 200, r.text


def metadata(floe, arn, ns):
    r = RestRaw(floe, arn).load_table(ns, "events")
    assert r.status_code == 200, r.text
    return r.json()["metadata"]


@pytest.fixture(scope="module")
def v3(floe, table_bucket):  # noqa: F811
    cat = load_rest_catalog(floe, table_bucket)
    ns = unique("v3")
    cat.create_namespace(ns)
    create_v3(floe, table_bucket, cat, ns)
    md = metadata(floe, table_bucket, ns)
    assert md["format-version"] == 3 and md.get("next-row-id", 0) == 0
    return cat, ns


def test_two_appends_assign_row_ids(floe, table_bucket, v3):  # noqa: F811
    cat, ns = v3
    r1 = append(floe, table_bucket, ns, make_rows(0, 1200), "--batch-rows", "500")
    r2 = append(floe, table_bucket, ns, make_rows(1200, 300))
    md = metadata(floe, table_bucket, ns)
    assert md["next-row-id"] == 1500
    snaps = {s["snapshot-id"]: s for s in md["snapshots"]}
    s1, s2 = snaps[r1["snapshot-id"]], snaps[r2["snapshot-id"]]
    assert (s1["first-row-id"], s1["added-rows"]) == (0, 1200)
    assert (s2["first-row-id"], s2["added-rows"]) == (1200, 300)
    assert s2["parent-snapshot-id"] == s1["snapshot-id"]

    t = cat.load_table("%s.events" % ns)
    assert t.metadata.format_version == 3
    # the manifest list, read with fastavro: header and per-manifest first_row_id;
    # the new manifest's data files inherit theirs (null)
    fastavro = pytest.importorskip("fastavro")
    with t.io.new_input(s2["manifest-list"]).open() as f:
        rd = fastavro.reader(io.BytesIO(f.read()))
        assert rd.metadata["first-row-id"] == "1200" and rd.metadata["format-version"] == "3"
        recs = list(rd)
    assert [(m["first_row_id"], m["added_rows_count"]) for m in recs] == [(1200, 300), (0, 1200)]
    with t.io.new_input(recs[0]["manifest_path"]).open() as f:
        entries = list(fastavro.reader(io.BytesIO(f.read())))
    assert entries and all(e["data_file"]["first_row_id"] is None for e in entries)
    assert sum(e["data_file"]["record_count"] for e in entries) == 300
    ids = t.scan().to_arrow().column("id").to_pylist()
    assert sorted(ids) == list(range(1500))

    p = floe_cli(floe, table_bucket, "scan", "%s.events" % ns, "--columns", "id")
    assert sorted(json.loads(line)["id"] for line in p.stdout.splitlines()) == list(range(1500))


def test_concurrent_appends_get_disjoint_row_ids(floe, table_bucket, v3):  # noqa: F811
    """Racing appends: the losers re-base and take their first-row-id from the new metadata."""
    import os
    import subprocess
    from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY
    cat, ns = v3
    before = metadata(floe, table_bucket, ns)
    env = dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    procs = []
    for k in range(4):
        data = "".join(json.dumps(r) + "\n" for r in make_rows(10000 + k * 100, 50 + k))
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
    md = metadata(floe, table_bucket, ns)
    new = md["snapshots"][len(before["snapshots"]):]
    assert len(new) == 4
    # in commit order the ranges tile [old next-row-id, new next-row-id)
    at = before["next-row-id"]
    for s in new:
        assert s["first-row-id"] == at
        at += s["added-rows"]
    assert sorted(s["added-rows"] for s in new) == [50, 51, 52, 53]
    assert md["next-row-id"] == at == before["next-row-id"] + 206
    t = cat.load_table("%s.events" % ns)
    assert t.scan().to_arrow().num_rows == at
