"""STS credentials in Alibaba Cloud's clients: temporary keys minted by
boto3's sts.assume_role against floe, used by the OSS SDKs, which send the
session token as x-oss-security-token (OSS4 header and presigned query; oss2's
V1 header) or security-token (alibabacloud-oss-v2's V1 header, V1 presigned
query). Each is accepted wherever x-amz-security-token is; the same key
without its token, or with a wrong one, is refused."""
import uuid

import pytest
import requests

from conftest import unique_bucket_name
from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, iam_client, policy
from oss_fixtures import oss, oss_config, oss_error, oss_tables, tm
from rest_fixtures import s3tables_client
from test_iam_roles import role, trust  # noqa: F401

oss2 = pytest.importorskip("oss2")


@pytest.fixture
def sts_creds(floe, root_iam, new_user, role, s3):  # noqa: F811
    """A plain bucket with one object, a table bucket, and AssumeRole
    credentials whose role may read/write that bucket and get the table bucket."""
    bucket = unique_bucket_name("ossts")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="seed.txt", Body=b"seed")
    tb = s3tables_client(floe).create_table_bucket(name="ossts-%s" % uuid.uuid4().hex[:8])["arn"]
    u = new_user()
    u.put("sts:AssumeRole")
    n = role(u.arn)
    root_iam.put_role_policy(RoleName=n, PolicyName="p", PolicyDocument=policy(
        ["s3:GetObject", "s3:PutObject", "s3tables:GetTableBucket"],
        ["arn:aws:s3:::%s/*" % bucket, tb]))
    sts = iam_client(floe, u.ak, u.sk, svc="sts")
    cr = sts.assume_role(RoleArn="arn:aws:iam::%s:role/%s" % (ACCOUNT, n), RoleSessionName="oss")["Credentials"]
    yield {"ak": cr["AccessKeyId"], "sk": cr["SecretAccessKey"], "token": cr["SessionToken"],
           "bucket": bucket, "tb": tb}
    for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=o["Key"])
    s3.delete_bucket(Bucket=bucket)


def v2_client(endpoint, c, token, tables=False, **kw):
    cfg = oss_config(endpoint, **kw)
    cfg.credentials_provider = oss.credentials.StaticCredentialsProvider(c["ak"], c["sk"], token)
    return (oss_tables.Client if tables else oss.Client)(cfg)


def test_oss4_header_and_presigned_token(floe, sts_creds):
    c = sts_creds
    cl = v2_client(floe.endpoint, c, c["token"])
    cl.put_object(oss.PutObjectRequest(bucket=c["bucket"], key="a.txt", body=b"hello"))
    assert cl.get_object(oss.GetObjectRequest(bucket=c["bucket"], key="a.txt")).body.read() == b"hello"
    # a presigned OSS4 URL carries the token as x-oss-security-token in its query
    pre = cl.presign(oss.GetObjectRequest(bucket=c["bucket"], key="seed.txt"))
    assert "x-oss-security-token=" in pre.url
    r = requests.get(pre.url, headers=pre.signed_headers, timeout=30)
    assert r.status_code == 200 and r.content == b"seed", r.text
    # the role's policy still applies: another key prefix is fine, another bucket is not
    se = oss_error(cl.get_object, oss.GetObjectRequest(bucket=c["bucket"] + "-x", key="a.txt"))
    assert se.status_code in (403, 404), se
    # without the token, or with another one: refused, nothing stored
    for tok in (None, c["token"][:-4] + "AAAA"):
        bad = v2_client(floe.endpoint, c, tok)
        se = oss_error(bad.put_object, oss.PutObjectRequest(bucket=c["bucket"], key="b.txt", body=b"x"))
        assert se.status_code in (400, 403), se
    se = oss_error(cl.get_object, oss.GetObjectRequest(bucket=c["bucket"], key="b.txt"))
    assert se.status_code == 404


def test_oss4_tables_token(floe, sts_creds):
    c = sts_creds
    ep = "http://127.0.0.1:%d" % floe.catalog_port
    t = v2_client(ep, c, c["token"], tables=True)
    got = t.get_table_bucket(tm.GetTableBucketRequest(table_bucket_arn=c["tb"]))
    assert got.arn == c["tb"]
    se = oss_error(v2_client(ep, c, None, tables=True).get_table_bucket,
                   tm.GetTableBucketRequest(table_bucket_arn=c["tb"]))
    assert se.status_code == 403, se


def test_v1_header_and_presigned_token(floe, sts_creds):
    c = sts_creds
    # oss2's StsAuth: V1 with x-oss-security-token (a signed x-oss-* header)
    b = oss2.Bucket(oss2.StsAuth(c["ak"], c["sk"], c["token"]), floe.endpoint, c["bucket"])
    b.put_object("v1.txt", b"v1 body")
    assert b.get_object("v1.txt").read() == b"v1 body"
    # a presigned V1 URL: security-token in the query (a signed sub-resource)
    url = b.sign_url("GET", "seed.txt", 300)
    assert "security-token=" in url
    r = requests.get(url, timeout=30)
    assert r.status_code == 200 and r.content == b"seed", r.text
    # alibabacloud-oss-v2 signing V1 sends the token as a security-token header
    cl = v2_client(floe.endpoint, c, c["token"], signature_version="v1")
    assert cl.get_object(oss.GetObjectRequest(bucket=c["bucket"], key="v1.txt")).body.read() == b"v1 body"
    # the key without its token
    nb = oss2.Bucket(oss2.Auth(c["ak"], c["sk"]), floe.endpoint, c["bucket"])
    with pytest.raises(oss2.exceptions.OssError) as ei:
        nb.put_object("v1-bad.txt", b"x")
    assert ei.value.status in (400, 403)
    with pytest.raises(oss2.exceptions.NoSuchKey):
        b.get_object("v1-bad.txt")
