"""Bucket operations through boto3, plus server lifecycle checks."""
import os
import signal
import stat
import re

import pytest
import requests
from botocore.exceptions import ClientError

import conftest
from conftest import make_client, unique_bucket_name


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_health(floe):
    r = requests.get(floe.endpoint + "/health", timeout=5)
    assert r.status_code == 200


def test_list_buckets_contains_created(s3, bucket):
    r = s3.list_buckets()
    names = [b["Name"] for b in r["Buckets"]]
    assert bucket in names
    created = [b for b in r["Buckets"] if b["Name"] == bucket][0]
    assert created["CreationDate"] is not None
    assert r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-request-id")


def test_list_buckets_sorted(s3):
    names = [unique_bucket_name("zz-sort"), unique_bucket_name("aa-sort")]
    for n in names:
        s3.create_bucket(Bucket=n)
    try:
        got = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        assert got == sorted(got)
        assert set(names) <= set(got)
    finally:
        for n in names:
            s3.delete_bucket(Bucket=n)


def test_create_bucket_twice_is_already_owned(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=bucket)
    assert err(e) == ("BucketAlreadyOwnedByYou", 409)


@pytest.mark.parametrize("name", ["ab", "Upper-Case", "bad_underscore", "-leading-dash", "trailing-dash-",
                                  "a" * 64, "192.168.1.1", "two..dots"])
def test_create_bucket_invalid_name(s3, name, raw):
    # boto3 validates some names client-side; send the request raw so the
    # server's answer is what is checked.
    r = raw.request("PUT", "/" + name)
    assert r.status == 400, r
    assert r.error_code() == "InvalidBucketName", r
    h = s3.list_buckets()
    assert name not in [b["Name"] for b in h["Buckets"]]


def test_create_bucket_invalid_name_boto3(s3):
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket="Invalid-Upper")
    assert err(e) == ("InvalidBucketName", 400)


def test_head_bucket(s3, bucket):
    r = s3.head_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_head_bucket_missing(s3):
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=unique_bucket_name("missing"))
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_delete_bucket(s3, bucket_name):
    s3.create_bucket(Bucket=bucket_name)
    r = s3.delete_bucket(Bucket=bucket_name)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket_name)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert bucket_name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_delete_bucket_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert err(e) == ("BucketNotEmpty", 409)
    s3.head_bucket(Bucket=bucket)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"


def test_delete_bucket_with_pending_upload_not_empty(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="pending")
    try:
        with pytest.raises(ClientError) as e:
            s3.delete_bucket(Bucket=bucket)
        assert err(e) == ("BucketNotEmpty", 409)
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="pending", UploadId=up["UploadId"])


def test_delete_bucket_missing(s3):
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=unique_bucket_name("missing"))
    assert err(e) == ("NoSuchBucket", 404)


def test_object_ops_on_missing_bucket(s3):
    name = unique_bucket_name("missing")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=name, Key="k", Body=b"x")
    assert err(e) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=name)
    assert err(e) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=name, Key="k")
    assert err(e) == ("NoSuchBucket", 404)


def test_get_bucket_location(s3, bucket):
    r = s3.get_bucket_location(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r.get("LocationConstraint") in (None, "", "us-east-1")


def test_any_region_accepted(floe, bucket):
    c = make_client(floe.endpoint, region="eu-west-3")
    c.put_object(Bucket=bucket, Key="region", Body=b"r")
    assert c.get_object(Bucket=bucket, Key="region")["Body"].read() == b"r"


# ---------------------------------------------------------------- lifecycle

def test_sigterm_exits_zero(floe_factory):
    srv = floe_factory()
    assert srv.alive()
    srv.proc.send_signal(signal.SIGTERM)
    rc = srv.proc.wait(15)
    srv._mark_stopped()
    assert rc == 0


def test_data_survives_restart(floe_factory, tmp_path):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("persist")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="a/b c", Body=b"hello", Metadata={"k": "v"}, ContentType="text/x-test")
    part = os.urandom(5 * 1024 * 1024)
    up = c.create_multipart_upload(Bucket=b, Key="mp")
    e1 = c.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=part)["ETag"]
    e2 = c.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=2, Body=b"tail")["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    pending = c.create_multipart_upload(Bucket=b, Key="pending")["UploadId"]
    assert srv.stop() == 0
    srv.start()
    c = make_client(srv.endpoint)
    o = c.get_object(Bucket=b, Key="a/b c")
    assert o["Body"].read() == b"hello"
    assert o["Metadata"] == {"k": "v"}
    assert o["ContentType"] == "text/x-test"
    assert c.get_object(Bucket=b, Key="mp")["Body"].read() == part + b"tail"
    ups = [u["UploadId"] for u in c.list_multipart_uploads(Bucket=b).get("Uploads", [])]
    assert pending in ups


def test_insecure_no_auth(floe_factory):
    srv = floe_factory(extra_args=["--insecure-no-auth"])
    b = unique_bucket_name("noauth")
    r = requests.put("%s/%s" % (srv.endpoint, b), timeout=10)
    assert r.status_code == 200, r.text
    r = requests.put("%s/%s/obj" % (srv.endpoint, b), data=b"payload", timeout=10)
    assert r.status_code == 200, r.text
    r = requests.get("%s/%s/obj" % (srv.endpoint, b), timeout=10)
    assert r.status_code == 200 and r.content == b"payload"


def test_generated_root_key(floe_factory, tmp_path):
    """Without FLOE_ROOT_* env the key pair is generated, stored 0600 in the
    data dir, printed on start, and the same pair is used after a restart."""
    data = tmp_path / "gen-keys"
    data.mkdir()
    srv = floe_factory(data_dir=str(data), env_keys=False)
    log = srv.log_text()
    # Candidate files: regular files in the data dir with mode 0600 that are not the index.
    cands = []
    for dp, _dn, fns in os.walk(data):
        for fn in fns:
            p = os.path.join(dp, fn)
            if stat.S_IMODE(os.stat(p).st_mode) == 0o600 and os.path.getsize(p) < 4096:
                try:
                    cands.append((p, open(p, encoding="utf-8").read()))
                except UnicodeDecodeError:
                    pass
    assert cands, "no 0600 key file in %s: %s" % (data, os.listdir(data))
    tokens = set()
    for _p, txt in cands:
        tokens.update(re.findall(r"[A-Za-z0-9/+]{16,128}", txt))
    working = None
    for ak in tokens:
        for sk in tokens:
            if ak == sk or ak not in log:
                continue
            try:
                make_client(srv.endpoint, access_key=ak, secret=sk).list_buckets()
                working = (ak, sk)
                break
            except ClientError:
                continue
        if working:
            break
    assert working, "no (printed access key, secret) pair from the key file authenticates; log:\n" + log[-2000:]
    # the fixed test keys must not work on this server
    with pytest.raises(ClientError):
        make_client(srv.endpoint).list_buckets()
    assert srv.stop() == 0
    srv.start()
    make_client(srv.endpoint, access_key=working[0], secret=working[1]).list_buckets()
