"""Helpers for the identity tests (test_iam_*.py): boto3 iam/sts clients on the
catalog port, throw-away users with one access key, policy documents, and a
PyIceberg catalog / boto3 s3 client that sign as a given key pair."""
import json
import os
import time
import uuid

import boto3
import pytest
from botocore.config import Config

from conftest import ACCESS_KEY, REGION, SECRET_KEY

ACCOUNT = "000000000000"


def iam_client(floe, ak=ACCESS_KEY, sk=SECRET_KEY, svc="iam", token=None):
    conf = Config(retries={"max_attempts": 1, "mode": "standard"})
    return boto3.session.Session().client(
        svc, endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name=REGION,
        aws_access_key_id=ak, aws_secret_access_key=sk, aws_session_token=token, config=conf)


def policy(actions, resource="*", effect="Allow", **extra):
    st = {"Effect": effect, "Action": actions, "Resource": resource}
    st.update(extra)
    return json.dumps({"Version": "2012-10-17", "Statement": [st]})


def propagated():
    """After an IAM write through one node of a cluster (FLOE_TEST_CLUSTER): the other
    nodes drop their caches when PostgreSQL delivers the writer's NOTIFY, milliseconds
    later, not before the writer answers (as AWS IAM, eventually consistent). A test
    that goes on through another node at once waits that out; one node: no wait."""
    if int(os.environ.get("FLOE_TEST_CLUSTER", "0") or 0) > 1:
        time.sleep(0.3)


class User:
    """A user with one key; .put(actions) replaces its only inline policy."""

    def __init__(self, floe, iam, name=None):
        self.floe, self.iam = floe, iam
        self.name = name or "u-" + uuid.uuid4().hex[:8]
        iam.create_user(UserName=self.name)
        k = iam.create_access_key(UserName=self.name)["AccessKey"]
        self.ak, self.sk, self.token = k["AccessKeyId"], k["SecretAccessKey"], None
        self.arn = "arn:aws:iam::%s:user/%s" % (ACCOUNT, self.name)

    def put(self, actions, resource="*", name="p", **extra):
        self.iam.put_user_policy(UserName=self.name, PolicyName=name, PolicyDocument=policy(actions, resource, **extra))
        propagated()

    def s3(self):
        return s3_client(self.floe, self.ak, self.sk, self.token)

    def delete(self):
        for p in self.iam.list_user_policies(UserName=self.name)["PolicyNames"]:
            self.iam.delete_user_policy(UserName=self.name, PolicyName=p)
        for m in self.iam.list_access_keys(UserName=self.name)["AccessKeyMetadata"]:
            self.iam.delete_access_key(UserName=self.name, AccessKeyId=m["AccessKeyId"])
        self.iam.delete_user(UserName=self.name)


def s3_client(floe, ak, sk, token=None):
    return boto3.session.Session().client(
        "s3", endpoint_url=floe.endpoint, aws_access_key_id=ak, aws_secret_access_key=sk, aws_session_token=token,
        region_name=REGION, config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1, "mode": "standard"}))


def rest_catalog_as(floe, arn, ak, sk, token=None, name="as-user"):
    """A PyIceberg REST catalog signing (catalog and data plane) with ak/sk[/token]."""
    from pyiceberg.catalog import load_catalog
    props = {
        "type": "rest", "uri": "http://127.0.0.1:%d/iceberg" % floe.catalog_port, "warehouse": arn,
        "rest.sigv4-enabled": "true", "rest.signing-name": "s3tables", "rest.signing-region": REGION,
        "client.access-key-id": ak, "client.secret-access-key": sk, "client.region": REGION,
        "s3.endpoint": floe.endpoint, "s3.access-key-id": ak, "s3.secret-access-key": sk, "s3.region": REGION,
        "s3.force-virtual-addressing": "false",
    }
    if token:
        props["client.session-token"] = token
        props["s3.session-token"] = token
    return load_catalog(name, **props)


@pytest.fixture
def root_iam(floe):
    return iam_client(floe)


@pytest.fixture
def new_user(floe, root_iam):
    made = []

    def make():
        u = User(floe, root_iam)
        made.append(u)
        return u
    yield make
    for u in made:
        try:
            u.delete()
        except Exception:
            pass
