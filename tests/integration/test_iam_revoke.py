"""Expired and revoked credentials on every API: the S3 data plane, the S3
Tables API, the Iceberg REST catalog, IAM and STS.

- an assumed role's session past its expiry, a user's key disabled
  (UpdateAccessKey Inactive) and deleted: refused by all five, and a disabled
  key works again once enabled;
- a client that keeps its connection open: a key disabled through IAM is
  refused on the very next request of that connection (the node drops its
  authorisation cache on every identity write); one disabled behind the node's
  back (another node sharing the catalog, here the catalog store itself) is
  refused within FL_IAM_CACHE_TTL_MS, on the same connection;
- an IAM change sent as GET (the query API takes its Action from the query
  string) drops the node's cache too: the change holds on the next request."""
import http.client
import json
import os
import sqlite3
import time
import uuid
from urllib.parse import quote, urlencode

import boto3
import pytest
import requests
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

import pgserver
from conftest import ACCESS_KEY, REGION, SECRET_KEY
from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, iam_client, policy, s3_client
from rest_fixtures import s3tables_client
from tables_fixtures import make_s3tables_client

TTL_S = 1.0     # FL_IAM_CACHE_TTL_MS (src/base/limits.h)
SLACK_S = 1.0   # a request's own time on a loaded 2-core machine under ASan
EMPTY_SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
GRANTS = ["s3tables:*", "s3:*", "iam:ListUsers", "iam:GetUser"]


@pytest.fixture(scope="module")
def things(floe):
    """A table bucket and a plain bucket holding one object, made by root."""
    arn = s3tables_client(floe).create_table_bucket(name="rv-%s" % uuid.uuid4().hex[:10])["arn"]
    bucket = "rv-%s" % uuid.uuid4().hex[:10]
    root = s3_client(floe, ACCESS_KEY, SECRET_KEY)
    root.create_bucket(Bucket=bucket)
    root.put_object(Bucket=bucket, Key="k", Body=b"x" * 4096)
    return {"arn": arn, "bucket": bucket}


def signed(floe, method, url, ak, sk, tok=None, service="s3tables"):
    headers = {"x-amz-content-sha256": EMPTY_SHA}
    if tok:
        headers["x-amz-security-token"] = tok
    req = AWSRequest(method=method, url=url, headers=headers)
    SigV4Auth(Credentials(ak, sk, tok), service, REGION).add_auth(req)
    return requests.request(method, url, headers=dict(req.headers.items()), timeout=30)


def every_api(floe, things, ak, sk, tok=None):
    """Status of one call on each API, signed with ak/sk[/tok]."""
    conf = Config(retries={"max_attempts": 1, "mode": "standard"})

    def status(fn, **kw):
        try:
            fn(**kw)
            return 200
        except ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"]
    cat = "http://127.0.0.1:%d" % floe.catalog_port
    s3t = boto3.session.Session().client("s3tables", endpoint_url=cat, region_name=REGION, aws_access_key_id=ak,
                                         aws_secret_access_key=sk, aws_session_token=tok, config=conf)
    rest = cat + "/iceberg/v1/config?warehouse=" + quote(things["arn"], safe="")
    return {
        "s3": status(s3_client(floe, ak, sk, tok).get_object, Bucket=things["bucket"], Key="k"),
        "s3tables": status(s3t.get_table_bucket, tableBucketARN=things["arn"]),
        "rest": signed(floe, "GET", rest, ak, sk, tok).status_code,
        "iam": status(iam_client(floe, ak, sk, token=tok).list_users),
        "sts": status(iam_client(floe, ak, sk, svc="sts", token=tok).get_caller_identity),
    }


def refused(st):
    return {k: v for k, v in st.items() if v not in (400, 403)}


def _set_key(floe, akid, column, value):
    """Changes a key row in the catalog store behind the node's back, as
    another node sharing the catalog would."""
    if pgserver.wanted():
        pgserver.psql("UPDATE iam_keys SET %s = '%s' WHERE akid = '%s'" % (column, value, akid),
                      pgserver.database_for(floe.data_dir))
        return
    db = sqlite3.connect(os.path.join(floe.data_dir, "catalog.db"), timeout=10)
    db.execute("UPDATE iam_keys SET %s = ? WHERE akid = ?" % column, (value, akid))
    db.commit()
    db.close()


def test_expired_session_refused_on_every_api(floe, things, root_iam, new_user):
    u = new_user()
    u.put(["sts:AssumeRole"])
    role = "rv-" + uuid.uuid4().hex[:8]
    root_iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": u.arn},
                                                 "Action": "sts:AssumeRole"}]}))
    root_iam.put_role_policy(RoleName=role, PolicyName="p", PolicyDocument=policy(GRANTS))
    sts = iam_client(floe, u.ak, u.sk, svc="sts")
    cr = sts.assume_role(RoleArn="arn:aws:iam::%s:role/%s" % (ACCOUNT, role), RoleSessionName="rv")["Credentials"]
    ak, sk, tok = cr["AccessKeyId"], cr["SecretAccessKey"], cr["SessionToken"]
    assert set(every_api(floe, things, ak, sk, tok).values()) == {200}
    # a forged token with the session's key: refused everywhere
    assert not refused(every_api(floe, things, ak, sk, tok[:-4] + "AAAA"))
    _set_key(floe, ak, "expires_ms", int(time.time() * 1000) - 1000)
    time.sleep(TTL_S + 0.2)
    st = every_api(floe, things, ak, sk, tok)
    assert not refused(st), st
    # each API says why, with AWS's code (clients refresh their credentials on it)
    for fn, kw, code in [
            (s3_client(floe, ak, sk, tok).get_object, {"Bucket": things["bucket"], "Key": "k"}, "ExpiredToken"),
            (iam_client(floe, ak, sk, svc="s3tables", token=tok).get_table_bucket,
             {"tableBucketARN": things["arn"]}, "ExpiredTokenException"),
            (iam_client(floe, ak, sk, token=tok).list_users, {}, "ExpiredToken"),
            (iam_client(floe, ak, sk, svc="sts", token=tok).get_caller_identity, {}, "ExpiredToken")]:
        with pytest.raises(ClientError) as ei:
            fn(**kw)
        assert ei.value.response["Error"]["Code"] == code, (fn, ei.value.response["Error"])
    r = signed(floe, "GET", "http://127.0.0.1:%d/iceberg/v1/config?warehouse=%s" % (
        floe.catalog_port, quote(things["arn"], safe="")), ak, sk, tok)
    assert r.status_code == 403 and "expired" in r.json()["error"]["message"], r.text
    root_iam.delete_role_policy(RoleName=role, PolicyName="p")
    root_iam.delete_role(RoleName=role)


def test_disabled_and_deleted_key_refused_on_every_api(floe, things, root_iam, new_user):
    u = new_user()
    u.put(GRANTS)
    assert set(every_api(floe, things, u.ak, u.sk).values()) == {200}
    root_iam.update_access_key(UserName=u.name, AccessKeyId=u.ak, Status="Inactive")
    st = every_api(floe, things, u.ak, u.sk)  # at once: the IAM write dropped the node's cache
    assert not refused(st), st
    root_iam.update_access_key(UserName=u.name, AccessKeyId=u.ak, Status="Active")
    assert set(every_api(floe, things, u.ak, u.sk).values()) == {200}
    root_iam.delete_access_key(UserName=u.name, AccessKeyId=u.ak)
    st = every_api(floe, things, u.ak, u.sk)
    assert not refused(st), st


class KeepAlive:
    """One HTTP/1.1 connection kept open, sending SigV4-signed GETs."""

    def __init__(self, port, path, ak, sk, service):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.conn.connect()
        self.sock = self.conn.sock
        self.port, self.path, self.ak, self.sk, self.service = port, path, ak, sk, service

    def get(self):
        url = "http://127.0.0.1:%d%s" % (self.port, self.path)
        req = AWSRequest(method="GET", url=url, headers={"x-amz-content-sha256": EMPTY_SHA})
        (S3SigV4Auth if self.service == "s3" else SigV4Auth)(
            Credentials(self.ak, self.sk), self.service, REGION).add_auth(req)
        # sent on the connection opened first (a refusal may then close it)
        assert self.conn.sock is self.sock, "the server closed the kept-alive connection"
        self.conn.request("GET", self.path, headers=dict(req.headers.items()))
        r = self.conn.getresponse()
        r.read()
        return r.status

    def close(self):
        self.conn.close()


def _open(floe, things, u):
    return [KeepAlive(floe.s3_port, "/%s/k" % things["bucket"], u.ak, u.sk, "s3"),
            KeepAlive(floe.catalog_port, "/iceberg/v1/config?warehouse=" + quote(things["arn"], safe=""),
                      u.ak, u.sk, "s3tables")]


def test_key_disabled_while_connection_open_through_iam(floe, things, root_iam, new_user):
    u = new_user()
    u.put(GRANTS)
    conns = _open(floe, things, u)
    for c in conns:
        assert [c.get() for _ in range(3)] == [200] * 3
    root_iam.update_access_key(UserName=u.name, AccessKeyId=u.ak, Status="Inactive")
    assert [c.get() for c in conns] == [403, 403]
    for c in conns:
        c.close()


def test_key_disabled_behind_the_nodes_back_refused_within_the_ttl(floe, things, new_user):
    u = new_user()
    u.put(GRANTS)
    conns = _open(floe, things, u)
    for c in conns:
        assert [c.get() for _ in range(3)] == [200] * 3  # cached now
    _set_key(floe, u.ak, "status", "Inactive")
    t0 = time.monotonic()
    took = []
    for c in conns:
        while True:
            st = c.get()
            if st != 200:
                assert st == 403
                took.append(time.monotonic() - t0)
                break
            assert time.monotonic() - t0 < TTL_S + SLACK_S, "still served %.2f s after the key was disabled" % (
                time.monotonic() - t0)
            time.sleep(0.02)
    print("refused after %s s (cache TTL %.1f s)" % (["%.3f" % t for t in took], TTL_S))
    assert max(took) <= TTL_S + SLACK_S
    for c in conns:
        c.close()


def _iam_get(floe, **params):
    """An IAM query API call sent as GET, signed by root."""
    url = "http://127.0.0.1:%d/?%s" % (floe.catalog_port, urlencode(dict(params, Version="2010-05-08"), quote_via=quote))
    return signed(floe, "GET", url, ACCESS_KEY, SECRET_KEY, service="iam")


def test_iam_change_sent_as_get_drops_the_cache(floe, things, new_user):
    """Regression (8f9ebfe): GET ?Action=UpdateAccessKey / DeleteUserPolicy /
    PutUserPolicy change identities too; the node's cache must not keep
    serving what they changed until its TTL."""
    u = new_user()
    u.put(["s3tables:GetTableBucket"])
    c = make_s3tables_client(floe.catalog_port, u.ak, u.sk)
    c.get_table_bucket(tableBucketARN=things["arn"])  # key and policy cached
    r = _iam_get(floe, Action="UpdateAccessKey", UserName=u.name, AccessKeyId=u.ak, Status="Inactive")
    assert r.status_code == 200, r.text
    with pytest.raises(ClientError) as ei:
        c.get_table_bucket(tableBucketARN=things["arn"])
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    r = _iam_get(floe, Action="UpdateAccessKey", UserName=u.name, AccessKeyId=u.ak, Status="Active")
    assert r.status_code == 200, r.text
    c.get_table_bucket(tableBucketARN=things["arn"])
    r = _iam_get(floe, Action="DeleteUserPolicy", UserName=u.name, PolicyName="p")
    assert r.status_code == 200, r.text
    with pytest.raises(ClientError) as ei:
        c.get_table_bucket(tableBucketARN=things["arn"])
    assert ei.value.response["Error"]["Code"] == "AccessDeniedException"
    r = _iam_get(floe, Action="PutUserPolicy", UserName=u.name, PolicyName="p",
                 PolicyDocument=policy(["s3tables:GetTableBucket"]))
    assert r.status_code == 200, r.text
    c.get_table_bucket(tableBucketARN=things["arn"])
