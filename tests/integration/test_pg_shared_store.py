"""Three floe serve nodes on one PostgreSQL catalog and one shared object store
(--object-store: here a fourth floe serve's data plane, started by the test):
8 writers append (`floe append`) to ONE table, each commit through a different
node in turn. Every acknowledged commit is in the table exactly once and no
node answers 5xx (an append that gives up after losing the compare-and-swap
16 times is not acknowledged: the writer looks for it and appends again). Then one node is SIGKILLed while commits are in flight: a
writer whose append failed looks for its commit (a snapshot summary marker)
through a live node and appends again there only if it is absent; nothing is
lost and nothing is doubled. Needs Debian's PostgreSQL (skips otherwise)."""
import json
import os
import re
import subprocess
import threading
import time

import pytest

import pgserver
from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY
from rest_fixtures import catalog_url, load_rest_catalog, unique
from tables_fixtures import make_s3tables_client, unique_tb_name

pytest.importorskip("pyarrow")
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import IntegerType, LongType, NestedField  # noqa: E402

WRITERS = 8
ROUNDS = 3
ROWS = 4


def append(node, arn, table, batch, ids):
    env = dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    rows = "".join(json.dumps({"id": i, "w": int(batch.split("-")[0])}) + "\n" for i in ids)
    cmd = [FLOE_BIN, "append", table, "--file", "-", "--summary", "batch=" + batch,
           "--catalog-uri", catalog_url(node) + "/iceberg", "--warehouse", arn, "--region", REGION]
    return subprocess.run(cmd, env=env, input=rows, capture_output=True, text=True, timeout=120)


def batches_in(node, arn, ns, name):
    t = load_rest_catalog(node, arn, name="n%d" % node.catalog_port).load_table((ns, name))
    seen = [s.summary.additional_properties.get("batch") for s in t.metadata.snapshots]
    return t, [b for b in seen if b]


@pytest.fixture
def cluster(floe_factory, monkeypatch):
    db = pgserver.fresh_database()
    backing = floe_factory()
    from conftest import make_client
    make_client(backing.endpoint).create_bucket(Bucket="shared")
    monkeypatch.setenv("FLOE_OBJECT_STORE_SECRET_ACCESS_KEY", SECRET_KEY)
    args = ["--catalog-db", db, "--object-store", "s3://shared/floe", "--object-store-endpoint",
            backing.endpoint, "--object-store-path-style", "--object-store-access-key-id", ACCESS_KEY]
    return [floe_factory(extra_args=args) for _ in range(3)]


def test_writers_on_three_nodes_one_table(cluster):
    nodes = cluster
    name = unique_tb_name("shared")
    arn = make_s3tables_client(nodes[0].catalog_port).create_table_bucket(name=name)["arn"]
    ns, tname = unique("ns"), "events"
    cat = load_rest_catalog(nodes[1], arn, name="setup")
    cat.create_namespace(ns)
    cat.create_table((ns, tname), Schema(NestedField(1, "id", LongType(), required=True),
                                         NestedField(2, "w", IntegerType(), required=True)))
    table = "%s.%s" % (ns, tname)
    acked, failed, lock = {}, [], threading.Lock()
    live = [True, True, True]

    def writer(w, first_round):
        for r in range(first_round, first_round + ROUNDS):
            batch = "%d-%d" % (w, r)
            ids = [w * 100000 + r * 100 + j for j in range(ROWS)]
            k = (w + r) % 3
            for attempt in range(6):
                while not live[k]:
                    k = (k + 1) % 3
                p = append(nodes[k], arn, table, batch, ids)
                if p.returncode == 0:
                    with lock:
                        acked[batch] = (ids, attempt)
                    break
                with lock:
                    failed.append((batch, k, p.stderr[-300:]))
                # the outcome is unknown: look on a live node before appending again
                k = (k + 1) % 3
                while not live[k]:
                    k = (k + 1) % 3
                time.sleep(0.2)
                if batch in batches_in(nodes[k], arn, ns, tname)[1]:
                    with lock:
                        acked[batch] = (ids, attempt)
                    break

    def run(first_round, kill_after=None):
        threads = [threading.Thread(target=writer, args=(w, first_round)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        if kill_after is not None:
            time.sleep(kill_after)
            live[2] = False
            nodes[2].kill()
        for t in threads:
            t.join(300)

    run(0)
    # with every node up, an append fails only by losing the compare-and-swap
    # race too often (floe append gives up after 16 rebases); it is then
    # looked for and appended again, as after a kill
    assert all("kept conflicting" in f[2] for f in failed), failed[:3]
    conflicts = len(failed)
    assert len(acked) == WRITERS * ROUNDS
    run(ROUNDS, kill_after=1.0)
    assert len(acked) == 2 * WRITERS * ROUNDS, (sorted(acked), failed[:3])

    for node in nodes[:2]:
        t, seen = batches_in(node, arn, ns, tname)
        assert sorted(seen) == sorted(acked), "a commit missing or doubled"
        got = sorted(t.scan().to_arrow().column("id").to_pylist())
        assert got == sorted(i for ids, _ in acked.values() for i in ids)
    for node in nodes:
        fives = [ln for ln in node.log_text().splitlines() if re.search(r" (GET|PUT|POST|HEAD|DELETE) \S+ 5\d\d ", ln)]
        assert not fives, fives[:3]
    print("appends given up after 16 conflicts: %d; failed after the kill: %d" % (conflicts, len(failed) - conflicts))
