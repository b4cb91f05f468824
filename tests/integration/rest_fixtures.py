"""Fixtures and helpers for the Iceberg REST catalog tests (test_rest_*.py).

A table bucket is created through the S3 Tables API (boto3 `s3tables` on the catalog
port); PyIceberg talks to /iceberg with SigV4 (signing name s3tables or osstables);
`RestRaw` sends hand-made signed requests for the protocol-level checks."""
import json
import os
import uuid
from urllib.parse import quote

import boto3
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from conftest import ACCESS_KEY, REGION, SECRET_KEY


def catalog_url(floe):
    return "http://127.0.0.1:%d" % floe.catalog_port


def s3tables_client(floe):
    conf = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=120)
    return boto3.session.Session().client(
        "s3tables", endpoint_url=catalog_url(floe), aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION, config=conf)


def unique(hint="t"):
    return "%s_%s" % (hint, uuid.uuid4().hex[:10])


def _set_aws_env():
    # PyIceberg's SigV4 signer takes its credentials from the boto3 default chain.
    os.environ["AWS_ACCESS_KEY_ID"] = ACCESS_KEY
    os.environ["AWS_SECRET_ACCESS_KEY"] = SECRET_KEY
    os.environ["AWS_DEFAULT_REGION"] = REGION
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


def catalog_props(floe, arn, signing_name="s3tables"):
    return {
        "type": "rest",
        "uri": catalog_url(floe) + "/iceberg",
        "warehouse": arn,
        "rest.sigv4-enabled": "true",
        "rest.signing-name": signing_name,
        "rest.signing-region": REGION,
        "s3.endpoint": floe.endpoint,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
        "s3.force-virtual-addressing": "false",
    }


def load_rest_catalog(floe, arn, signing_name="s3tables", name="floe"):
    from pyiceberg.catalog import load_catalog
    _set_aws_env()
    return load_catalog(name, **catalog_props(floe, arn, signing_name))


class RestRaw:
    """Signed raw requests against /iceberg (botocore SigV4, like PyIceberg)."""

    def __init__(self, floe, arn, service="s3tables"):
        self.base = catalog_url(floe) + "/iceberg"
        self.arn = arn
        self.prefix = quote(arn, safe="")
        self.service = service
        self.http = requests.Session()

    def request(self, method, path, body=None, params=None, raw_body=None):
        url = self.base + path
        if params:
            url += "?" + "&".join("%s=%s" % (k, quote(str(v), safe="")) for k, v in params.items())
        data = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
        if isinstance(data, str):
            data = data.encode()
        headers = {"Content-Type": "application/json"}
        if not data:
            headers["x-amz-content-sha256"] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        req = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), self.service, REGION).add_auth(req)
        return self.http.request(method, url, data=data, headers=dict(req.headers.items()), timeout=60)

    def p(self, tail):
        return "/v1/%s/%s" % (self.prefix, tail.lstrip("/"))

    def load_table(self, ns, name):
        return self.request("GET", self.p("namespaces/%s/tables/%s" % (ns, name)))


def assert_rest_error(resp, status, typ=None):
    assert resp.status_code == status, (resp.status_code, resp.text)
    doc = resp.json()
    assert set(doc) == {"error"}, doc
    err = doc["error"]
    assert err["code"] == status and isinstance(err["message"], str) and isinstance(err["type"], str), doc
    if typ:
        assert err["type"] == typ, doc
    return err


@pytest.fixture(scope="session")
def s3tables(floe):
    return s3tables_client(floe)


@pytest.fixture(scope="session")
def table_bucket(floe, s3tables):
    """ARN of a table bucket created through the S3 Tables API."""
    name = "rest-%s" % uuid.uuid4().hex[:12]
    resp = s3tables.create_table_bucket(name=name)
    arn = resp["arn"]
    assert name in arn
    return arn


@pytest.fixture(scope="session")
def rest_catalog(floe, table_bucket):
    return load_rest_catalog(floe, table_bucket)


@pytest.fixture(scope="session")
def raw_rest(floe, table_bucket):
    return RestRaw(floe, table_bucket)


@pytest.fixture
def namespace(rest_catalog):
    ns = unique("ns")
    rest_catalog.create_namespace(ns)
    return ns
