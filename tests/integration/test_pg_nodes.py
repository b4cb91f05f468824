"""Three floe serve nodes on one PostgreSQL catalog: the control plane is any
node's. A table bucket made on one node is seen by the others; 8 writers
creating namespaces through rotating nodes: every acknowledged one is listed
exactly once on every node, and nothing answers 5xx; the same name created
through three nodes at once: one 200, the others 409; configuration written
through one node is read back through another.

Each node keeps objects in its own data dir here, so this covers what needs
only the catalog (test_pg_shared_store.py adds the shared object store). Needs Debian's PostgreSQL server binaries (skips otherwise)."""
import threading

from botocore.exceptions import ClientError

import pgserver
from tables_fixtures import make_s3tables_client, unique_tb_name

WRITERS = 8
PER_WRITER = 12


def test_three_nodes_share_the_catalog(floe_factory):
    db = pgserver.fresh_database()
    nodes = [floe_factory(extra_args=["--catalog-db", db]) for _ in range(3)]
    clients = [make_s3tables_client(n.catalog_port) for n in nodes]
    name = unique_tb_name("nodes")
    arn = clients[0].create_table_bucket(name=name)["arn"]
    for c in clients[1:]:
        assert c.get_table_bucket(tableBucketARN=arn)["name"] == name
        assert name in [b["name"] for b in c.list_table_buckets(prefix="nodes")["tableBuckets"]]

    acked, errors = [], []

    def writer(w):
        mine = [make_s3tables_client(n.catalog_port) for n in nodes]
        for i in range(PER_WRITER):
            ns = "w%d_%d" % (w, i)
            c = mine[(w + i) % 3]
            try:
                c.create_namespace(tableBucketARN=arn, namespace=[ns])
                acked.append(ns)
            except ClientError as e:
                errors.append((ns, e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]))
            except Exception as e:  # noqa: BLE001 - recorded, asserted below
                errors.append((ns, repr(e)))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:5]
    assert len(acked) == WRITERS * PER_WRITER
    for c in clients:
        listed = []
        token = None
        while True:
            kw = {"continuationToken": token} if token else {}
            r = c.list_namespaces(tableBucketARN=arn, maxNamespaces=25, **kw)
            listed += [n["namespace"][0] for n in r["namespaces"]]
            token = r.get("continuationToken")
            if not token:
                break
        assert sorted(listed) == sorted(acked)

    # one name, three nodes at once: exactly one creates it
    for round_ in range(5):
        results, barrier = [], threading.Barrier(3)

        def create(c, ns="race_%d" % round_):
            barrier.wait()
            try:
                c.create_namespace(tableBucketARN=arn, namespace=[ns])
                results.append(200)
            except ClientError as e:
                results.append(e.response["ResponseMetadata"]["HTTPStatusCode"])

        ts = [threading.Thread(target=create, args=(c,)) for c in clients]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert sorted(results) == [200, 409, 409], results

    # configuration written through one node, read through another
    clients[1].put_table_bucket_maintenance_configuration(
        tableBucketARN=arn, type="icebergUnreferencedFileRemoval",
        value={"status": "disabled"})
    got = clients[2].get_table_bucket_maintenance_configuration(tableBucketARN=arn)
    assert got["configuration"]["icebergUnreferencedFileRemoval"]["status"] == "disabled"


def test_iam_change_reaches_other_nodes_at_once(floe_factory):
    """A key deleted through one node is refused by another node that had it
    cached, well within the cache's 1 s lifetime: the writer's NOTIFY empties
    the other nodes' caches (LISTEN on the shared PostgreSQL)."""
    import time

    from iam_fixtures import iam_client, s3_client

    db = pgserver.fresh_database()
    a, b = (floe_factory(extra_args=["--catalog-db", db]) for _ in range(2))
    root = iam_client(a)
    root.create_user(UserName="leaver")
    root.put_user_policy(UserName="leaver", PolicyName="all", PolicyDocument=(
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}'))
    key = root.create_access_key(UserName="leaver")["AccessKey"]
    on_b = s3_client(b, key["AccessKeyId"], key["SecretAccessKey"])
    for _ in range(3):            # on b, and in b's cache
        on_b.list_buckets()
    root.delete_access_key(UserName="leaver", AccessKeyId=key["AccessKeyId"])
    deleted = time.monotonic()
    while True:
        try:
            on_b.list_buckets()
        except ClientError as e:
            assert e.response["Error"]["Code"] == "InvalidAccessKeyId", e.response["Error"]
            break
        assert time.monotonic() - deleted < 0.4, "node b still served a key deleted through node a"
        time.sleep(0.02)
    root.delete_user_policy(UserName="leaver", PolicyName="all")
    root.delete_user(UserName="leaver")


def _signals(node):
    """floe_iam_signals_total on node's /metrics: {"sent": n, "failed": n, "received": n}."""
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.catalog_port, timeout=10) as r:
        text = r.read().decode()
    got = {}
    for ln in text.splitlines():
        if ln.startswith("floe_iam_signals_total{"):
            got[ln.split('event="')[1].split('"')[0]] = int(float(ln.split()[-1]))
    assert set(got) == {"sent", "failed", "received"}, "no floe_iam_signals_total in /metrics"
    return got


def _settled(nodes, within=3.0):
    """Every node's signal counters once they stop moving (a NOTIFY in flight lands
    within milliseconds; 0.3 s without change counts as settled)."""
    import time
    deadline = time.monotonic() + within
    last = [_signals(n) for n in nodes]
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = [_signals(n) for n in nodes]
        if now == last:
            return now
        last = now
    return last


def test_iam_signals_only_for_writes(floe_factory):
    """/metrics counts the IAM cache-invalidation signals: read-only requests
    (STS GetCallerIdentity, a loadTable GET, a reportMetrics POST, an S3 GET)
    send none, and each IAM change (CreateUser, PutUserPolicy) sends exactly one,
    which the other node receives (its cache is emptied)."""
    import time

    import pyarrow as pa

    from iam_fixtures import iam_client, policy
    from rest_fixtures import RestRaw, load_rest_catalog, unique
    from conftest import make_client

    db = pgserver.fresh_database()
    a, b = (floe_factory(extra_args=["--catalog-db", db]) for _ in range(2))
    arn = make_s3tables_client(a.catalog_port).create_table_bucket(name=unique_tb_name("sig"))["arn"]
    cat = load_rest_catalog(a, arn)
    cat.create_namespace("ns")
    tbl = cat.create_table(("ns", "t"), pa.schema([("x", pa.int64())]))
    tbl.append(pa.table({"x": [1, 2]}))
    s3 = make_client(a.endpoint)
    s3.create_bucket(Bucket="sigdata")
    s3.put_object(Bucket="sigdata", Key="k", Body=b"v")
    raw = RestRaw(a, arn)
    sts = iam_client(a, svc="sts")

    before = _settled([a, b])
    for _ in range(3):
        assert sts.get_caller_identity()["Account"]
        assert raw.load_table("ns", "t").status_code == 200
        r = raw.request("POST", raw.p("namespaces/ns/tables/t/metrics"),
                        {"report-type": "scan-report", "table-name": "ns.t", "snapshot-id": 1,
                         "filter": True, "schema-id": 0, "projected-field-ids": [1],
                         "projected-field-names": ["x"], "metrics": {}})
        assert r.status_code == 204, r.text
        assert s3.get_object(Bucket="sigdata", Key="k")["Body"].read() == b"v"
        assert cat.load_table(("ns", "t")).scan().to_arrow().num_rows == 2
    after = _settled([a, b])
    assert after == before, (before, after)

    root = iam_client(a)
    for change in (lambda: root.create_user(UserName="signalled"),
                   lambda: root.put_user_policy(UserName="signalled", PolicyName="p",
                                                PolicyDocument=policy("s3:GetObject"))):
        before = _settled([a, b])
        change()
        deadline = time.monotonic() + 2
        while _signals(b)["received"] == before[1]["received"] and time.monotonic() < deadline:
            time.sleep(0.02)
        after = _settled([a, b])
        assert after[0]["sent"] - before[0]["sent"] == 1, (before, after)
        assert after[1]["sent"] == before[1]["sent"] and after[0]["failed"] == before[0]["failed"]
        assert after[1]["received"] - before[1]["received"] == 1, (before, after)
    root.delete_user_policy(UserName="signalled", PolicyName="p")
    root.delete_user(UserName="signalled")


def test_load_table_is_one_round_trip(floe_factory):
    """A loadTable (GET .../tables/{t}) reads the table bucket's row and the table's
    in one PostgreSQL round trip (floe_catalog_pg_round_trips_total), as does a
    GET of a table that does not exist (404)."""
    import urllib.request

    import pyarrow as pa

    from rest_fixtures import RestRaw, load_rest_catalog

    def trips():
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % a.catalog_port, timeout=10) as r:
            for ln in r.read().decode().splitlines():
                if ln.startswith("floe_catalog_pg_round_trips_total"):
                    return int(float(ln.split()[-1]))
        raise AssertionError("no floe_catalog_pg_round_trips_total in /metrics")

    a = floe_factory(extra_args=["--catalog-db", pgserver.fresh_database()])
    arn = make_s3tables_client(a.catalog_port).create_table_bucket(name=unique_tb_name("trips"))["arn"]
    cat = load_rest_catalog(a, arn)
    cat.create_namespace("ns")
    cat.create_table(("ns", "t"), pa.schema([("x", pa.int64())])).append(pa.table({"x": [1]}))
    raw = RestRaw(a, arn)
    assert raw.load_table("ns", "t").status_code == 200      # the metadata is cached now
    n = 20
    before = trips()
    for _ in range(n):
        r = raw.load_table("ns", "t")
        assert r.status_code == 200 and r.json()["metadata"]["current-snapshot-id"]
    assert trips() - before == n
    before = trips()
    for _ in range(n):
        assert raw.load_table("ns", "nosuch").status_code == 404
    assert trips() - before == n
