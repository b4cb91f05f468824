"""Fixtures and helpers for the S3 Tables control-plane tests (catalog port).

Import with `from tables_fixtures import *` in a test module: the fixtures build
on conftest's session server `floe`."""
import json
import re
import uuid

import boto3
import botocore.session
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, REGION, SECRET_KEY

__all__ = ["s3t", "s3t_nv", "tbucket", "tns", "ttable", "catalog_url", "client_error", "unique_tb_name",
           "unique_ident", "signed_request", "cleanup_bucket", "make_s3tables_client"]


def make_s3tables_client(port, access_key=ACCESS_KEY, secret=SECRET_KEY, validate=True):
    """boto3 s3tables client; validate=False sends values botocore would refuse client-side."""
    conf = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=60,
                  parameter_validation=validate)
    return boto3.session.Session().client(
        "s3tables", endpoint_url="http://127.0.0.1:%d" % port, region_name=REGION,
        aws_access_key_id=access_key, aws_secret_access_key=secret, config=conf)


def unique_tb_name(hint="tb"):
    hint = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-")[:30].strip("-") or "tb"
    return "%s-%s" % (hint, uuid.uuid4().hex[:10])


def unique_ident(hint="n"):
    hint = re.sub(r"[^a-z0-9_]+", "_", hint.lower()).strip("_")[:30].strip("_") or "n"
    return "%s_%s" % (hint, uuid.uuid4().hex[:8])


def client_error(fn, *args, **kw):
    """Calls fn expecting a ClientError; returns (code, http status, message)."""
    with pytest.raises(ClientError) as ei:
        fn(*args, **kw)
    e = ei.value.response
    return e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"], e["Error"].get("Message", "")


def signed_request(port, method, path, body=b"", query="", headers=None, sign=True):
    """A raw request to the catalog port, SigV4-signed for s3tables as botocore signs it."""
    url = "http://127.0.0.1:%d%s" % (port, path) + ("?" + query if query else "")
    hdrs = {"Content-Type": "application/json"} if body else {}
    hdrs.update(headers or {})
    req = AWSRequest(method=method, url=url, data=body, headers=hdrs)
    if sign:
        SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    prepared = req.prepare()
    return requests.request(method, prepared.url, headers=dict(prepared.headers), data=body, timeout=30)


def cleanup_bucket(client, arn):
    """Deletes every table, namespace and then the table bucket (best effort)."""
    try:
        for page in client.get_paginator("list_tables").paginate(tableBucketARN=arn):
            for t in page["tables"]:
                try:
                    client.delete_table(tableBucketARN=arn, namespace=t["namespace"][0], name=t["name"])
                except ClientError:
                    pass
        for page in client.get_paginator("list_namespaces").paginate(tableBucketARN=arn):
            for n in page["namespaces"]:
                try:
                    client.delete_namespace(tableBucketARN=arn, namespace=n["namespace"][0])
                except ClientError:
                    pass
        client.delete_table_bucket(tableBucketARN=arn)
    except ClientError:
        pass


@pytest.fixture(scope="session")
def catalog_url(floe):
    return "http://127.0.0.1:%d" % floe.catalog_port


@pytest.fixture(scope="session")
def s3t(floe):
    return make_s3tables_client(floe.catalog_port)


@pytest.fixture(scope="session")
def s3t_nv(floe):
    """Like s3t, without botocore's client-side parameter validation."""
    return make_s3tables_client(floe.catalog_port, validate=False)


@pytest.fixture
def tbucket(s3t, request):
    """A fresh table bucket; yields its ARN."""
    arn = s3t.create_table_bucket(name=unique_tb_name(request.node.name))["arn"]
    yield arn
    cleanup_bucket(s3t, arn)


@pytest.fixture
def tns(s3t, tbucket):
    ns = unique_ident("ns")
    s3t.create_namespace(tableBucketARN=tbucket, namespace=[ns])
    return ns


@pytest.fixture
def ttable(s3t, tbucket, tns):
    """A table created without metadata: (bucket ARN, namespace, name, CreateTable response)."""
    name = unique_ident("t")
    r = s3t.create_table(tableBucketARN=tbucket, namespace=tns, name=name, format="ICEBERG")
    return tbucket, tns, name, r
