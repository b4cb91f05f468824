"""Users, access keys and policies through boto3's own iam/sts clients on the
catalog port (routed by the signing name), and their enforcement on the S3
Tables control plane: no policy = denied, identity allow, bucket/table
resource policy allow, explicit deny wins, a disabled or deleted key is
refused, a denied call changes nothing."""
import json
import time
import uuid

import boto3
import pytest
from botocore.config import Config

from conftest import ACCESS_KEY, REGION, SECRET_KEY
from tables_fixtures import *  # noqa: F401,F403

ACCOUNT = "000000000000"


def iam_client(floe, ak=ACCESS_KEY, sk=SECRET_KEY, svc="iam", token=None):
    conf = Config(retries={"max_attempts": 1, "mode": "standard"})
    return boto3.session.Session().client(
        svc, endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name=REGION,
        aws_access_key_id=ak, aws_secret_access_key=sk, aws_session_token=token, config=conf)


@pytest.fixture
def user(floe):
    """A fresh user with one access key: (name, s3tables client, iam client as root)."""
    iam = iam_client(floe)
    name = "u-" + uuid.uuid4().hex[:8]
    iam.create_user(UserName=name)
    k = iam.create_access_key(UserName=name)["AccessKey"]
    time.sleep(0)  # keys are usable at once
    yield name, make_s3tables_client(floe.catalog_port, k["AccessKeyId"], k["SecretAccessKey"]), iam, k
    for p in iam.list_user_policies(UserName=name)["PolicyNames"]:
        iam.delete_user_policy(UserName=name, PolicyName=p)
    for m in iam.list_access_keys(UserName=name)["AccessKeyMetadata"]:
        iam.delete_access_key(UserName=name, AccessKeyId=m["AccessKeyId"])
    iam.delete_user(UserName=name)


def allow(actions, resource="*", effect="Allow", **extra):
    st = {"Effect": effect, "Action": actions, "Resource": resource}
    st.update(extra)
    return json.dumps({"Version": "2012-10-17", "Statement": [st]})


def test_iam_api_shapes(floe):
    iam = iam_client(floe)
    name = "shape-" + uuid.uuid4().hex[:6]
    u = iam.create_user(UserName=name)["User"]
    assert u["UserName"] == name and u["Arn"] == "arn:aws:iam::%s:user/%s" % (ACCOUNT, name)
    assert name in [x["UserName"] for x in iam.list_users()["Users"]]
    code, status, _ = client_error(iam.create_user, UserName=name)
    assert (code, status) == ("EntityAlreadyExists", 409)
    k = iam.create_access_key(UserName=name)["AccessKey"]
    assert k["Status"] == "Active" and len(k["SecretAccessKey"]) == 40
    keys = iam.list_access_keys(UserName=name)["AccessKeyMetadata"]
    assert [x["AccessKeyId"] for x in keys] == [k["AccessKeyId"]] and "SecretAccessKey" not in keys[0]
    pol = allow("s3tables:GetTable")
    iam.put_user_policy(UserName=name, PolicyName="p1", PolicyDocument=pol)
    assert iam.list_user_policies(UserName=name)["PolicyNames"] == ["p1"]
    got = iam.get_user_policy(UserName=name, PolicyName="p1")["PolicyDocument"]
    assert got == json.loads(pol)  # botocore URL-decodes and parses it
    code, status, _ = client_error(iam.put_user_policy, UserName=name, PolicyName="bad",
                                   PolicyDocument=json.dumps({"Statement": [{"Effect": "Allow", "Action": "x"}]}))
    assert (code, status) == ("MalformedPolicyDocument", 400)
    code, _, _ = client_error(iam.delete_user, UserName=name)
    assert code == "DeleteConflict"
    # sts as the user and as root
    me = iam_client(floe, k["AccessKeyId"], k["SecretAccessKey"], svc="sts").get_caller_identity()
    assert me["Arn"] == u["Arn"] and me["Account"] == ACCOUNT
    root = iam_client(floe, svc="sts").get_caller_identity()
    assert root["Arn"] == "arn:aws:iam::%s:root" % ACCOUNT
    iam.delete_user_policy(UserName=name, PolicyName="p1")
    iam.delete_access_key(UserName=name, AccessKeyId=k["AccessKeyId"])
    iam.delete_user(UserName=name)
    code, status, _ = client_error(iam.get_user, UserName=name)
    assert (code, status) == ("NoSuchEntity", 404)


def test_user_without_policy_is_denied(floe, user, tbucket):
    _, c, _, _ = user
    code, status, _ = client_error(c.get_table_bucket, tableBucketARN=tbucket)
    assert (code, status) == ("AccessDeniedException", 403)
    code, _, _ = client_error(c.create_namespace, tableBucketARN=tbucket, namespace=["nope_ns"])
    assert code == "AccessDeniedException"
    # nothing changed
    root = make_s3tables_client(floe.catalog_port)
    assert "nope_ns" not in [n["namespace"][0] for n in root.list_namespaces(tableBucketARN=tbucket)["namespaces"]]


def test_identity_policy_allows_and_deny_wins(floe, user, tbucket):
    name, c, iam, _ = user
    iam.put_user_policy(UserName=name, PolicyName="read", PolicyDocument=allow(["oss:GetTableBucket", "s3tables:List*"]))
    assert c.get_table_bucket(tableBucketARN=tbucket)["arn"] == tbucket
    c.list_namespaces(tableBucketARN=tbucket)
    code, _, _ = client_error(c.create_namespace, tableBucketARN=tbucket, namespace=["x_ns"])
    assert code == "AccessDeniedException"
    iam.put_user_policy(UserName=name, PolicyName="deny", PolicyDocument=allow("s3tables:ListNamespaces", effect="Deny"))
    code, _, _ = client_error(c.list_namespaces, tableBucketARN=tbucket)
    assert code == "AccessDeniedException"
    assert c.get_table_bucket(tableBucketARN=tbucket)["arn"] == tbucket


def test_resource_policies(floe, user, ttable):
    name, c, iam, _ = user
    arn, ns, tname, _ = ttable
    root = make_s3tables_client(floe.catalog_port)
    uarn = "arn:aws:iam::%s:user/%s" % (ACCOUNT, name)
    # a bucket policy naming the user is enough in the same account
    root.put_table_bucket_policy(tableBucketARN=arn, resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": uarn},
                                                 "Action": ["s3tables:GetTable", "s3tables:GetTableMetadataLocation"],
                                                 "Resource": arn + "/table/*",
                                                 "Condition": {"StringEquals": {"s3tables:namespace": ns}}}]}))
    assert c.get_table(tableBucketARN=arn, namespace=ns, name=tname)["name"] == tname
    c.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=tname)
    code, _, _ = client_error(c.delete_table, tableBucketARN=arn, namespace=ns, name=tname)
    assert code == "AccessDeniedException"
    # a table policy's Deny beats the bucket policy's Allow
    root.put_table_policy(tableBucketARN=arn, namespace=ns, name=tname, resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Principal": "*",
                                                 "Action": "s3tables:GetTableMetadataLocation", "Resource": "*"}]}))
    code, _, _ = client_error(c.get_table_metadata_location, tableBucketARN=arn, namespace=ns, name=tname)
    assert code == "AccessDeniedException"
    assert c.get_table(tableBucketARN=arn, namespace=ns, name=tname)["name"] == tname
    # the user may never touch the policies themselves without a grant
    code, _, _ = client_error(c.get_table_bucket_policy, tableBucketARN=arn)
    assert code == "AccessDeniedException"
    root.delete_table_policy(tableBucketARN=arn, namespace=ns, name=tname)
    root.delete_table_bucket_policy(tableBucketARN=arn)


def test_disabled_and_deleted_keys_refused(floe, user, tbucket):
    name, c, iam, k = user
    iam.put_user_policy(UserName=name, PolicyName="all", PolicyDocument=allow("s3tables:*"))
    c.get_table_bucket(tableBucketARN=tbucket)
    iam.update_access_key(UserName=name, AccessKeyId=k["AccessKeyId"], Status="Inactive")
    code, status, _ = client_error(c.get_table_bucket, tableBucketARN=tbucket)
    assert status == 403, code
    iam.update_access_key(UserName=name, AccessKeyId=k["AccessKeyId"], Status="Active")
    c.get_table_bucket(tableBucketARN=tbucket)
    iam.delete_access_key(UserName=name, AccessKeyId=k["AccessKeyId"])
    code, status, _ = client_error(c.get_table_bucket, tableBucketARN=tbucket)
    assert status == 403, code


def test_user_cannot_manage_iam_without_grant(floe, user):
    name, _, iam, k = user
    me = iam_client(floe, k["AccessKeyId"], k["SecretAccessKey"])
    code, status, _ = client_error(me.create_user, UserName="evil-" + uuid.uuid4().hex[:6])
    assert (code, status) == ("AccessDenied", 403)
    code, _, _ = client_error(me.put_user_policy, UserName=name, PolicyName="esc", PolicyDocument=allow("*"))
    assert code == "AccessDenied"
    # a session token on a long-term key is refused
    bad = iam_client(floe, k["AccessKeyId"], k["SecretAccessKey"], svc="sts", token="forged")
    code, status, _ = client_error(bad.get_caller_identity)
    assert status == 403
