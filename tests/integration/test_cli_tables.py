"""`floe tables`, floe's own S3 Tables client, against a live `floe serve`,
cross-checked with boto3's s3tables client (an independent peer)."""
import json
import os
import subprocess
import uuid

import boto3
import pytest

from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY


def run(floe, *args, ok=True, creds=True):
    env = dict(os.environ)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "FLOE_ROOT_ACCESS_KEY_ID",
              "FLOE_ROOT_SECRET_ACCESS_KEY"):
        env.pop(k, None)
    if creds:
        env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = ACCESS_KEY, SECRET_KEY
    p = subprocess.run([FLOE_BIN, "tables", *args, "--endpoint-url",
                        "http://127.0.0.1:%d" % floe.catalog_port, "--output", "json"],
                       env=env, capture_output=True, text=True, timeout=60)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture
def s3t(floe):
    return boto3.client("s3tables", endpoint_url="http://127.0.0.1:%d" % floe.catalog_port,
                        region_name=REGION, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY)


def test_cli_bucket_namespace_table_roundtrip(floe, s3t, tmp_path):
    name = "cli-" + uuid.uuid4().hex[:10]
    arn = json.loads(run(floe, "create-table-bucket", "--name", name).stdout)["arn"]
    assert arn.endswith(":bucket/" + name)
    assert s3t.get_table_bucket(tableBucketARN=arn)["name"] == name

    run(floe, "create-namespace", "--table-bucket-arn", arn, "--namespace", "sales")
    assert [n["namespace"] for n in s3t.list_namespaces(tableBucketARN=arn)["namespaces"]] == [["sales"]]

    spec = tmp_path / "create-table.json"
    spec.write_text(json.dumps({
        "tableBucketARN": arn, "namespace": "sales", "name": "orders", "format": "ICEBERG",
        "metadata": {"iceberg": {"schema": {"fields": [
            {"name": "id", "type": "long", "required": True},
            {"name": "amount", "type": "decimal(10,2)"}]}}}}))
    created = json.loads(run(floe, "create-table", "--cli-input-json", "file://%s" % spec).stdout)
    loc = json.loads(run(floe, "get-table-metadata-location", "--table-bucket-arn", arn,
                         "--namespace", "sales", "--name", "orders").stdout)
    assert loc["versionToken"] == created["versionToken"]
    assert loc["metadataLocation"].startswith(loc["warehouseLocation"] + "/metadata/")
    peer = s3t.get_table_metadata_location(tableBucketARN=arn, namespace="sales", name="orders")
    assert peer["metadataLocation"] == loc["metadataLocation"]

    listed = json.loads(run(floe, "list-tables", "--table-bucket-arn", arn).stdout)["tables"]
    assert [t["name"] for t in listed] == ["orders"]


def test_cli_errors_exit_nonzero_with_the_server_message(floe):
    p = run(floe, "get-table-bucket", "--table-bucket-arn",
            "acs:osstables:us-east-1:000000000000:bucket/no-such-" + uuid.uuid4().hex[:8], ok=False)
    assert p.returncode == 1
    assert "HTTP 404" in p.stderr
    p = run(floe, "create-namespace", "--table-bucket-arn", "x", "--bogus-flag", "y", ok=False)
    assert p.returncode == 2 and "unknown flag" in p.stderr


def test_cli_wrong_secret_is_refused(floe):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY="wrong-secret-0000")
    p = subprocess.run([FLOE_BIN, "tables", "list-table-buckets", "--endpoint-url",
                        "http://127.0.0.1:%d" % floe.catalog_port], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1 and "HTTP 403" in p.stderr
