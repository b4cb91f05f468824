"""Vended credentials: the Iceberg REST catalog answers loadTable/createTable
asked with X-Iceberg-Access-Delegation: vended-credentials with temporary
credentials for the table's warehouse on floe's data plane (config and
storage-credentials), minted through floe's own STS keys with a session policy
that allows s3tables:GetTableData (and PutTableData when the caller may write)
on that one table.

- PyIceberg (which sends the header by default; it is set explicitly here with
  its header. property) writes and reads a table with only the vended keys;
- the keys read and write their table's warehouse, nothing else: another
  table's warehouse and plain S3 calls are 403; a reader gets read-only keys;
- they expire: the expiry comes with them and the data plane refuses them after;
- an unsigned caller (--insecure-no-auth) gets none."""
import os
import sqlite3
import time
import uuid

import pyarrow as pa
import pytest
import requests
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import pgserver
from conftest import REGION
from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, iam_client, s3_client
from rest_fixtures import RestRaw, s3tables_client
from tables_fixtures import client_error

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False))
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": pa.array(["a", "b", "c"])})
TTL_S = 3600  # FL_IAM_VENDED_TTL_S
READ = ["s3tables:GetTableBucket", "s3tables:GetNamespace", "s3tables:GetTable",
        "s3tables:GetTableMetadataLocation", "s3tables:GetTableData"]
WRITE = READ + ["s3tables:UpdateTableMetadataLocation", "s3tables:PutTableData", "s3tables:CreateTable"]


def vended_catalog(floe, arn, ak, sk, name):
    """PyIceberg signing the catalog as ak/sk (client.*), with no s3.* keys of its own."""
    from pyiceberg.catalog import load_catalog
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ.pop(k, None)
    return load_catalog(name, **{
        "type": "rest", "uri": "http://127.0.0.1:%d/iceberg" % floe.catalog_port, "warehouse": arn,
        "rest.sigv4-enabled": "true", "rest.signing-name": "s3tables", "rest.signing-region": REGION,
        "client.access-key-id": ak, "client.secret-access-key": sk, "client.region": REGION,
        "header.X-Iceberg-Access-Delegation": "vended-credentials",
        "s3.endpoint": floe.endpoint, "s3.region": REGION, "s3.force-virtual-addressing": "false",
    })


@pytest.fixture(scope="module")
def world(floe):
    s3t = s3tables_client(floe)
    arn = s3t.create_table_bucket(name="vend-%s" % uuid.uuid4().hex[:10])["arn"]
    ns = "ns_%s" % uuid.uuid4().hex[:6]
    s3t.create_namespace(tableBucketARN=arn, namespace=[ns])
    return {"arn": arn, "ns": ns, "s3t": s3t}


def _warehouse(t):
    return t.metadata_location[5:].split("/", 1)[0]


def _expire(floe, akid):
    past = int(time.time() * 1000) - 1000
    if pgserver.wanted():
        pgserver.psql("UPDATE iam_keys SET expires_ms = %d WHERE akid = '%s'" % (past, akid),
                      pgserver.database_for(floe.data_dir))
        return
    db = sqlite3.connect(os.path.join(floe.data_dir, "catalog.db"), timeout=10)
    db.execute("UPDATE iam_keys SET expires_ms = ? WHERE akid = ?", (past, akid))
    db.commit()
    db.close()


def test_pyiceberg_writes_and_reads_with_vended_credentials_only(floe, world, new_user):
    u = new_user()
    u.put(WRITE)
    cat = vended_catalog(floe, world["arn"], u.ak, u.sk, "vend-w-" + uuid.uuid4().hex[:6])
    t = cat.create_table((world["ns"], "t_" + uuid.uuid4().hex[:6]), SCHEMA)
    props = t.io.properties
    assert props["s3.access-key-id"].startswith("FSIA") and props["s3.access-key-id"] != u.ak
    assert props["s3.session-token"] and props["s3.secret-access-key"]
    t.append(ROWS)
    t2 = cat.load_table(t.name())
    ak = t2.io.properties["s3.access-key-id"]
    assert ak.startswith("FSIA")
    assert t2.scan().to_arrow().num_rows == 3
    t2.append(ROWS)
    assert cat.load_table(t.name()).scan().to_arrow().num_rows == 6
    # the data plane saw the vended key, never the user's own
    log = floe.log_text()
    assert ak in log or props["s3.access-key-id"] in log
    exp = int(t2.io.properties["s3.session-token-expires-at-ms"])
    assert TTL_S - 120 < exp / 1000 - time.time() <= TTL_S + 5


def test_vended_keys_reach_their_table_only_and_expire(floe, world, new_user):
    u = new_user()
    u.put(WRITE)
    cat = vended_catalog(floe, world["arn"], u.ak, u.sk, "vend-x-" + uuid.uuid4().hex[:6])
    mine = cat.create_table((world["ns"], "a_" + uuid.uuid4().hex[:6]), SCHEMA)
    other = cat.create_table((world["ns"], "b_" + uuid.uuid4().hex[:6]), SCHEMA)
    mine.append(ROWS)
    other.append(ROWS)
    # the raw answer: config and storage-credentials carry the same keys, for the warehouse prefix
    rr = RestRaw(floe, world["arn"])
    resp = rr.request("GET", rr.p("namespaces/%s/tables/%s" % (world["ns"], mine.name()[-1])))
    assert resp.status_code == 200
    assert "storage-credentials" not in resp.json()  # not asked: none vended
    rr.http.headers["X-Iceberg-Access-Delegation"] = "vended-credentials"
    doc = rr.request("GET", rr.p("namespaces/%s/tables/%s" % (world["ns"], mine.name()[-1]))).json()
    (sc,) = doc["storage-credentials"]
    assert sc["prefix"] == "s3://" + _warehouse(mine)
    assert {k: doc["config"][k] for k in sc["config"]} == sc["config"]
    # root's vended keys are narrowed to the table too
    ak, sk, tok = sc["config"]["s3.access-key-id"], sc["config"]["s3.secret-access-key"], sc["config"]["s3.session-token"]
    s3 = s3_client(floe, ak, sk, tok)
    wb = _warehouse(mine)
    key = mine.metadata_location.split("/", 3)[3]
    assert s3.get_object(Bucket=wb, Key=key)["Body"].read()
    s3.put_object(Bucket=wb, Key="data/extra.bin", Body=b"x")
    okey = other.metadata_location.split("/", 3)[3]
    code, status, _ = client_error(s3.get_object, Bucket=_warehouse(other), Key=okey)
    assert (code, status) == ("AccessDenied", 403)
    code, status, _ = client_error(s3.put_object, Bucket=_warehouse(other), Key="data/x", Body=b"x")
    assert status == 403
    code, status, _ = client_error(s3.list_buckets)
    assert status == 403
    code, status, _ = client_error(s3.delete_bucket, Bucket=wb)
    assert status == 403
    # the catalog and IAM refuse them (no such actions in their policy)
    s3t = iam_client(floe, ak, sk, svc="s3tables", token=tok)
    code, status, _ = client_error(s3t.get_table_bucket, tableBucketARN=world["arn"])
    assert status == 403
    sts = iam_client(floe, ak, sk, svc="sts", token=tok)
    assert sts.get_caller_identity()["Arn"] == "arn:aws:iam::%s:root" % ACCOUNT
    ic = iam_client(floe, ak, sk, token=tok)
    code, status, _ = client_error(ic.create_user, UserName="nope-" + uuid.uuid4().hex[:6])
    assert status == 403
    # the same caller asking again within half the lifetime gets the same keys
    doc2 = rr.request("GET", rr.p("namespaces/%s/tables/%s" % (world["ns"], mine.name()[-1]))).json()
    assert doc2["config"]["s3.access-key-id"] == ak
    # expired: refused
    _expire(floe, ak)
    time.sleep(1.2)  # FL_IAM_CACHE_TTL_MS
    code, status, _ = client_error(s3.get_object, Bucket=wb, Key=key)
    assert status in (400, 403), code


def test_reader_gets_read_only_keys(floe, world, new_user):
    u = new_user()
    u.put(WRITE)
    w = vended_catalog(floe, world["arn"], u.ak, u.sk, "vend-o-" + uuid.uuid4().hex[:6])
    t = w.create_table((world["ns"], "r_" + uuid.uuid4().hex[:6]), SCHEMA)
    t.append(ROWS)
    r = new_user()
    r.put(READ)
    cat = vended_catalog(floe, world["arn"], r.ak, r.sk, "vend-r-" + uuid.uuid4().hex[:6])
    rt = cat.load_table(t.name())
    assert rt.scan().to_arrow().num_rows == 3
    p = rt.io.properties
    s3 = s3_client(floe, p["s3.access-key-id"], p["s3.secret-access-key"], p["s3.session-token"])
    code, status, _ = client_error(s3.put_object, Bucket=_warehouse(t), Key="data/x", Body=b"x")
    assert (code, status) == ("AccessDenied", 403)
    with pytest.raises(Exception):
        rt.append(ROWS)
    # the user's own policy still bounds its vended keys: taking GetTableData away ends them
    r.put(["s3tables:GetTableBucket"])
    key = t.metadata_location.split("/", 3)[3]
    code, status, _ = client_error(s3.get_object, Bucket=_warehouse(t), Key=key)
    assert status == 403


def test_unsigned_dev_mode_vends_nothing(floe_factory):
    f = floe_factory(extra_args=["--insecure-no-auth"])
    s3t = s3tables_client(f)
    arn = s3t.create_table_bucket(name="vend-dev-%s" % uuid.uuid4().hex[:6])["arn"]
    s3t.create_namespace(tableBucketARN=arn, namespace=["d"])
    from urllib.parse import quote
    base = "http://127.0.0.1:%d/iceberg/v1/%s/namespaces/d/tables" % (f.catalog_port, quote(arn, safe=""))
    body = {"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}
    h = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    resp = requests.post(base, json=body, headers=h, timeout=30)
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    assert "storage-credentials" not in doc and "s3.access-key-id" not in doc["config"]
    doc = requests.get(base + "/t", headers=h, timeout=30).json()
    assert "storage-credentials" not in doc and "s3.session-token" not in doc["config"]
