"""OSS Tables as Alibaba Cloud's own SDK calls it: every operation of the
`alibabacloud_oss_v2.tables` client against floe serve (path style, and a
virtual-hosted Host), OSS Tables' error shape (x-oss-error-type + {"message"})
and x-oss-request-id on every answer to an OSS-signed request, while boto3's
s3tables keeps S3 Tables' shapes. PyIceberg (SigV4 osstables) appends to a
table the OSS SDK created with a schema, partition spec and sort order; the
SDK then renames and deletes it."""
import ast
import json

import pyarrow as pa
import pytest
import requests

from oss_fixtures import *  # noqa: F401,F403
from rest_fixtures import load_rest_catalog
from tables_fixtures import make_s3tables_client, unique_ident, unique_tb_name


@pytest.fixture
def ossbucket(osst, request):
    arn = osst.create_table_bucket(tm.CreateTableBucketRequest(name=unique_tb_name(request.node.name))).arn
    yield arn
    for n in osst.list_namespaces(tm.ListNamespacesRequest(table_bucket_arn=arn)).namespaces or []:
        for t in osst.list_tables(tm.ListTablesRequest(table_bucket_arn=arn, namespace=n.namespace[0])).tables or []:
            osst.delete_table(tm.DeleteTableRequest(table_bucket_arn=arn, namespace=n.namespace[0], name=t.name))
        osst.delete_namespace(tm.DeleteNamespaceRequest(table_bucket_arn=arn, namespace=n.namespace[0]))
    osst.delete_table_bucket(tm.DeleteTableBucketRequest(table_bucket_arn=arn))


def as_dict(v):
    """The SDK hands untyped JSON members back as the repr of a dict."""
    return v if isinstance(v, dict) else ast.literal_eval(v)


def iceberg_metadata(part=("ts", 2, "ts_day", "day")):
    return tm.TableMetadata(iceberg=tm.IcebergMetadata(
        schema=tm.IcebergSchema(fields=[tm.SchemaField(name="id", type="long", required=True),
                                        tm.SchemaField(name="ts", type="timestamp"),
                                        tm.SchemaField(name="s", type="string")]),
        partition_spec=tm.IcebergPartitionSpec(spec_id=0, fields=[
            tm.IcebergPartitionField(source_id=part[1], field_id=1000, name=part[2], transform=part[3])]),
        sort_order=tm.IcebergSortOrder(fields=[
            tm.IcebergSortField(source_id=1, direction="asc", null_order="nulls-first", transform="identity")]),
        properties={"write.format.default": "parquet"}))


def test_buckets_encryption_policy_maintenance(osst, ossbucket):
    arn = ossbucket
    got = osst.get_table_bucket(tm.GetTableBucketRequest(table_bucket_arn=arn))
    assert got.arn == arn and got.request_id and got.headers.get("x-oss-request-id") == got.request_id
    listed = osst.list_table_buckets(tm.ListTableBucketsRequest(prefix=got.name[:10], max_buckets=1000))
    assert arn in [b.arn for b in listed.table_buckets]

    osst.put_table_bucket_encryption(tm.PutTableBucketEncryptionRequest(
        table_bucket_arn=arn, encryption_configuration=tm.EncryptionConfiguration(sse_algorithm="AES256")))
    enc = osst.get_table_bucket_encryption(tm.GetTableBucketEncryptionRequest(table_bucket_arn=arn))
    assert enc.encryption_configuration.sse_algorithm == "AES256"
    osst.delete_table_bucket_encryption(tm.DeleteTableBucketEncryptionRequest(table_bucket_arn=arn))

    pol = json.dumps({"Version": "1", "Statement": [{"Effect": "Allow", "Principal": ["000000000000"],
                                                     "Action": ["oss:GetTable"], "Resource": [arn]}]})
    osst.put_table_bucket_policy(tm.PutTableBucketPolicyRequest(table_bucket_arn=arn, resource_policy=pol))
    assert json.loads(osst.get_table_bucket_policy(
        tm.GetTableBucketPolicyRequest(table_bucket_arn=arn)).resource_policy) == json.loads(pol)
    osst.delete_table_bucket_policy(tm.DeleteTableBucketPolicyRequest(table_bucket_arn=arn))
    se = oss_error(osst.get_table_bucket_policy, tm.GetTableBucketPolicyRequest(table_bucket_arn=arn))
    assert se.status_code == 404 and se.code == "NotFoundException"

    osst.put_table_bucket_maintenance_configuration(tm.PutTableBucketMaintenanceConfigurationRequest(
        table_bucket_arn=arn, type="icebergUnreferencedFileRemoval",
        value={"status": "enabled", "settings": {"icebergUnreferencedFileRemoval":
                                                 {"unreferencedDays": 4, "nonCurrentDays": 11}}}))
    cfg = as_dict(osst.get_table_bucket_maintenance_configuration(
        tm.GetTableBucketMaintenanceConfigurationRequest(table_bucket_arn=arn)).configuration)
    assert cfg["icebergUnreferencedFileRemoval"]["settings"]["icebergUnreferencedFileRemoval"] == \
        {"unreferencedDays": 4, "nonCurrentDays": 11}


def test_namespaces_and_tables(osst, ossbucket):
    arn = ossbucket
    ns = unique_ident("ns")
    assert osst.create_namespace(tm.CreateNamespaceRequest(table_bucket_arn=arn, namespace=[ns])).namespace == [ns]
    assert osst.get_namespace(tm.GetNamespaceRequest(table_bucket_arn=arn, namespace=ns)).namespace == [ns]
    assert [n.namespace for n in osst.list_namespaces(
        tm.ListNamespacesRequest(table_bucket_arn=arn, max_namespaces=10)).namespaces] == [[ns]]

    c = osst.create_table(tm.CreateTableRequest(table_bucket_arn=arn, namespace=ns, name="t1",
                                                format="ICEBERG", metadata=iceberg_metadata()))
    assert c.table_arn.startswith(arn + "/table/") and c.version_token
    g = osst.get_table(tm.GetTableRequest(table_bucket_arn=arn, namespace=ns, name="t1"))
    assert g.table_arn == c.table_arn and g.metadata_location and g.format == "ICEBERG"
    assert osst.get_table(tm.GetTableRequest(table_arn=c.table_arn)).name == "t1"
    assert [t.name for t in osst.list_tables(tm.ListTablesRequest(table_bucket_arn=arn, namespace=ns)).tables] == ["t1"]
    enc = osst.get_table_encryption(tm.GetTableEncryptionRequest(table_bucket_arn=arn, namespace=ns, name="t1"))
    assert enc.encryption_configuration.sse_algorithm

    osst.put_table_maintenance_configuration(tm.PutTableMaintenanceConfigurationRequest(
        table_bucket_arn=arn, namespace=ns, name="t1", type="icebergCompaction",
        value={"status": "enabled", "settings": {"icebergCompaction": {"targetFileSizeMB": 256}}}))
    mc = as_dict(osst.get_table_maintenance_configuration(tm.GetTableMaintenanceConfigurationRequest(
        table_bucket_arn=arn, namespace=ns, name="t1")).configuration)
    assert mc["icebergCompaction"]["settings"]["icebergCompaction"]["targetFileSizeMB"] == 256
    st = as_dict(osst.get_table_maintenance_job_status(tm.GetTableMaintenanceJobStatusRequest(
        table_bucket_arn=arn, namespace=ns, name="t1")).status)
    assert st["icebergCompaction"]["status"] in ("Not_Yet_Run", "Successful", "Disabled")

    loc = osst.get_table_metadata_location(tm.GetTableMetadataLocationRequest(
        table_bucket_arn=arn, namespace=ns, name="t1"))
    assert loc.metadata_location == g.metadata_location and loc.warehouse_location
    up = osst.update_table_metadata_location(tm.UpdateTableMetadataLocationRequest(
        table_bucket_arn=arn, namespace=ns, name="t1", version_token=loc.version_token,
        metadata_location=loc.metadata_location))
    assert up.version_token != loc.version_token
    se = oss_error(osst.update_table_metadata_location, tm.UpdateTableMetadataLocationRequest(
        table_bucket_arn=arn, namespace=ns, name="t1", version_token=loc.version_token,
        metadata_location=loc.metadata_location))
    assert se.status_code == 409 and se.code == "ConflictException"

    pol = json.dumps({"Version": "1", "Statement": [{"Effect": "Allow", "Principal": ["000000000000"],
                                                     "Action": ["oss:GetTable"], "Resource": [c.table_arn]}]})
    osst.put_table_policy(tm.PutTablePolicyRequest(table_bucket_arn=arn, namespace=ns, name="t1", resource_policy=pol))
    assert osst.get_table_policy(tm.GetTablePolicyRequest(table_bucket_arn=arn, namespace=ns, name="t1")).resource_policy
    osst.delete_table_policy(tm.DeleteTablePolicyRequest(table_bucket_arn=arn, namespace=ns, name="t1"))

    osst.rename_table(tm.RenameTableRequest(table_bucket_arn=arn, namespace=ns, name="t1", new_name="t2"))
    se = oss_error(osst.get_table, tm.GetTableRequest(table_bucket_arn=arn, namespace=ns, name="t1"))
    assert se.status_code == 404 and se.code == "NotFoundException" and "does not exist" in se.message
    assert se.request_id and se.headers.get("x-oss-error-type") == "NotFoundException"
    osst.delete_table(tm.DeleteTableRequest(table_bucket_arn=arn, namespace=ns, name="t2"))
    osst.delete_namespace(tm.DeleteNamespaceRequest(table_bucket_arn=arn, namespace=ns))
    se = oss_error(osst.get_namespace, tm.GetNamespaceRequest(table_bucket_arn=arn, namespace=ns))
    assert se.code == "NotFoundException"


def test_error_shapes_per_dialect(osst, floe):
    """The same failure: OSS-signed gets x-oss-error-type and x-oss-request-id;
    SigV4 (boto3) gets x-amzn-ErrorType and x-amz-request-id, as before."""
    missing = "acs:osstables:us-east-1:000000000000:bucket/" + unique_tb_name("missing")
    se = oss_error(osst.get_table_bucket, tm.GetTableBucketRequest(table_bucket_arn=missing))
    assert se.status_code == 404 and se.code == "NotFoundException"
    h = {k.lower(): v for k, v in se.headers.items()}
    assert h["content-type"] == "application/json" and "x-oss-request-id" in h
    assert "x-amzn-errortype" not in h and "x-amz-request-id" not in h
    assert json.loads(se.snapshot) == {"message": "The specified table bucket does not exist."}

    s3t = make_s3tables_client(floe.catalog_port)
    import botocore.exceptions
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3t.get_table_bucket(tableBucketARN=missing)
    hh = ei.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert hh["x-amzn-errortype"] == "NotFoundException" and "x-amz-request-id" in hh
    assert "x-oss-error-type" not in hh and "x-oss-request-id" not in hh
    assert ei.value.response["Error"]["Code"] == "NotFoundException"

    # refused signatures are answered in the client's dialect too
    bad = oss_tables.Client(oss_config("http://127.0.0.1:%d" % floe.catalog_port, secret="wrong"))
    se = oss_error(bad.list_table_buckets, tm.ListTableBucketsRequest())
    assert se.status_code == 403 and se.code == "InvalidSignatureException" and se.request_id


def test_virtual_hosted_host(osst, ossbucket, floe):
    """{bucket}-{account}.{endpoint}: the Host names the bucket, the path and the
    signature's resource are the same as in path style."""
    name, account = ossbucket.rsplit("/", 1)[1], ossbucket.split(":")[3]
    from urllib.parse import quote
    q = quote(ossbucket, safe="")
    r = oss_raw(floe.catalog_port, "GET", "/buckets/" + q, key="buckets/" + q, bucket=ossbucket, tables=True,
                headers={"Host": "%s-%s.127.0.0.1:%d" % (name, account, floe.catalog_port)})
    assert r.status_code == 200, r.content
    assert r.json()["arn"] == ossbucket and r.headers["x-oss-request-id"]


def test_pyiceberg_appends_to_sdk_table(osst, ossbucket, floe):
    arn = ossbucket
    ns = unique_ident("ns")
    osst.create_namespace(tm.CreateNamespaceRequest(table_bucket_arn=arn, namespace=[ns]))
    osst.create_table(tm.CreateTableRequest(table_bucket_arn=arn, namespace=ns, name="events",
                                            format="ICEBERG",
                                            metadata=iceberg_metadata(("s", 3, "s", "identity"))))
    cat = load_rest_catalog(floe, arn, signing_name="osstables")
    t = cat.load_table((ns, "events"))
    assert [f.name for f in t.schema().fields] == ["id", "ts", "s"]
    assert t.spec().fields[0].name == "s" and t.sort_order().fields[0].source_id == 1
    import datetime
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "ts": pa.array([datetime.datetime(2026, 1, d) for d in (1, 1, 2)], pa.timestamp("us")),
                     "s": ["a", "b", "c"]},
                    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us")),
                                      pa.field("s", pa.string())]))
    t.append(rows)
    assert sorted(cat.load_table((ns, "events")).scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    g = osst.get_table(tm.GetTableRequest(table_bucket_arn=arn, namespace=ns, name="events"))
    assert g.metadata_location == cat.load_table((ns, "events")).metadata_location
    osst.rename_table(tm.RenameTableRequest(table_bucket_arn=arn, namespace=ns, name="events", new_name="events2"))
    assert cat.load_table((ns, "events2")).scan().to_arrow().num_rows == 3
    osst.delete_table(tm.DeleteTableRequest(table_bucket_arn=arn, namespace=ns, name="events2"))
    assert (ns, "events2") not in cat.list_tables(ns)
