"""More protocol corners: V1 listing, upload listing pagination, size limits,
presigned URLs with extra parameters, and races between an in-flight upload
and abort / bucket deletion."""
import os
import socket
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

import s3helpers as h
from conftest import ACCESS_KEY, SECRET_KEY, make_client, unique_bucket_name

MiB = 1024 * 1024
GiB = 1024 * MiB


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_head_bucket_region_header(s3, bucket):
    r = s3.head_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-bucket-region") == "us-east-1"


def test_list_objects_v1_marker_paging(s3, bucket):
    keys = ["k%02d" % i for i in range(7)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    seen, marker = [], ""
    for _ in range(10):
        r = s3.list_objects(Bucket=bucket, MaxKeys=3, Marker=marker)
        page = [o["Key"] for o in r.get("Contents", [])]
        seen += page
        if not r["IsTruncated"]:
            break
        marker = r.get("NextMarker") or page[-1]
    assert seen == keys


def test_list_multipart_uploads_paging(s3, bucket):
    ids = {}
    for k in ["u1", "u2", "u3"]:
        ids[k] = s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"]
    second = s3.create_multipart_upload(Bucket=bucket, Key="u2")["UploadId"]
    r = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=2)
    assert r["IsTruncated"] is True
    first_page = [(u["Key"], u["UploadId"]) for u in r["Uploads"]]
    assert len(first_page) == 2
    r2 = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=10, KeyMarker=r["NextKeyMarker"],
                                   UploadIdMarker=r["NextUploadIdMarker"])
    rest = [(u["Key"], u["UploadId"]) for u in r2.get("Uploads", [])]
    allu = first_page + rest
    assert sorted(allu) == sorted([("u1", ids["u1"]), ("u2", ids["u2"]), ("u2", second), ("u3", ids["u3"])])
    assert len(allu) == 4
    assert [k for k, _ in allu] == ["u1", "u2", "u2", "u3"]


def test_put_too_large_rejected_before_body(floe, bucket):
    path = h.key_path(bucket, "huge")
    headers = {"Host": "127.0.0.1:%d" % floe.s3_port, "Content-Length": str(5 * GiB + 1),
               "Expect": "100-continue"}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", floe.s3_port), timeout=10)
    try:
        s.sendall(("PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        data = s.recv(65536)
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 400"), data[:300]
    assert b"EntityTooLarge" in data


def test_presigned_get_with_response_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="dl.bin", Body=b"download me", ContentType="application/octet-stream")
    url = s3.generate_presigned_url("get_object", Params={
        "Bucket": bucket, "Key": "dl.bin", "ResponseContentDisposition": 'attachment; filename="x y.bin"',
        "ResponseContentType": "text/plain"}, ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200, r.text
    assert r.content == b"download me"
    assert r.headers.get("Content-Disposition") == 'attachment; filename="x y.bin"'
    assert r.headers.get("Content-Type") == "text/plain"


def test_presigned_put_with_signed_content_type(s3, bucket):
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "typed", "ContentType": "text/csv",
                                                          "Metadata": {"src": "presign"}}, ExpiresIn=300)
    hdrs = {"Content-Type": "text/csv", "x-amz-meta-src": "presign"}
    r = requests.put(url, data=b"a,b\n1,2\n", headers=hdrs, timeout=10)
    assert r.status_code == 200, r.text
    hd = s3.head_object(Bucket=bucket, Key="typed")
    assert hd["ContentType"] == "text/csv"
    assert hd["Metadata"] == {"src": "presign"}
    # a different content type than the signed one is refused
    r = requests.put(url, data=b"x", headers={"Content-Type": "image/png", "x-amz-meta-src": "presign"}, timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "SignatureDoesNotMatch", r.text


def _slow_upload(port, path, query, total, progress_evt, done, result, rate_bytes=MiB):
    headers = {"Host": "127.0.0.1:%d" % port, "Content-Length": str(total)}
    h.sign("PUT", path, query, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    target = path + ("?" + "&".join("%s=%s" % (k, h.uri_encode(v, False)) for k, v in query) if query else "")
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(("PUT %s HTTP/1.1\r\n" % target + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        block = h.pattern_block("slow", rate_bytes)
        sent = 0
        while sent < total:
            n = min(len(block), total - sent)
            s.sendall(block[:n])
            sent += n
            if sent >= total // 2:
                progress_evt.set()
                done.wait(10)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        # read the body as well, if any
        result.append(data)
    except OSError as e:
        result.append(repr(e).encode())
    finally:
        s.close()


def test_abort_during_upload_part(floe_factory):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("abortrace")
    c.create_bucket(Bucket=b)
    base = h.dir_usage(srv.data_dir)[0]
    uid = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    half, go, result = threading.Event(), threading.Event(), []
    t = threading.Thread(target=_slow_upload, args=(srv.s3_port, h.key_path(b, "mp"),
                                                    [("partNumber", "1"), ("uploadId", uid)], 16 * MiB,
                                                    half, go, result))
    t.start()
    assert half.wait(20)
    c.abort_multipart_upload(Bucket=b, Key="mp", UploadId=uid)
    go.set()
    t.join(30)
    assert result, "upload thread got no answer"
    assert not result[0].startswith(b"HTTP/1.1 200"), result[0][:300]
    assert c.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        c.list_parts(Bucket=b, Key="mp", UploadId=uid)
    assert err(e) == ("NoSuchUpload", 404)
    end = time.time() + 10
    while time.time() < end and h.dir_usage(srv.data_dir)[0] != base:
        time.sleep(0.1)
    assert h.dir_usage(srv.data_dir)[0] == base, "part of an aborted upload left behind"
    c.delete_bucket(Bucket=b)


def test_delete_bucket_during_put(floe_factory):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("bucketrace")
    c.create_bucket(Bucket=b)
    base = h.dir_usage(srv.data_dir)[0]
    half, go, result = threading.Event(), threading.Event(), []
    t = threading.Thread(target=_slow_upload, args=(srv.s3_port, h.key_path(b, "obj"), None, 16 * MiB,
                                                    half, go, result))
    t.start()
    assert half.wait(20)
    deleted = True
    try:
        c.delete_bucket(Bucket=b)
    except ClientError as e:
        deleted = False
        assert err(e) == ("BucketNotEmpty", 409) or e.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    go.set()
    t.join(30)
    assert result
    if deleted:
        # the bucket is gone: the PUT must fail and leave nothing
        assert not result[0].startswith(b"HTTP/1.1 200"), result[0][:300]
        assert b not in [x["Name"] for x in c.list_buckets()["Buckets"]]
        c.create_bucket(Bucket=b)
        assert c.list_objects_v2(Bucket=b)["KeyCount"] == 0
        c.delete_bucket(Bucket=b)
        end = time.time() + 10
        while time.time() < end and h.dir_usage(srv.data_dir)[0] != base:
            time.sleep(0.1)
        assert h.dir_usage(srv.data_dir)[0] == base
    else:
        assert result[0].startswith(b"HTTP/1.1 200"), result[0][:300]
        assert c.head_object(Bucket=b, Key="obj")["ContentLength"] == 16 * MiB


def test_concurrent_complete_same_upload(s3, bucket, floe):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cc")["UploadId"]
    p1 = os.urandom(5 * MiB)
    e1 = s3.upload_part(Bucket=bucket, Key="cc", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="cc", UploadId=uid, PartNumber=2, Body=b"z")["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}
    clients = [make_client(floe.endpoint) for _ in range(4)]
    res = [None] * 4
    barrier = threading.Barrier(4)

    def go(i):
        barrier.wait()
        try:
            r = clients[i].complete_multipart_upload(Bucket=bucket, Key="cc", UploadId=uid, MultipartUpload=parts)
            res[i] = ("ok", r["ETag"])
        except ClientError as e:
            res[i] = (e.response["Error"]["Code"], None)

    ts = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    oks = [r for r in res if r[0] == "ok"]
    assert oks, res
    assert all(r[0] in ("ok", "NoSuchUpload") for r in res), res
    assert s3.get_object(Bucket=bucket, Key="cc")["Body"].read() == p1 + b"z"
    assert s3.head_object(Bucket=bucket, Key="cc")["ETag"] == '"%s"' % h.multipart_etag([p1, b"z"])


def test_last_modified_consistent_between_head_and_list(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t", Body=b"x")
    head = s3.head_object(Bucket=bucket, Key="t")["LastModified"]
    lst = s3.list_objects_v2(Bucket=bucket)["Contents"][0]["LastModified"]
    assert head == lst.replace(microsecond=0), (head, lst)
    g = s3.get_object(Bucket=bucket, Key="t", IfUnmodifiedSince=lst)
    assert g["Body"].read() == b"x"


def test_create_multipart_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket="no-such-bucket-mpu-x", Key="k")
    assert err(e) == ("NoSuchBucket", 404)


@pytest.mark.parametrize("kw", [
    {"Tagging": "team=data&env=test"},
    {"ServerSideEncryption": "AES256"},
    {"ACL": "bucket-owner-full-control"},
    {"StorageClass": "STANDARD"},
    {"Expires": __import__("datetime").datetime(2030, 1, 1)},
], ids=["tagging", "sse-s3", "acl", "storage-class", "expires"])
def test_common_optional_put_headers_accepted(s3, bucket, kw):
    """Writers (Iceberg S3FileIO, Hadoop s3a, Spark) commonly send these; an
    S3-compatible store accepts them even if it ignores them."""
    r = s3.put_object(Bucket=bucket, Key="opt", Body=b"opt", **kw)
    assert r["ETag"] == '"%s"' % h.md5_hex(b"opt")
    assert s3.get_object(Bucket=bucket, Key="opt")["Body"].read() == b"opt"
    uid = s3.create_multipart_upload(Bucket=bucket, Key="optmp", **kw)["UploadId"]
    s3.abort_multipart_upload(Bucket=bucket, Key="optmp", UploadId=uid)


def test_metadata_near_limit_accepted(s3, bucket):
    # S3 counts UTF-8 bytes of keys and values: 1 + 2000 + 3 + 40 = 2044 <= 2048
    md = {"k": "v" * 2000, "abc": "w" * 40}
    s3.put_object(Bucket=bucket, Key="m", Body=b"x", Metadata=md)
    assert s3.head_object(Bucket=bucket, Key="m")["Metadata"] == md
