"""floe serve killed with SIGKILL during a stream of REST commits: after a
restart every acknowledged commit is in the table, the snapshot chain is
whole, the table loads, and commits go on."""
import random
import threading
import time

import pytest
import requests

from rest_fixtures import RestRaw, s3tables_client


def append_commit(raw, ns, name):
    """One append commit as an engine sends it; returns (status, snapshot id)."""
    cur = raw.load_table(ns, name)
    cur.raise_for_status()
    md = cur.json()["metadata"]
    parent = md.get("current-snapshot-id")
    if parent in (None, -1):
        parent = None
    sid = random.randint(1, 2**62)
    snap = {"snapshot-id": sid, "sequence-number": md["last-sequence-number"] + 1,
            "timestamp-ms": int(time.time() * 1000),
            "manifest-list": "%s/metadata/snap-%d.avro" % (md["location"], sid),
            "summary": {"operation": "append"}, "schema-id": md["current-schema-id"]}
    if parent is not None:
        snap["parent-snapshot-id"] = parent
    body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
            "updates": [{"action": "add-snapshot", "snapshot": snap},
                        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                         "snapshot-id": sid}]}
    r = raw.request("POST", raw.p("namespaces/%s/tables/%s" % (ns, name)), body=body)
    return r.status_code, sid


@pytest.mark.slow
def test_sigkill_during_commits_keeps_every_acknowledged_commit(floe_factory):
    srv = floe_factory()
    arn = s3tables_client(srv).create_table_bucket(name="crash-bucket")["arn"]
    raw = RestRaw(srv, arn)
    assert raw.request("POST", raw.p("namespaces"), body={"namespace": ["ns"]}).status_code == 200
    r = raw.request("POST", raw.p("namespaces/ns/tables"), body={
        "name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True}]}})
    assert r.status_code == 200, r.text

    acked, stop, errors = [], threading.Event(), []

    def committer():
        while not stop.is_set():
            try:
                status, sid = append_commit(raw, "ns", "t")
            except (requests.RequestException, ValueError):
                return  # the server is gone
            if status == 200:
                acked.append(sid)
            elif status >= 500 or status not in (409,):
                errors.append(status)

    threads = [threading.Thread(target=committer) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.time() + 20
    while len(acked) < 30 and time.time() < deadline:
        time.sleep(0.02)
    srv.kill()
    stop.set()
    for t in threads:
        t.join(30)
    assert len(acked) >= 30, "too few commits before the kill: %d" % len(acked)
    assert errors == [], errors

    srv.start()
    raw = RestRaw(srv, arn)
    r = raw.load_table("ns", "t")
    assert r.status_code == 200, r.text
    md = r.json()["metadata"]
    by_id = {s["snapshot-id"]: s for s in md["snapshots"]}
    missing = [s for s in acked if s not in by_id]
    assert not missing, "acknowledged commits lost: %s" % missing[:5]
    # the chain from main back to the first snapshot is whole
    seen, cur = 0, md["current-snapshot-id"]
    while cur is not None and cur != -1:
        seen += 1
        cur = by_id[cur].get("parent-snapshot-id")
    assert seen == len(md["snapshots"])
    # and the table takes commits again
    status, sid = append_commit(raw, "ns", "t")
    assert status == 200
    assert raw.load_table("ns", "t").json()["metadata"]["current-snapshot-id"] == sid
