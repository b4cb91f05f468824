"""Policies enforced on the Iceberg REST catalog and on the S3 data plane, for
IAM users signing with their own keys (PyIceberg, boto3 s3):

- per Iceberg REST operation, a user holding exactly the actions of the source
  document's mapping succeeds, and the same user missing any one of them gets
  403 ForbiddenException (or S3 AccessDenied for the data it reads/writes),
  and the denied call changed nothing;
- objects in a table's warehouse are governed by s3tables:GetTableData /
  PutTableData on the table's ARN (identity or table-bucket/table policy);
  elsewhere by s3: actions on arn:aws:s3:::bucket/key;
- denials are in the audit log; user keys are refused once deleted."""
import json
import uuid

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, rest_catalog_as, s3_client
from rest_fixtures import load_rest_catalog, s3tables_client
from tables_fixtures import client_error

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False))
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": pa.array(["a", "b", "c"])})


@pytest.fixture(scope="module")
def world(floe):
    """A table bucket with a namespace and a table holding 3 rows, made by root."""
    s3t = s3tables_client(floe)
    arn = s3t.create_table_bucket(name="iam-%s" % uuid.uuid4().hex[:10])["arn"]
    root = load_rest_catalog(floe, arn, name="root-%s" % uuid.uuid4().hex[:6])
    ns = "ns_%s" % uuid.uuid4().hex[:6]
    root.create_namespace(ns)
    t = root.create_table((ns, "t"), SCHEMA)
    t.append(ROWS)
    return {"arn": arn, "root": root, "ns": ns, "s3t": s3t}


def denied(exc):
    """A refusal of the REST catalog (403 ForbiddenException) or of the data plane (AccessDenied)."""
    if isinstance(exc, ForbiddenError):
        return True
    text = str(exc)
    return any(w in text for w in ("AccessDenied", "ACCESS_DENIED", "403", "Forbidden", "not authorized"))


# Each Iceberg REST operation: the actions the source document maps it to, the
# actions the client needs before it (config, a loadTable first), a set-up run
# as root, the operation as the user, and a check that nothing changed.
def _ops():
    def new_ns(w):
        return "x_%s" % uuid.uuid4().hex[:6]

    return [
        ("getConfig", ["GetTableBucket"], [], None, lambda c, w, a: None, None),
        ("listNamespaces", ["ListNamespaces"], [], None, lambda c, w, a: c.list_namespaces(), None),
        ("createNamespace", ["CreateNamespace"], [], new_ns, lambda c, w, a: c.create_namespace(a),
         lambda w, a: (a,) not in w["root"].list_namespaces()),
        ("loadNamespaceMetadata", ["GetNamespace"], [], None, lambda c, w, a: c.load_namespace_properties(w["ns"]), None),
        ("dropNamespace", ["DeleteNamespace"], [], lambda w: (w["root"].create_namespace(new_ns(w) + "d") and None)
         or w["root"].list_namespaces()[-1][0], lambda c, w, a: c.drop_namespace(a),
         lambda w, a: (a,) in w["root"].list_namespaces()),
        ("listTables", ["ListTables"], [], None, lambda c, w, a: c.list_tables(w["ns"]), None),
        ("createTable", ["CreateTable", "PutTableData"], [], lambda w: "c_%s" % uuid.uuid4().hex[:6],
         lambda c, w, a: c.create_table((w["ns"], a), SCHEMA),
         lambda w, a: not w["root"].table_exists((w["ns"], a))),
        ("loadTable", ["GetTableMetadataLocation", "GetTableData"], [], None,
         lambda c, w, a: c.load_table((w["ns"], "t")).scan().to_arrow().num_rows == 3 or pytest.fail("rows"), None),
        ("updateTable", ["UpdateTableMetadataLocation", "PutTableData", "GetTableData"], ["GetTableMetadataLocation"],
         lambda w: w["root"].load_table((w["ns"], "t")).metadata_location,
         lambda c, w, a: c.load_table((w["ns"], "t")).append(ROWS),
         lambda w, a: w["root"].load_table((w["ns"], "t")).metadata_location == a),
        ("dropTable", ["DeleteTable"], [], lambda w: w["root"].create_table((w["ns"], "d_%s" % uuid.uuid4().hex[:6]),
                                                                             SCHEMA).name()[-1],
         lambda c, w, a: c.drop_table((w["ns"], a)), lambda w, a: w["root"].table_exists((w["ns"], a))),
        # PyIceberg checks that the destination namespace exists first, and loads the result
        ("renameTable", ["RenameTable"], ["GetNamespace", "GetTableMetadataLocation", "GetTableData"], lambda w: w["root"].create_table((w["ns"], "r_%s" % uuid.uuid4().hex[:6]),
                                                                               SCHEMA).name()[-1],
         lambda c, w, a: c.rename_table((w["ns"], a), (w["ns"], a + "_new")),
         lambda w, a: w["root"].table_exists((w["ns"], a))),
        ("tableExists", ["GetTable"], [], None, lambda c, w, a: c.table_exists((w["ns"], "t")) or pytest.fail("x"), None),
        ("namespaceExists", ["GetNamespace"], [], None,
         lambda c, w, a: c.namespace_exists(w["ns"]) or pytest.fail("x"), None),
    ]


OPS = _ops()


@pytest.mark.parametrize("op", OPS, ids=[o[0] for o in OPS])
def test_rest_operation_needs_exactly_its_actions(floe, world, new_user, op):
    name, needs, before, setup, run, unchanged = op
    u = new_user()
    base = ["GetTableBucket"] + before
    extra = []
    cases = [(None, True)] + [(a, False) for a in needs if a not in base]
    for missing, ok in cases:
        acts = ["s3tables:" + a for a in sorted(set(base + needs + extra)) if a != missing]
        if missing == "GetTableBucket":
            continue
        u.put(acts)
        arg = setup(world) if setup else None
        cat = rest_catalog_as(floe, world["arn"], u.ak, u.sk, name="u-" + uuid.uuid4().hex[:6])
        if ok:
            run(cat, world, arg)
        else:
            with pytest.raises(Exception) as ei:
                run(cat, world, arg)
            assert denied(ei.value), (name, missing, repr(ei.value))
            if unchanged:
                assert unchanged(world, arg), (name, missing)
    # without even GetTableBucket the catalog cannot be loaded
    u.put(["s3tables:" + a for a in needs if a != "GetTableBucket"] or ["s3tables:GetNamespace"])
    with pytest.raises(ForbiddenError):
        rest_catalog_as(floe, world["arn"], u.ak, u.sk, name="u-" + uuid.uuid4().hex[:6])


def test_rest_denial_shape_and_audit(floe, world, new_user):
    from rest_fixtures import RestRaw
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    import requests
    u = new_user()
    raw = RestRaw(floe, world["arn"])
    url = raw.base + raw.p("namespaces/%s/tables/t" % world["ns"])
    req = AWSRequest(method="DELETE", url=url, headers={
        "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
    SigV4Auth(Credentials(u.ak, u.sk), "s3tables", "us-east-1").add_auth(req)
    resp = requests.delete(url, headers=dict(req.headers.items()), timeout=30)
    assert resp.status_code == 403, resp.text
    err = resp.json()["error"]
    assert err["type"] == "ForbiddenException" and err["code"] == 403
    assert u.arn in err["message"] and "s3tables:DeleteTable" in err["message"]
    assert world["root"].table_exists((world["ns"], "t"))
    lines = [ln for ln in floe.log_text().splitlines() if "audit {" in ln and u.arn in ln]
    docs = [json.loads(ln[ln.index("audit {") + 6:]) for ln in lines]
    assert any(d["decision"] == "deny" and d["action"] == "s3tables:DeleteTable" and
               d["resource"] == world["s3t"].get_table(tableBucketARN=world["arn"], namespace=world["ns"],
                                                       name="t")["tableARN"] for d in docs), docs
    assert not any(d["decision"] == "write" for d in docs), docs  # the denied call wrote nothing


def _warehouse(world):
    loc = world["root"].load_table((world["ns"], "t")).metadata_location
    b, key = loc[len("s3://"):].split("/", 1)
    return b, key


def test_warehouse_objects_follow_table_data_actions(floe, world, new_user):
    u = new_user()
    s3 = u.s3()
    b, key = _warehouse(world)
    # a user key authenticates on the data plane; without a policy it reads nothing
    code, status, _ = client_error(s3.get_object, Bucket=b, Key=key)
    assert (code, status) == ("AccessDenied", 403)
    u.put("oss:GetTableData")
    assert s3.get_object(Bucket=b, Key=key)["Body"].read().startswith(b"{")
    s3.list_objects_v2(Bucket=b, Prefix="metadata/")
    code, status, _ = client_error(s3.put_object, Bucket=b, Key="data/evil.parquet", Body=b"x")
    assert (code, status) == ("AccessDenied", 403)
    code, _, _ = client_error(s3.delete_object, Bucket=b, Key=key)
    assert code == "AccessDenied"
    root_s3 = s3_client(floe, *_root_keys())
    assert "Contents" not in root_s3.list_objects_v2(Bucket=b, Prefix="data/evil")
    root_s3.head_object(Bucket=b, Key=key)
    # PutTableData on that table's ARN (resource-scoped) allows writes
    tarn = world["s3t"].get_table(tableBucketARN=world["arn"], namespace=world["ns"], name="t")["tableARN"]
    u.put(["s3tables:GetTableData", "s3tables:PutTableData"], resource=tarn)
    s3.put_object(Bucket=b, Key="data/ok.bin", Body=b"x")
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "data/ok.bin"}]})
    assert [d["Key"] for d in r.get("Deleted", [])] == ["data/ok.bin"]
    # another table's ARN: denied
    u.put(["s3tables:GetTableData"], resource=world["arn"] + "/table/not-this-one")
    code, _, _ = client_error(s3.get_object, Bucket=b, Key=key)
    assert code == "AccessDenied"


def test_warehouse_table_policy_grants_and_denies(floe, world, new_user):
    u = new_user()
    s3 = u.s3()
    b, key = _warehouse(world)
    s3t = world["s3t"]
    s3t.put_table_bucket_policy(tableBucketARN=world["arn"], resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": u.arn},
                                                 "Action": "s3tables:GetTableData", "Resource": world["arn"] + "/table/*",
                                                 "Condition": {"StringEquals": {"s3tables:namespace": world["ns"]}}}]}))
    try:
        s3.get_object(Bucket=b, Key=key)
        s3t.put_table_policy(tableBucketARN=world["arn"], namespace=world["ns"], name="t", resourcePolicy=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*",
                                                     "Action": "oss:GetTableData", "Resource": "*",
                                                     "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}]}))
        code, _, _ = client_error(s3.get_object, Bucket=b, Key=key)
        assert code == "AccessDenied"
        s3t.delete_table_policy(tableBucketARN=world["arn"], namespace=world["ns"], name="t")
    finally:
        s3t.delete_table_bucket_policy(tableBucketARN=world["arn"])


def _root_keys():
    from conftest import ACCESS_KEY, SECRET_KEY
    return ACCESS_KEY, SECRET_KEY


def test_plain_buckets_use_s3_actions(floe, new_user, s3):
    u = new_user()
    us3 = u.s3()
    name = "iamplain-%s" % uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="pub/a.txt", Body=b"hello")
    s3.put_object(Bucket=name, Key="priv/b.txt", Body=b"secret")
    try:
        code, status, _ = client_error(us3.list_buckets)
        assert (code, status) == ("AccessDenied", 403)
        code, _, _ = client_error(us3.create_bucket, Bucket=name + "-u")
        assert code == "AccessDenied"
        assert name + "-u" not in [x["Name"] for x in s3.list_buckets()["Buckets"]]
        u.put("s3:GetObject", resource="arn:aws:s3:::%s/pub/*" % name)
        assert us3.get_object(Bucket=name, Key="pub/a.txt")["Body"].read() == b"hello"
        code, _, _ = client_error(us3.get_object, Bucket=name, Key="priv/b.txt")
        assert code == "AccessDenied"
        # CopyObject needs GetObject on the source as well as PutObject on the target
        u.put(["s3:PutObject"], resource="arn:aws:s3:::%s/pub/*" % name)
        code, _, _ = client_error(us3.copy_object, Bucket=name, Key="pub/c.txt",
                                  CopySource={"Bucket": name, "Key": "priv/b.txt"})
        assert code == "AccessDenied"
        assert "Contents" not in s3.list_objects_v2(Bucket=name, Prefix="pub/c")
    finally:
        for k in ("pub/a.txt", "priv/b.txt"):
            s3.delete_object(Bucket=name, Key=k)
        s3.delete_bucket(Bucket=name)


def test_deleted_user_key_refused_on_every_port(floe, world, new_user, root_iam):
    u = new_user()
    u.put("s3tables:*")
    u.put("s3:*", name="s3")
    b, key = _warehouse(world)
    rest_catalog_as(floe, world["arn"], u.ak, u.sk, name="d-" + uuid.uuid4().hex[:6]).list_namespaces()
    u.s3().get_object(Bucket=b, Key=key)
    root_iam.delete_access_key(UserName=u.name, AccessKeyId=u.ak)
    code, status, _ = client_error(u.s3().get_object, Bucket=b, Key=key)
    assert status == 403, code
    with pytest.raises(Exception) as ei:
        rest_catalog_as(floe, world["arn"], u.ak, u.sk, name="d-" + uuid.uuid4().hex[:6])
    assert "403" in str(ei.value) or "Forbidden" in type(ei.value).__name__ or "NotAuthorized" in str(ei.value)


def _iam_cache_misses(floe):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % floe.catalog_port, timeout=10) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith('floe_iam_cache_lookups_total{result="miss"}'):
                return int(ln.split()[-1])
    raise AssertionError("no floe_iam_cache_lookups_total in /metrics")


@pytest.mark.single_node("reads one node's IAM cache counters; a cluster spreads the requests over several caches")
def test_table_commit_keeps_the_iam_cache(floe, world, new_user):
    """A table commit (updateTable) moves only the metadata pointer: the keys,
    policies and table lookups cached for authorisation stay valid, so the
    commit and the loadTable after it read none of them again (a write that
    can change them, e.g. put_user_policy, still drops them)."""
    u = new_user()
    u.put(["s3tables:GetTableBucket", "s3tables:GetTableMetadataLocation", "s3tables:GetTableData",
           "s3tables:UpdateTableMetadataLocation", "s3tables:PutTableData"])
    cat = rest_catalog_as(floe, world["arn"], u.ak, u.sk, name="c-" + uuid.uuid4().hex[:6])
    seen = []
    for i in range(5):  # the cache's entries live FL_IAM_CACHE_TTL_MS (1 s): a slow machine may need a retry
        t = cat.load_table((world["ns"], "t"))
        m0 = _iam_cache_misses(floe)
        t.transaction().set_properties({"k": str(i)}).commit_transaction()
        cat.load_table((world["ns"], "t"))
        seen.append(_iam_cache_misses(floe) - m0)
        if seen[-1] == 0:
            break
    assert 0 in seen, seen
    # a policy write drops them: the next request reads the policies again
    u.put(["s3tables:GetTableBucket", "s3tables:GetTableMetadataLocation", "s3tables:GetTableData"])
    m0 = _iam_cache_misses(floe)
    cat.load_table((world["ns"], "t"))
    assert _iam_cache_misses(floe) > m0
