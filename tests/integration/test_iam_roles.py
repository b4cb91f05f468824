"""Roles, managed policies and STS AssumeRole through boto3's iam/sts clients,
and the temporary credentials on every API: the trust policy decides who may
assume, the session policy narrows the role's, x-amz-security-token is
required and checked everywhere, and expired or revoked sessions are refused
on the S3 data plane, the S3 Tables API, the Iceberg REST catalog and STS."""
import json
import os
import sqlite3
import time
import uuid

import pytest
from pyiceberg.exceptions import ForbiddenError

import pgserver
from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, iam_client, policy, rest_catalog_as, s3_client
from rest_fixtures import load_rest_catalog, s3tables_client
from tables_fixtures import client_error, make_s3tables_client
from test_iam_enforce import ROWS, SCHEMA


def trust(principal_arn):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": principal_arn}, "Action": "sts:AssumeRole"}]})


@pytest.fixture
def role(root_iam):
    names = []

    def make(trusted, **kw):
        n = "r-" + uuid.uuid4().hex[:8]
        root_iam.create_role(RoleName=n, AssumeRolePolicyDocument=trust(trusted), **kw)
        names.append(n)
        return n
    yield make
    for n in names:
        try:
            for p in root_iam.list_role_policies(RoleName=n)["PolicyNames"]:
                root_iam.delete_role_policy(RoleName=n, PolicyName=p)
            for a in root_iam.list_attached_role_policies(RoleName=n)["AttachedPolicies"]:
                root_iam.detach_role_policy(RoleName=n, PolicyArn=a["PolicyArn"])
            root_iam.delete_role(RoleName=n)
        except Exception:
            pass


@pytest.fixture(scope="module")
def tb(floe):
    s3t = s3tables_client(floe)
    arn = s3t.create_table_bucket(name="roles-%s" % uuid.uuid4().hex[:10])["arn"]
    return arn


def test_role_crud_shapes(floe, root_iam, new_user, role):
    u = new_user()
    n = role(u.arn)
    r = root_iam.get_role(RoleName=n)["Role"]
    assert r["Arn"] == "arn:aws:iam::%s:role/%s" % (ACCOUNT, n) and r["RoleId"].startswith("AROA")
    assert r["AssumeRolePolicyDocument"] == json.loads(trust(u.arn))
    assert n in [x["RoleName"] for x in root_iam.list_roles()["Roles"]]
    code, status, _ = client_error(root_iam.create_role, RoleName=n, AssumeRolePolicyDocument=trust(u.arn))
    assert (code, status) == ("EntityAlreadyExists", 409)
    # a trust policy must name a principal
    code, _, _ = client_error(root_iam.create_role, RoleName=n + "x", AssumeRolePolicyDocument=policy("sts:AssumeRole"))
    assert code == "MalformedPolicyDocument"
    root_iam.put_role_policy(RoleName=n, PolicyName="p", PolicyDocument=policy("s3tables:Get*"))
    assert root_iam.list_role_policies(RoleName=n)["PolicyNames"] == ["p"]
    assert root_iam.get_role_policy(RoleName=n, PolicyName="p")["PolicyDocument"] == json.loads(policy("s3tables:Get*"))
    code, _, _ = client_error(root_iam.delete_role, RoleName=n)
    assert code == "DeleteConflict"
    root_iam.delete_role_policy(RoleName=n, PolicyName="p")
    root_iam.delete_role(RoleName=n)
    code, status, _ = client_error(root_iam.get_role, RoleName=n)
    assert (code, status) == ("NoSuchEntity", 404)


def test_managed_policies_attach_detach(floe, root_iam, new_user, tb):
    u = new_user()
    c = make_s3tables_client(floe.catalog_port, u.ak, u.sk)
    name = "mp-" + uuid.uuid4().hex[:6]
    p = root_iam.create_policy(PolicyName=name, PolicyDocument=policy(["s3tables:GetTableBucket"]))["Policy"]
    assert p["Arn"] == "arn:aws:iam::%s:policy/%s" % (ACCOUNT, name)
    assert root_iam.get_policy(PolicyArn=p["Arn"])["Policy"]["AttachmentCount"] == 0
    assert name in [x["PolicyName"] for x in root_iam.list_policies(Scope="Local")["Policies"]]
    code, _, _ = client_error(c.get_table_bucket, tableBucketARN=tb)
    assert code == "AccessDeniedException"
    root_iam.attach_user_policy(UserName=u.name, PolicyArn=p["Arn"])
    assert c.get_table_bucket(tableBucketARN=tb)["arn"] == tb
    assert [a["PolicyArn"] for a in root_iam.list_attached_user_policies(UserName=u.name)["AttachedPolicies"]] == [p["Arn"]]
    assert root_iam.get_policy(PolicyArn=p["Arn"])["Policy"]["AttachmentCount"] == 1
    code, _, _ = client_error(root_iam.delete_policy, PolicyArn=p["Arn"])
    assert code == "DeleteConflict"
    root_iam.detach_user_policy(UserName=u.name, PolicyArn=p["Arn"])
    code, _, _ = client_error(c.get_table_bucket, tableBucketARN=tb)
    assert code == "AccessDeniedException"
    root_iam.delete_policy(PolicyArn=p["Arn"])
    code, status, _ = client_error(root_iam.get_policy, PolicyArn=p["Arn"])
    assert (code, status) == ("NoSuchEntity", 404)
    code, _, _ = client_error(root_iam.attach_user_policy, UserName=u.name,
                              PolicyArn="arn:aws:iam::%s:policy/none" % ACCOUNT)
    assert code == "NoSuchEntity"


def _assume(floe, u, role_arn, **kw):
    sts = iam_client(floe, u.ak, u.sk, svc="sts")
    return sts.assume_role(RoleArn=role_arn, RoleSessionName="sess-1", **kw)


def test_assume_role_and_session_credentials(floe, root_iam, new_user, role, tb):
    u = new_user()
    n = role(u.arn)
    rarn = "arn:aws:iam::%s:role/%s" % (ACCOUNT, n)
    root_iam.put_role_policy(RoleName=n, PolicyName="p", PolicyDocument=policy(["s3tables:GetTableBucket",
                                                                              "s3tables:ListNamespaces"]))
    out = _assume(floe, u, rarn, DurationSeconds=900)
    cr = out["Credentials"]
    assert out["AssumedRoleUser"]["Arn"] == "arn:aws:sts::%s:assumed-role/%s/sess-1" % (ACCOUNT, n)
    assert cr["AccessKeyId"] and cr["SecretAccessKey"] and cr["SessionToken"]
    left = cr["Expiration"].timestamp() - time.time()
    assert 800 < left <= 901, left
    me = iam_client(floe, cr["AccessKeyId"], cr["SecretAccessKey"], svc="sts",
                    token=cr["SessionToken"]).get_caller_identity()
    assert me["Arn"] == out["AssumedRoleUser"]["Arn"] and me["Account"] == ACCOUNT
    c = make_s3tables_client(floe.catalog_port, cr["AccessKeyId"], cr["SecretAccessKey"])
    # without its token the key is refused; with a wrong one too
    code, status, _ = client_error(c.get_table_bucket, tableBucketARN=tb)
    assert status == 403, code
    import boto3
    from botocore.config import Config
    sc = boto3.session.Session().client(
        "s3tables", endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name="us-east-1",
        aws_access_key_id=cr["AccessKeyId"], aws_secret_access_key=cr["SecretAccessKey"],
        aws_session_token=cr["SessionToken"], config=Config(retries={"max_attempts": 1}))
    assert sc.get_table_bucket(tableBucketARN=tb)["arn"] == tb
    sc.list_namespaces(tableBucketARN=tb)
    code, _, _ = client_error(sc.create_namespace, tableBucketARN=tb, namespace=["nope"])
    assert code == "AccessDeniedException"
    bad = boto3.session.Session().client(
        "s3tables", endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name="us-east-1",
        aws_access_key_id=cr["AccessKeyId"], aws_secret_access_key=cr["SecretAccessKey"],
        aws_session_token=cr["SessionToken"][:-2] + "xx", config=Config(retries={"max_attempts": 1}))
    code, status, _ = client_error(bad.get_table_bucket, tableBucketARN=tb)
    assert status == 403, code
    # a session policy narrows the role's permissions
    out2 = _assume(floe, u, rarn, Policy=policy("s3tables:GetTableBucket"))
    c2 = boto3.session.Session().client(
        "s3tables", endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name="us-east-1",
        aws_access_key_id=out2["Credentials"]["AccessKeyId"],
        aws_secret_access_key=out2["Credentials"]["SecretAccessKey"],
        aws_session_token=out2["Credentials"]["SessionToken"], config=Config(retries={"max_attempts": 1}))
    c2.get_table_bucket(tableBucketARN=tb)
    code, _, _ = client_error(c2.list_namespaces, tableBucketARN=tb)
    assert code == "AccessDeniedException"


def test_assume_role_refusals(floe, root_iam, new_user, role):
    u, other = new_user(), new_user()
    n = role(other.arn)  # trusts someone else
    rarn = "arn:aws:iam::%s:role/%s" % (ACCOUNT, n)
    code, status, _ = client_error(_assume, floe, u, rarn)
    assert (code, status) == ("AccessDenied", 403)
    code, status, _ = client_error(_assume, floe, u, "arn:aws:iam::%s:role/no-such-role" % ACCOUNT)
    assert (code, status) == ("AccessDenied", 403)
    import boto3
    from botocore.config import Config
    loose = boto3.session.Session().client(
        "sts", endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name="us-east-1",
        aws_access_key_id=other.ak, aws_secret_access_key=other.sk,
        config=Config(retries={"max_attempts": 1}, parameter_validation=False))
    code, status, _ = client_error(loose.assume_role, RoleArn=rarn, RoleSessionName="s1", DurationSeconds=100)
    assert (code, status) == ("ValidationError", 400)
    code, _, _ = client_error(_assume, floe, other, rarn, Policy='{"Statement": "nope"}')
    assert code == "MalformedPolicyDocument"
    # an explicit deny in the caller's identity policy wins over the trust policy
    other.put("sts:AssumeRole", resource=rarn, effect="Deny")
    code, _, _ = client_error(_assume, floe, other, rarn)
    assert code == "AccessDenied"


def _expire(floe, akid):
    if pgserver.wanted():
        pgserver.psql("UPDATE iam_keys SET expires_ms = %d WHERE akid = '%s'" % (int(time.time() * 1000) - 1000, akid),
                      pgserver.database_for(floe.data_dir))
        return
    db = sqlite3.connect(os.path.join(floe.data_dir, "catalog.db"), timeout=10)
    db.execute("UPDATE iam_keys SET expires_ms = ? WHERE akid = ?", (int(time.time() * 1000) - 1000, akid))
    db.commit()
    db.close()


def test_session_on_every_api_then_expired(floe, root_iam, new_user, role, tb):
    """PyIceberg and boto3 s3 signing with an assumed role's credentials (the
    Kafka Connect sink's setup: REST catalog + S3FileIO), then refused on every
    API once the session has expired, and likewise once the role is deleted."""
    s3t = s3tables_client(floe)
    root = load_rest_catalog(floe, tb, name="roles-root")
    ns = "rns_%s" % uuid.uuid4().hex[:6]
    root.create_namespace(ns)
    root.create_table((ns, "t"), SCHEMA)
    u = new_user()
    n = role(u.arn)
    rarn = "arn:aws:iam::%s:role/%s" % (ACCOUNT, n)
    root_iam.put_role_policy(RoleName=n, PolicyName="sink", PolicyDocument=policy(
        ["s3tables:GetTableBucket", "s3tables:GetNamespace", "s3tables:GetTable",
         "s3tables:GetTableMetadataLocation", "s3tables:GetTableData", "s3tables:UpdateTableMetadataLocation",
         "s3tables:PutTableData"]))
    cr = _assume(floe, u, rarn)["Credentials"]
    ak, sk, tok = cr["AccessKeyId"], cr["SecretAccessKey"], cr["SessionToken"]
    cat = rest_catalog_as(floe, tb, ak, sk, tok, name="sess-" + uuid.uuid4().hex[:6])
    t = cat.load_table((ns, "t"))
    t.append(ROWS)
    assert cat.load_table((ns, "t")).scan().to_arrow().num_rows == 3
    loc = root.load_table((ns, "t")).metadata_location
    b, key = loc[5:].split("/", 1)
    s3 = s3_client(floe, ak, sk, tok)
    s3.get_object(Bucket=b, Key=key)
    # the same key without its token: refused on the data plane
    code, status, _ = client_error(s3_client(floe, ak, sk).get_object, Bucket=b, Key=key)
    assert status in (400, 403), code
    # the session's policy never exceeds the role's: no CreateTable
    with pytest.raises(ForbiddenError):
        cat.create_table((ns, "t2"), SCHEMA)
    _expire(floe, ak)
    time.sleep(1.2)  # a change made behind the server's back is seen within FL_IAM_CACHE_TTL_MS (1 s)
    code, status, _ = client_error(s3.get_object, Bucket=b, Key=key)
    assert status in (400, 403), code
    with pytest.raises(Exception):
        rest_catalog_as(floe, tb, ak, sk, tok, name="sess-" + uuid.uuid4().hex[:6]).load_table((ns, "t"))
    sts = iam_client(floe, ak, sk, svc="sts", token=tok)
    code, status, _ = client_error(sts.get_caller_identity)
    assert status == 403, code
    # deleting the role ends its sessions at once
    cr = _assume(floe, u, rarn)["Credentials"]
    s3 = s3_client(floe, cr["AccessKeyId"], cr["SecretAccessKey"], cr["SessionToken"])
    s3.get_object(Bucket=b, Key=key)
    root_iam.delete_role_policy(RoleName=n, PolicyName="sink")
    root_iam.delete_role(RoleName=n)
    code, status, _ = client_error(s3.get_object, Bucket=b, Key=key)
    assert status == 403, code
    assert s3t.get_table_bucket(tableBucketARN=tb)
