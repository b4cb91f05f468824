"""S3 Tables control plane (catalog port) against boto3 and the AWS CLI.

The source document's "Method 2" commands run verbatim through `aws s3tables`;
every other operation and error shape goes through boto3 (botocore's s3tables
model), raw signed requests cover what boto3 will not send."""
import gzip
import glob
import json
import os
import subprocess
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from botocore.exceptions import ClientError

from conftest import REGION, REPO, make_client
from tables_fixtures import *  # noqa: F401,F403 - fixtures
from tables_fixtures import (client_error, signed_request, unique_ident, unique_tb_name,
                             cleanup_bucket)

AWS = str(REPO / ".venv" / "bin" / "aws")

SEED_CREATE_TABLE = {
    "format": "ICEBERG",
    "metadata": {
        "iceberg": {
            "schema": {
                "fields": [
                    {"name": "event_id", "type": "string", "required": True},
                    {"name": "event_time", "type": "string"},
                    {"name": "event_type", "type": "string"},
                ]
            }
        }
    },
}


def aws(env, *args):
    """Runs the AWS CLI; returns parsed JSON output ({} when it printed nothing)."""
    p = subprocess.run([AWS, *args], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "aws %s failed (%d)\nstdout: %s\nstderr: %s" % (
        " ".join(args), p.returncode, p.stdout, p.stderr)
    return json.loads(p.stdout) if p.stdout.strip() else {}


def s3_object_json(floe, location):
    assert location.startswith("s3://")
    bucket, key = location[5:].split("/", 1)
    body = make_client(floe.endpoint).get_object(Bucket=bucket, Key=key)["Body"].read()
    return json.loads(body)


# ---------------------------------------------------------------- the seed document, verbatim

def test_seed_method2_aws_cli(floe, tools_env, tmp_path, s3t):
    ep = "http://127.0.0.1:%d" % floe.catalog_port
    name = unique_tb_name("seed")
    out = aws(tools_env, "s3tables", "--endpoint", ep, "create-table-bucket", "--region", REGION,
              "--name", name)
    arn = out["arn"]
    assert arn.endswith(":bucket/" + name)
    try:
        ns = unique_ident("seed_ns")
        out = aws(tools_env, "s3tables", "--endpoint", ep, "create-namespace", "--table-bucket-arn", arn,
                  "--namespace", ns)
        assert out == {"tableBucketARN": arn, "namespace": [ns]}

        table = unique_ident("seed_events")
        req = dict(SEED_CREATE_TABLE, tableBucketARN=arn, namespace=ns, name=table)
        path = tmp_path / "create-table.json"
        path.write_text(json.dumps(req, indent=2))
        out = aws(tools_env, "s3tables", "--endpoint", ep, "create-table", "--cli-input-json",
                  "file://%s" % path)
        assert "/table/" in out["tableARN"] and out["tableARN"].startswith(arn)
        assert out["versionToken"]

        out = aws(tools_env, "s3tables", "get-table-maintenance-job-status",
                  "--endpoint-url", ep,
                  "--table-bucket-arn=%s" % arn, "--namespace=%s" % ns, "--name=%s" % table)
        assert out["tableARN"] == s3t.get_table(tableBucketARN=arn, namespace=ns, name=table)["tableARN"]
        assert set(out["status"]) == {"icebergCompaction", "icebergSnapshotManagement",
                                      "icebergUnreferencedFileRemoval"}
        assert all(v["status"] == "Not_Yet_Run" for v in out["status"].values())

        out = aws(tools_env, "s3tables", "--endpoint-url", ep, "put-table-bucket-maintenance-configuration",
                  "--table-bucket-arn", arn, "--type", "icebergUnreferencedFileRemoval",
                  "--value", '{"status":"enabled","settings":{"icebergUnreferencedFileRemoval":'
                             '{"unreferencedDays":4,"nonCurrentDays":10}}}')
        assert out == {}
        out = aws(tools_env, "s3tables", "--endpoint-url", ep, "put-table-maintenance-configuration",
                  "--table-bucket-arn", arn, "--type", "icebergCompaction", "--namespace", ns, "--name", table,
                  '--value={"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":256}}}')
        assert out == {}

        got = aws(tools_env, "s3tables", "--endpoint-url", ep, "get-table-bucket-maintenance-configuration",
                  "--table-bucket-arn", arn)
        assert got["configuration"]["icebergUnreferencedFileRemoval"] == {
            "status": "enabled",
            "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 4, "nonCurrentDays": 10}}}
        got = s3t.get_table_maintenance_configuration(tableBucketARN=arn, namespace=ns, name=table)
        comp = got["configuration"]["icebergCompaction"]
        assert comp["status"] == "enabled"
        assert comp["settings"]["icebergCompaction"]["targetFileSizeMB"] == 256
        assert comp["settings"]["icebergCompaction"]["strategy"] == "auto"

        # the table was created with its first metadata file, readable on the data plane
        loc = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=table)
        assert loc["metadataLocation"].startswith(loc["warehouseLocation"] + "/metadata/00000-")
        assert loc["metadataLocation"].endswith(".metadata.json")
        meta = s3_object_json(floe, loc["metadataLocation"])
        fields = meta["schemas"][0]["fields"] if "schemas" in meta else meta["schema"]["fields"]
        assert [(f["name"], f["type"], f["required"]) for f in fields] == [
            ("event_id", "string", True), ("event_time", "string", False), ("event_type", "string", False)]
        assert meta["location"] == loc["warehouseLocation"]
    finally:
        cleanup_bucket(s3t, arn)


def test_cli_list_and_get_table(floe, tools_env, s3t, ttable):
    arn, ns, name, _ = ttable
    ep = "http://127.0.0.1:%d" % floe.catalog_port
    out = aws(tools_env, "s3tables", "--endpoint-url", ep, "list-tables", "--table-bucket-arn", arn)
    assert [t["name"] for t in out["tables"]] == [name]
    out = aws(tools_env, "s3tables", "--endpoint-url", ep, "get-table", "--table-bucket-arn", arn,
              "--namespace", ns, "--name", name)
    assert out["name"] == name and out["namespace"] == [ns] and out["format"] == "ICEBERG"


# ---------------------------------------------------------------- table buckets

def test_table_bucket_lifecycle(s3t):
    name = unique_tb_name("life")
    arn = s3t.create_table_bucket(name=name)["arn"]
    try:
        assert arn.endswith(":bucket/" + name)
        g = s3t.get_table_bucket(tableBucketARN=arn)
        assert g["arn"] == arn and g["name"] == name and g["type"] == "customer"
        assert g["tableBucketId"] and len(g["ownerAccountId"]) > 0
        assert g["createdAt"].year >= 2024
        names = [b["name"] for b in s3t.list_table_buckets(prefix=name)["tableBuckets"]]
        assert names == [name]
        assert s3t.list_table_buckets(type="aws")["tableBuckets"] == []
    finally:
        s3t.delete_table_bucket(tableBucketARN=arn)
    code, status, _ = client_error(s3t.get_table_bucket, tableBucketARN=arn)
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.delete_table_bucket, tableBucketARN=arn)
    assert (code, status) == ("NotFoundException", 404)


def test_list_table_buckets_pagination(s3t):
    base = unique_tb_name("pg")
    arns = [s3t.create_table_bucket(name="%s-%d" % (base, i))["arn"] for i in range(5)]
    try:
        seen, token, pages = [], None, 0
        while True:
            kw = {"prefix": base, "maxBuckets": 2}
            if token:
                kw["continuationToken"] = token
            r = s3t.list_table_buckets(**kw)
            pages += 1
            assert len(r["tableBuckets"]) <= 2
            seen += [b["name"] for b in r["tableBuckets"]]
            token = r.get("continuationToken")
            if not token:
                break
        assert pages == 3
        assert seen == ["%s-%d" % (base, i) for i in range(5)]
        all_names = [b["name"] for p in s3t.get_paginator("list_table_buckets").paginate(
            prefix=base, PaginationConfig={"PageSize": 1}) for b in p["tableBuckets"]]
        assert all_names == seen
        code, status, _ = client_error(s3t.list_table_buckets, continuationToken="zz-not-a-token")
        assert (code, status) == ("BadRequestException", 400)
    finally:
        for a in arns:
            s3t.delete_table_bucket(tableBucketARN=a)


@pytest.mark.parametrize("name", ["ab", "Upper-case", "under_score", "dot.ted", "-leading", "trailing-",
                                  "awsbucket", "xn--bucket", "sthree-b", "amzn-s3-demo-b", "b-s3alias",
                                  "b--ol-s3", "b--x-s3", "b--table-s3", "a" * 64])
def test_table_bucket_invalid_names(s3t_nv, name):
    code, status, msg = client_error(s3t_nv.create_table_bucket, name=name)
    assert (code, status) == ("BadRequestException", 400)
    assert "name" in msg


def test_table_bucket_conflicts(s3t, tbucket, tns):
    name = tbucket.rsplit("/", 1)[1]
    code, status, _ = client_error(s3t.create_table_bucket, name=name)
    assert (code, status) == ("ConflictException", 409)
    code, status, _ = client_error(s3t.delete_table_bucket, tableBucketARN=tbucket)
    assert (code, status) == ("ConflictException", 409)


def test_bad_bucket_arn(s3t):
    code, status, _ = client_error(s3t.get_table_bucket, tableBucketARN="not-an-arn")
    assert (code, status) == ("BadRequestException", 400)
    code, status, _ = client_error(s3t.get_table_bucket,
                                   tableBucketARN="arn:aws:s3tables:us-east-1:000000000000:bucket/nope-nope")
    assert (code, status) == ("NotFoundException", 404)


def test_both_arn_forms_accepted(s3t, tbucket):
    name = tbucket.rsplit("/", 1)[1]
    for arn in ("arn:aws:s3tables:%s:000000000000:bucket/%s" % (REGION, name),
                "acs:osstables:%s:000000000000:bucket/%s" % (REGION, name)):
        assert s3t.get_table_bucket(tableBucketARN=arn)["name"] == name


# ---------------------------------------------------------------- namespaces

def test_namespace_lifecycle(s3t, tbucket):
    ns = unique_ident("life")
    r = s3t.create_namespace(tableBucketARN=tbucket, namespace=[ns])
    assert r["tableBucketARN"] == tbucket and r["namespace"] == [ns]
    g = s3t.get_namespace(tableBucketARN=tbucket, namespace=ns)
    assert g["namespace"] == [ns] and g["namespaceId"] and g["createdBy"] == g["ownerAccountId"]
    assert g["tableBucketId"] == s3t.get_table_bucket(tableBucketARN=tbucket)["tableBucketId"]
    code, status, _ = client_error(s3t.create_namespace, tableBucketARN=tbucket, namespace=[ns])
    assert (code, status) == ("ConflictException", 409)
    s3t.delete_namespace(tableBucketARN=tbucket, namespace=ns)
    code, status, _ = client_error(s3t.get_namespace, tableBucketARN=tbucket, namespace=ns)
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.delete_namespace, tableBucketARN=tbucket, namespace=ns)
    assert (code, status) == ("NotFoundException", 404)


def test_list_namespaces_prefix_and_pages(floe, s3t, tbucket):
    names = ["alpha_%d" % i for i in range(4)] + ["beta_1"]
    for n in names:
        s3t.create_namespace(tableBucketARN=tbucket, namespace=[n])
    r = s3t.list_namespaces(tableBucketARN=tbucket, prefix="alpha")
    assert [x["namespace"][0] for x in r["namespaces"]] == names[:4]
    assert "continuationToken" not in r
    pages = list(s3t.get_paginator("list_namespaces").paginate(
        tableBucketARN=tbucket, PaginationConfig={"PageSize": 2}))
    assert len(pages) == 3
    assert [x["namespace"][0] for p in pages for x in p["namespaces"]] == names
    r = signed_request(floe.catalog_port, "GET", "/namespaces/" + quote(tbucket, safe=""),
                       query="maxNamespaces=5000")
    assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == "BadRequestException"


@pytest.mark.parametrize("ns", ["has-hyphen", "Upper", "_lead", "trail_", "aws_reserved", "dot.ted", "a" * 256])
def test_namespace_invalid_names(s3t, tbucket, ns):
    code, status, _ = client_error(s3t.create_namespace, tableBucketARN=tbucket, namespace=[ns])
    assert (code, status) == ("BadRequestException", 400)


def test_namespace_missing_bucket_and_not_empty(s3t, tbucket, ttable):
    _, ns, _, _ = ttable
    code, status, _ = client_error(s3t.create_namespace,
                                   tableBucketARN=tbucket.rsplit("/", 1)[0] + "/" + unique_tb_name("gone"),
                                   namespace=["x"])
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.delete_namespace, tableBucketARN=tbucket, namespace=ns)
    assert (code, status) == ("ConflictException", 409)


# ---------------------------------------------------------------- tables

def test_table_without_metadata(s3t, ttable):
    arn, ns, name, created = ttable
    g = s3t.get_table(tableBucketARN=arn, namespace=ns, name=name)
    assert g["name"] == name and g["namespace"] == [ns] and g["type"] == "customer"
    assert g["format"] == "ICEBERG" and g["tableARN"] == created["tableARN"]
    assert g["versionToken"] == created["versionToken"]
    assert "metadataLocation" not in g
    assert g["warehouseLocation"].startswith("s3://") and g["warehouseLocation"].endswith("--table-s3")
    assert g["createdAt"] <= g["modifiedAt"]
    assert g["createdBy"] == g["modifiedBy"] == g["ownerAccountId"]
    assert g["ownerAccountId"] == s3t.get_table_bucket(tableBucketARN=arn)["ownerAccountId"]
    assert g["namespaceId"] == s3t.get_namespace(tableBucketARN=arn, namespace=ns)["namespaceId"]
    by_arn = s3t.get_table(tableArn=created["tableARN"])
    assert by_arn["name"] == name and by_arn["versionToken"] == g["versionToken"]
    loc = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name)
    assert "metadataLocation" not in loc and loc["warehouseLocation"] == g["warehouseLocation"]
    assert loc["versionToken"] == g["versionToken"]


def test_get_table_errors(s3t, ttable):
    arn, ns, name, created = ttable
    code, status, _ = client_error(s3t.get_table, tableBucketARN=arn, namespace=ns, name="missing_table")
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.get_table, tableBucketARN=arn, namespace=ns)
    assert (code, status) == ("BadRequestException", 400)
    missing = created["tableARN"].rsplit("/", 1)[0] + "/00000000-0000-4000-8000-000000000000"
    code, status, _ = client_error(s3t.get_table, tableArn=missing)
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.get_table, tableArn="garbage")
    assert (code, status) == ("BadRequestException", 400)


@pytest.mark.parametrize("name", ["has-hyphen", "Upper", "_x", "x_", "a" * 256])
def test_table_invalid_names(s3t, tbucket, tns, name):
    code, status, _ = client_error(s3t.create_table, tableBucketARN=tbucket, namespace=tns, name=name,
                                   format="ICEBERG")
    assert (code, status) == ("BadRequestException", 400)


def test_create_table_errors(s3t, ttable):
    arn, ns, name, _ = ttable
    code, status, _ = client_error(s3t.create_table, tableBucketARN=arn, namespace=ns, name=name,
                                   format="ICEBERG")
    assert (code, status) == ("ConflictException", 409)
    code, status, _ = client_error(s3t.create_table, tableBucketARN=arn, namespace="no_such_ns", name="t",
                                   format="ICEBERG")
    assert (code, status) == ("NotFoundException", 404)
    bad_schema = {"iceberg": {"schema": {"fields": [{"name": "a", "type": "no-such-type"}]}}}
    code, status, _ = client_error(s3t.create_table, tableBucketARN=arn, namespace=ns, name="bad_schema",
                                   format="ICEBERG", metadata=bad_schema)
    assert (code, status) == ("BadRequestException", 400)
    code, status, _ = client_error(s3t.get_table, tableBucketARN=arn, namespace=ns, name="bad_schema")
    assert code == "NotFoundException"


def test_create_table_with_partition_and_properties(floe, s3t, tbucket, tns):
    md = {"iceberg": {
        "schema": {"fields": [{"name": "id", "type": "long", "required": True},
                              {"name": "ts", "type": "timestamp"}]},
        "partitionSpec": {"fields": [{"sourceId": 2, "transform": "day", "name": "ts_day"}]},
        "properties": {"write.format.default": "parquet"}}}
    s3t.create_table(tableBucketARN=tbucket, namespace=tns, name="parted", format="ICEBERG", metadata=md)
    loc = s3t.get_table_metadata_location(tableBucketARN=tbucket, namespace=tns, name="parted")
    meta = s3_object_json(floe, loc["metadataLocation"])
    spec = [s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"]][0]
    assert [(f["name"], f["transform"], f["source-id"]) for f in spec["fields"]] == [("ts_day", "day", 2)]
    assert meta["properties"].get("write.format.default") == "parquet"


def test_list_tables(s3t, tbucket):
    for ns in ("ns_a", "ns_b"):
        s3t.create_namespace(tableBucketARN=tbucket, namespace=[ns])
        for t in ("orders", "order_items", "users"):
            s3t.create_table(tableBucketARN=tbucket, namespace=ns, name=t, format="ICEBERG")
    r = s3t.list_tables(tableBucketARN=tbucket)
    assert [(t["namespace"][0], t["name"]) for t in r["tables"]] == [
        ("ns_a", "order_items"), ("ns_a", "orders"), ("ns_a", "users"),
        ("ns_b", "order_items"), ("ns_b", "orders"), ("ns_b", "users")]
    assert all(t["type"] == "customer" and "/table/" in t["tableARN"] for t in r["tables"])
    r = s3t.list_tables(tableBucketARN=tbucket, namespace="ns_b", prefix="order")
    assert [t["name"] for t in r["tables"]] == ["order_items", "orders"]
    pages = list(s3t.get_paginator("list_tables").paginate(tableBucketARN=tbucket,
                                                           PaginationConfig={"PageSize": 4}))
    assert [len(p["tables"]) for p in pages] == [4, 2]
    assert "continuationToken" in pages[0] and "continuationToken" not in pages[1]


def test_rename_table(s3t, ttable):
    arn, ns, name, created = ttable
    s3t.create_namespace(tableBucketARN=arn, namespace=["other_ns"])
    code, status, _ = client_error(s3t.rename_table, tableBucketARN=arn, namespace=ns, name=name,
                                   newName="renamed", versionToken="stale-token")
    assert (code, status) == ("ConflictException", 409)
    code, status, _ = client_error(s3t.rename_table, tableBucketARN=arn, namespace=ns, name=name)
    assert (code, status) == ("BadRequestException", 400)
    code, status, _ = client_error(s3t.rename_table, tableBucketARN=arn, namespace=ns, name=name,
                                   newNamespaceName="missing_ns")
    assert (code, status) == ("NotFoundException", 404)
    r = s3t.rename_table(tableBucketARN=arn, namespace=ns, name=name, newNamespaceName="other_ns",
                         newName="renamed", versionToken=created["versionToken"])
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    g = s3t.get_table(tableBucketARN=arn, namespace="other_ns", name="renamed")
    assert g["tableARN"] == created["tableARN"]
    code, status, _ = client_error(s3t.get_table, tableBucketARN=arn, namespace=ns, name=name)
    assert (code, status) == ("NotFoundException", 404)
    s3t.create_table(tableBucketARN=arn, namespace="other_ns", name="taken", format="ICEBERG")
    code, status, _ = client_error(s3t.rename_table, tableBucketARN=arn, namespace="other_ns",
                                   name="renamed", newName="taken")
    assert (code, status) == ("ConflictException", 409)


def test_delete_table_version_token(floe, s3t, ttable):
    arn, ns, name, created = ttable
    wh = s3t.get_table(tableBucketARN=arn, namespace=ns, name=name)["warehouseLocation"]
    code, status, _ = client_error(s3t.delete_table, tableBucketARN=arn, namespace=ns, name=name,
                                   versionToken="not-the-token")
    assert (code, status) == ("ConflictException", 409)
    r = s3t.delete_table(tableBucketARN=arn, namespace=ns, name=name, versionToken=created["versionToken"])
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    code, status, _ = client_error(s3t.get_table, tableBucketARN=arn, namespace=ns, name=name)
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.delete_table, tableBucketARN=arn, namespace=ns, name=name)
    assert (code, status) == ("NotFoundException", 404)
    # the warehouse went with the table
    s3 = make_client(floe.endpoint)
    with pytest.raises(ClientError) as ei:
        s3.head_bucket(Bucket=wh[5:])
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# ---------------------------------------------------------------- metadata location (CAS)

def put_metadata_file(floe, location, gz=False):
    """Writes a small Iceberg metadata document at location through the data plane."""
    bucket, key = location[len("s3://"):].split("/", 1)
    doc = json.dumps({"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
                      "location": "s3://" + bucket, "last-sequence-number": 0,
                      "last-updated-ms": 1700000000000, "last-column-id": 1, "current-schema-id": 0,
                      "schemas": [{"type": "struct", "schema-id": 0, "fields": [
                          {"id": 1, "name": "id", "type": "long", "required": True}]}],
                      "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
                      "last-partition-id": 999, "default-sort-order-id": 0,
                      "sort-orders": [{"order-id": 0, "fields": []}], "properties": {},
                      "current-snapshot-id": -1, "snapshots": [], "refs": {}, "snapshot-log": [],
                      "metadata-log": []}).encode()
    make_client(floe.endpoint).put_object(Bucket=bucket, Key=key, Body=gzip.compress(doc) if gz else doc)


def test_update_metadata_location_needs_a_readable_file(floe, s3t, ttable):
    arn, ns, name, created = ttable
    wh = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name)["warehouseLocation"]
    missing = wh + "/metadata/00001-missing.metadata.json"
    code, status, _ = client_error(s3t.update_table_metadata_location, tableBucketARN=arn, namespace=ns,
                                   name=name, versionToken=created["versionToken"], metadataLocation=missing)
    assert (code, status) == ("BadRequestException", 400)
    garbage = wh + "/metadata/00001-garbage.metadata.json"
    bucket, key = garbage[len("s3://"):].split("/", 1)
    make_client(floe.endpoint).put_object(Bucket=bucket, Key=key, Body=b"not json")
    code, status, _ = client_error(s3t.update_table_metadata_location, tableBucketARN=arn, namespace=ns,
                                   name=name, versionToken=created["versionToken"], metadataLocation=garbage)
    assert (code, status) == ("BadRequestException", 400)
    g = s3t.get_table(tableBucketARN=arn, namespace=ns, name=name)
    assert g["versionToken"] == created["versionToken"]


def test_update_metadata_location(floe, s3t, ttable):
    arn, ns, name, created = ttable
    wh = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name)["warehouseLocation"]
    new = wh + "/metadata/00001-aaaa.metadata.json"
    put_metadata_file(floe, new)
    put_metadata_file(floe, wh + "/metadata/00002-b.metadata.json.gz", gz=True)
    r = s3t.update_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name,
                                           versionToken=created["versionToken"], metadataLocation=new)
    assert r["name"] == name and r["namespace"] == [ns] and r["tableARN"] == created["tableARN"]
    assert r["metadataLocation"] == new and r["versionToken"] != created["versionToken"]
    g = s3t.get_table(tableBucketARN=arn, namespace=ns, name=name)
    assert g["metadataLocation"] == new and g["versionToken"] == r["versionToken"]
    loc = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name)
    assert loc["metadataLocation"] == new and loc["versionToken"] == r["versionToken"]
    # the old token is now stale
    code, status, _ = client_error(s3t.update_table_metadata_location, tableBucketARN=arn, namespace=ns,
                                   name=name, versionToken=created["versionToken"],
                                   metadataLocation=wh + "/metadata/00002-b.metadata.json.gz")
    assert (code, status) == ("ConflictException", 409)
    r2 = s3t.update_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name,
                                            versionToken=r["versionToken"],
                                            metadataLocation=wh + "/metadata/00002-b.metadata.json.gz")
    assert r2["metadataLocation"].endswith(".metadata.json.gz")


@pytest.mark.parametrize("where", ["s3://some-other-bucket/metadata/00001-x.metadata.json",
                                   "{wh}/metadata/00001-x.json", "{wh}", "{wh}x/metadata/1.metadata.json",
                                   "relative/00001-x.metadata.json"])
def test_update_metadata_location_outside_warehouse(s3t, ttable, where):
    arn, ns, name, created = ttable
    wh = s3t.get_table(tableBucketARN=arn, namespace=ns, name=name)["warehouseLocation"]
    code, status, _ = client_error(s3t.update_table_metadata_location, tableBucketARN=arn, namespace=ns,
                                   name=name, versionToken=created["versionToken"],
                                   metadataLocation=where.format(wh=wh))
    assert (code, status) == ("BadRequestException", 400)
    g = s3t.get_table(tableBucketARN=arn, namespace=ns, name=name)
    assert g["versionToken"] == created["versionToken"] and "metadataLocation" not in g


def test_update_metadata_location_race(floe, ttable):
    arn, ns, name, created = ttable
    wh = make_s3tables_client(floe.catalog_port).get_table(
        tableBucketARN=arn, namespace=ns, name=name)["warehouseLocation"]
    results = []
    barrier = threading.Barrier(2)
    for i in range(2):
        put_metadata_file(floe, "%s/metadata/00001-racer%d.metadata.json" % (wh, i))

    def commit(i):
        c = make_s3tables_client(floe.catalog_port)
        barrier.wait()
        try:
            r = c.update_table_metadata_location(
                tableBucketARN=arn, namespace=ns, name=name, versionToken=created["versionToken"],
                metadataLocation="%s/metadata/00001-racer%d.metadata.json" % (wh, i))
            results.append((200, r["metadataLocation"]))
        except ClientError as e:
            results.append((e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]))

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r[0] for r in results) == [200, 409], results
    assert [r[1] for r in results if r[0] == 409] == ["ConflictException"]
    winner = [r[1] for r in results if r[0] == 200][0]
    g = make_s3tables_client(floe.catalog_port).get_table(tableBucketARN=arn, namespace=ns, name=name)
    assert g["metadataLocation"] == winner


def test_update_metadata_location_missing_table(s3t, tbucket, tns):
    code, status, _ = client_error(s3t.update_table_metadata_location, tableBucketARN=tbucket, namespace=tns,
                                   name="nope", versionToken="x", metadataLocation="s3://a/b.metadata.json")
    assert (code, status) == ("NotFoundException", 404)


# ---------------------------------------------------------------- policies

POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:root"},
    "Action": "s3tables:GetTable*", "Resource": "*"}]})


def test_bucket_policy(s3t, tbucket):
    code, status, _ = client_error(s3t.get_table_bucket_policy, tableBucketARN=tbucket)
    assert (code, status) == ("NotFoundException", 404)
    s3t.put_table_bucket_policy(tableBucketARN=tbucket, resourcePolicy=POLICY)
    assert json.loads(s3t.get_table_bucket_policy(tableBucketARN=tbucket)["resourcePolicy"]) == json.loads(POLICY)
    r = s3t.delete_table_bucket_policy(tableBucketARN=tbucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    code, status, _ = client_error(s3t.get_table_bucket_policy, tableBucketARN=tbucket)
    assert (code, status) == ("NotFoundException", 404)


@pytest.mark.parametrize("policy", ["not json", "[1,2]", '{"Statement": []}', '{"Version": "2012-10-17"}',
                                    '{"Version": "2012-10-17", "Statement": [{"Effect": "Maybe"}]}',
                                    json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
                                                "Sid": "x" * 21000}]}),
                                    # refused by the policy engine when stored (auth/policy.c)
                                    json.dumps({"Version": "2012-10-17", "Statement": [{
                                        "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": "*"}]}),
                                    json.dumps({"Version": "2012-10-17", "Statement": [{
                                        "Effect": "Allow", "Principal": "*", "Action": "GetTable", "Resource": "*"}]}),
                                    json.dumps({"Version": "2012-10-17", "Statement": [{
                                        "Effect": "Allow", "Principal": "*", "Action": "s3tables:GetTable",
                                        "Resource": "*", "Condition": {"StringMaybe": {"aws:username": "a"}}}]}),
                                    json.dumps({"Version": "2012-10-17", "Statement": [{
                                        "Effect": "Allow", "Principal": "*", "Action": "s3tables:GetTable",
                                        "Resource": "*", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/40"}}}]}),
                                    json.dumps({"Version": "2012-10-17", "Statement": [{
                                        "Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3tables:*",
                                        "Resource": "*"}]})])
def test_bucket_policy_invalid(s3t, tbucket, policy):
    code, status, _ = client_error(s3t.put_table_bucket_policy, tableBucketARN=tbucket, resourcePolicy=policy)
    assert (code, status) == ("BadRequestException", 400)


def test_table_policy(s3t, ttable):
    arn, ns, name, _ = ttable
    code, status, _ = client_error(s3t.get_table_policy, tableBucketARN=arn, namespace=ns, name=name)
    assert (code, status) == ("NotFoundException", 404)
    s3t.put_table_policy(tableBucketARN=arn, namespace=ns, name=name, resourcePolicy=POLICY)
    got = s3t.get_table_policy(tableBucketARN=arn, namespace=ns, name=name)["resourcePolicy"]
    assert json.loads(got)["Statement"][0]["Action"] == "s3tables:GetTable*"
    # the bucket's policy is separate
    code, _, _ = client_error(s3t.get_table_bucket_policy, tableBucketARN=arn)
    assert code == "NotFoundException"
    s3t.delete_table_policy(tableBucketARN=arn, namespace=ns, name=name)
    code, status, _ = client_error(s3t.get_table_policy, tableBucketARN=arn, namespace=ns, name=name)
    assert (code, status) == ("NotFoundException", 404)


# ---------------------------------------------------------------- maintenance

def test_maintenance_defaults(s3t, ttable):
    arn, ns, name, created = ttable
    b = s3t.get_table_bucket_maintenance_configuration(tableBucketARN=arn)
    assert b["tableBucketARN"] == arn
    assert b["configuration"] == {"icebergUnreferencedFileRemoval": {
        "status": "enabled",
        "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 3, "nonCurrentDays": 10}}}}
    t = s3t.get_table_maintenance_configuration(tableBucketARN=arn, namespace=ns, name=name)
    assert t["tableARN"] == created["tableARN"]
    assert t["configuration"] == {
        "icebergCompaction": {"status": "enabled",
                              "settings": {"icebergCompaction": {"targetFileSizeMB": 512, "strategy": "auto"}}},
        "icebergSnapshotManagement": {"status": "enabled", "settings": {"icebergSnapshotManagement": {
            "minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 120}}}}


def test_maintenance_put_and_job_status(s3t, ttable):
    arn, ns, name, _ = ttable
    s3t.put_table_maintenance_configuration(
        tableBucketARN=arn, namespace=ns, name=name, type="icebergSnapshotManagement",
        value={"status": "disabled",
               "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 5, "maxSnapshotAgeHours": 48}}})
    s3t.put_table_maintenance_configuration(
        tableBucketARN=arn, namespace=ns, name=name, type="icebergCompaction",
        value={"status": "enabled", "settings": {"icebergCompaction": {"strategy": "z-order"}}})
    t = s3t.get_table_maintenance_configuration(tableBucketARN=arn, namespace=ns, name=name)["configuration"]
    assert t["icebergSnapshotManagement"] == {"status": "disabled", "settings": {"icebergSnapshotManagement": {
        "minSnapshotsToKeep": 5, "maxSnapshotAgeHours": 48}}}
    assert t["icebergCompaction"]["settings"]["icebergCompaction"] == {"targetFileSizeMB": 512, "strategy": "z-order"}
    s3t.put_table_bucket_maintenance_configuration(
        tableBucketARN=arn, type="icebergUnreferencedFileRemoval", value={"status": "disabled"})
    st = s3t.get_table_maintenance_job_status(tableBucketARN=arn, namespace=ns, name=name)["status"]
    assert st == {"icebergCompaction": {"status": "Not_Yet_Run"},
                  "icebergSnapshotManagement": {"status": "Disabled"},
                  "icebergUnreferencedFileRemoval": {"status": "Disabled"}}


@pytest.mark.parametrize("type_,value", [
    ("icebergCompaction", {"settings": {"icebergCompaction": {"targetFileSizeMB": 32}}}),
    ("icebergCompaction", {"settings": {"icebergCompaction": {"targetFileSizeMB": 1024}}}),
    ("icebergCompaction", {"settings": {"icebergCompaction": {"strategy": "random"}}}),
    ("icebergCompaction", {"status": "sometimes"}),
    ("icebergCompaction", {"settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 2}}}),
    ("icebergSnapshotManagement", {"settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 0}}}),
    ("icebergSnapshotManagement", {"settings": {"icebergSnapshotManagement": {"maxSnapshotAgeHours": 0}}}),
    ("icebergUnreferencedFileRemoval", {"status": "enabled"}),
])
def test_table_maintenance_invalid(s3t_nv, ttable, type_, value):
    arn, ns, name, _ = ttable
    code, status, _ = client_error(s3t_nv.put_table_maintenance_configuration, tableBucketARN=arn, namespace=ns,
                                   name=name, type=type_, value=value)
    assert (code, status) == ("BadRequestException", 400)


def test_bucket_maintenance_invalid(s3t_nv, tbucket):
    code, status, _ = client_error(s3t_nv.put_table_bucket_maintenance_configuration, tableBucketARN=tbucket,
                                   type="icebergCompaction", value={"status": "enabled"})
    assert (code, status) == ("BadRequestException", 400)
    code, status, _ = client_error(
        s3t_nv.put_table_bucket_maintenance_configuration, tableBucketARN=tbucket,
        type="icebergUnreferencedFileRemoval",
        value={"settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 0}}})
    assert (code, status) == ("BadRequestException", 400)


# ---------------------------------------------------------------- encryption, storage class

def test_encryption(s3t, tbucket, tns):
    g = s3t.get_table_bucket_encryption(tableBucketARN=tbucket)
    assert g["encryptionConfiguration"] == {"sseAlgorithm": "AES256"}
    key = "arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    s3t.put_table_bucket_encryption(tableBucketARN=tbucket, encryptionConfiguration={
        "sseAlgorithm": "aws:kms", "kmsKeyArn": key})
    assert s3t.get_table_bucket_encryption(tableBucketARN=tbucket)["encryptionConfiguration"] == {
        "sseAlgorithm": "aws:kms", "kmsKeyArn": key}
    s3t.create_table(tableBucketARN=tbucket, namespace=tns, name="inherits", format="ICEBERG")
    s3t.create_table(tableBucketARN=tbucket, namespace=tns, name="explicit", format="ICEBERG",
                     encryptionConfiguration={"sseAlgorithm": "AES256"})
    assert s3t.get_table_encryption(tableBucketARN=tbucket, namespace=tns, name="inherits")[
        "encryptionConfiguration"]["sseAlgorithm"] == "aws:kms"
    assert s3t.get_table_encryption(tableBucketARN=tbucket, namespace=tns, name="explicit")[
        "encryptionConfiguration"] == {"sseAlgorithm": "AES256"}
    r = s3t.delete_table_bucket_encryption(tableBucketARN=tbucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3t.get_table_bucket_encryption(tableBucketARN=tbucket)["encryptionConfiguration"] == {
        "sseAlgorithm": "AES256"}
    for bad in ({"sseAlgorithm": "ROT13"}, {"sseAlgorithm": "aws:kms"},
                {"sseAlgorithm": "AES256", "kmsKeyArn": key}):
        code, status, _ = client_error(s3t.put_table_bucket_encryption, tableBucketARN=tbucket,
                                       encryptionConfiguration=bad)
        assert (code, status) == ("BadRequestException", 400)


def test_storage_class(s3t, tbucket, tns):
    assert s3t.get_table_bucket_storage_class(tableBucketARN=tbucket)["storageClassConfiguration"] == {
        "storageClass": "STANDARD"}
    s3t.put_table_bucket_storage_class(tableBucketARN=tbucket,
                                       storageClassConfiguration={"storageClass": "INTELLIGENT_TIERING"})
    assert s3t.get_table_bucket_storage_class(tableBucketARN=tbucket)["storageClassConfiguration"][
        "storageClass"] == "INTELLIGENT_TIERING"
    s3t.create_table(tableBucketARN=tbucket, namespace=tns, name="t1", format="ICEBERG")
    assert s3t.get_table_storage_class(tableBucketARN=tbucket, namespace=tns, name="t1")[
        "storageClassConfiguration"]["storageClass"] == "INTELLIGENT_TIERING"
    code, status, _ = client_error(s3t.put_table_bucket_storage_class, tableBucketARN=tbucket,
                                   storageClassConfiguration={"storageClass": "GLACIER"})
    assert (code, status) == ("BadRequestException", 400)


# ---------------------------------------------------------------- tags, metrics, logging

def test_tags(s3t, ttable):
    arn, ns, name, created = ttable
    tarn = created["tableARN"]
    assert s3t.list_tags_for_resource(resourceArn=arn).get("tags", {}) == {}
    s3t.tag_resource(resourceArn=arn, tags={"team": "data", "env": "test"})
    s3t.tag_resource(resourceArn=tarn, tags={"pii": "no"})
    s3t.tag_resource(resourceArn=arn, tags={"env": "prod"})
    assert s3t.list_tags_for_resource(resourceArn=arn)["tags"] == {"team": "data", "env": "prod"}
    assert s3t.list_tags_for_resource(resourceArn=tarn)["tags"] == {"pii": "no"}
    r = s3t.untag_resource(resourceArn=arn, tagKeys=["team", "absent"])
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3t.list_tags_for_resource(resourceArn=arn)["tags"] == {"env": "prod"}
    code, status, _ = client_error(s3t.tag_resource, resourceArn=arn, tags={"aws:reserved": "x"})
    assert (code, status) == ("BadRequestException", 400)
    code, status, _ = client_error(s3t.tag_resource, resourceArn=arn,
                                   tags={"k%d" % i: "v" for i in range(51)})
    assert (code, status) == ("BadRequestException", 400)
    code, status, _ = client_error(s3t.list_tags_for_resource,
                                   resourceArn=arn.rsplit("/", 1)[0] + "/" + unique_tb_name("none"))
    assert (code, status) == ("NotFoundException", 404)


def test_create_with_tags(s3t):
    arn = s3t.create_table_bucket(name=unique_tb_name("tagged"), tags={"owner": "floe"})["arn"]
    try:
        assert s3t.list_tags_for_resource(resourceArn=arn)["tags"] == {"owner": "floe"}
        s3t.create_namespace(tableBucketARN=arn, namespace=["n"])
        tarn = s3t.create_table(tableBucketARN=arn, namespace="n", name="t", format="ICEBERG",
                                tags={"kind": "fact"})["tableARN"]
        assert s3t.list_tags_for_resource(resourceArn=tarn)["tags"] == {"kind": "fact"}
    finally:
        cleanup_bucket(s3t, arn)


def test_metrics_configuration(s3t, tbucket):
    code, status, _ = client_error(s3t.get_table_bucket_metrics_configuration, tableBucketARN=tbucket)
    assert (code, status) == ("NotFoundException", 404)
    r = s3t.put_table_bucket_metrics_configuration(tableBucketARN=tbucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    g = s3t.get_table_bucket_metrics_configuration(tableBucketARN=tbucket)
    assert g["tableBucketARN"] == tbucket and g["id"]
    s3t.delete_table_bucket_metrics_configuration(tableBucketARN=tbucket)
    code, status, _ = client_error(s3t.get_table_bucket_metrics_configuration, tableBucketARN=tbucket)
    assert (code, status) == ("NotFoundException", 404)


def test_logging_configuration(s3t, tbucket):
    assert s3t.get_table_bucket_logging(tableBucketARN=tbucket)["tableBucketLoggingStatus"] == {}
    st = {"loggingEnabled": {"targetBucket": "logs-bucket", "targetPrefix": "tb/",
                             "targetObjectKeyFormat": {"partitionedPrefix": {"partitionDateSource": "EventTime"}}}}
    s3t.put_table_bucket_logging(tableBucketARN=tbucket, tableBucketLoggingStatus=st)
    assert s3t.get_table_bucket_logging(tableBucketARN=tbucket)["tableBucketLoggingStatus"] == st


# ---------------------------------------------------------------- unsupported families answer in shape

def test_record_expiration_replication_migration(s3t, ttable):
    arn, ns, name, created = ttable
    tarn = created["tableARN"]
    code, status, _ = client_error(s3t.get_table_record_expiration_configuration, tableArn=tarn)
    assert (code, status) == ("MethodNotAllowedException", 405)
    code, status, _ = client_error(s3t.put_table_record_expiration_configuration, tableArn=tarn,
                                   value={"status": "enabled", "settings": {"days": 3}})
    assert (code, status) == ("MethodNotAllowedException", 405)
    code, status, _ = client_error(s3t.get_table_record_expiration_job_status, tableArn=tarn)
    assert (code, status) == ("MethodNotAllowedException", 405)
    code, status, _ = client_error(s3t.get_table_bucket_replication, tableBucketARN=arn)
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(s3t.get_table_replication, tableArn=tarn)
    assert (code, status) == ("NotFoundException", 404)
    code, status, _ = client_error(
        s3t.put_table_bucket_replication, tableBucketARN=arn,
        configuration={"role": "arn:aws:iam::000000000000:role/r",
                       "rules": [{"destinations": [{"destinationTableBucketARN": arn}]}]})
    assert (code, status) == ("BadRequestException", 400)
    assert s3t.list_table_migrations()["migrations"] == []


# ---------------------------------------------------------------- wire-level errors

def test_malformed_json_is_bad_request(floe):
    path = "/buckets"
    for body in (b"{not json", b'{"name": "a", "name": "b"}', b"[1, 2]", b'{"name": 5}'):
        r = signed_request(floe.catalog_port, "PUT", path, body=body)
        assert r.status_code == 400, (body, r.text)
        assert r.headers["x-amzn-ErrorType"] == "BadRequestException"
        assert r.headers["Content-Type"].startswith("application/json")
        assert isinstance(r.json()["message"], str) and r.json()["message"]


def test_unknown_route_and_method(floe):
    r = signed_request(floe.catalog_port, "GET", "/no-such-operation")
    assert r.status_code == 404 and r.headers["x-amzn-ErrorType"] == "UnknownOperationException"
    r = signed_request(floe.catalog_port, "POST", "/buckets")
    assert r.status_code == 405 and r.headers["x-amzn-ErrorType"] == "MethodNotAllowedException"


def test_unsigned_request_forbidden(floe):
    r = signed_request(floe.catalog_port, "GET", "/buckets", sign=False)
    assert r.status_code == 403
    assert "x-amzn-ErrorType" in r.headers and "message" in r.json()


def _model():
    import botocore
    p = glob.glob(os.path.join(os.path.dirname(botocore.__file__), "data", "s3tables", "*", "service-2.json*"))
    p = sorted(p)[-1]
    with (gzip.open(p) if p.endswith(".gz") else open(p, "rb")) as f:
        return json.load(f)


def test_every_model_operation_is_routed(floe):
    """Each operation of botocore's s3tables model reaches a handler (no 404 Unknown / 405)."""
    model = _model()
    arn = quote("arn:aws:s3tables:us-east-1:000000000000:bucket/nonexistent-bkt", safe="")
    missing = []
    for name, op in model["operations"].items():
        uri = op["http"]["requestUri"].split("?")[0]
        uri = (uri.replace("{tableBucketARN}", arn).replace("{resourceArn}", arn)
               .replace("{namespace}", "ns").replace("{name}", "t").replace("{type}", "icebergCompaction"))
        r = signed_request(floe.catalog_port, op["http"]["method"], uri, body=b"{}")
        if r.headers.get("x-amzn-ErrorType") in ("UnknownOperationException", "MethodNotAllowedException") \
                and "record-expiration" not in uri:
            missing.append(name)
        assert r.status_code < 500, (name, r.status_code, r.text)
    assert missing == []
    assert len(model["operations"]) >= 49
