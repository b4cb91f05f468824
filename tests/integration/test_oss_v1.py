"""OSS's V1 signature ("Authorization: OSS akid:signature", HMAC-SHA1, and the
presigned OSSAccessKeyId/Expires/Signature query) on the data plane, driven by
the older OSS Python SDK oss2, which signs V1 by default: buckets, put/get
(ranges)/head with x-oss-meta-* and CRC-64 (oss2 checks it on every upload and
download), copy, ListObjectsV2 pages (continuation-token is a signed
sub-resource), DeleteMultipleObjects (Content-MD5), multipart (uploadId and
partNumber signed), presigned GET and PUT; and what is refused with OSS's
error codes, storing nothing: a wrong secret, an unknown key, a stale Date, a
tampered signed header, an expired or altered presigned URL, a body that does
not match its signed Content-MD5, an unsigned x-amz-* header, a bad signature
refused from the head before the body is read, V1 on the catalog port."""
import base64
import email.utils
import hashlib
import time

import pytest
import requests

from conftest import ACCESS_KEY, SECRET_KEY, unique_bucket_name
from test_hardening_auth import BIG, head_only

oss2 = pytest.importorskip("oss2")


def auth(secret=SECRET_KEY, akid=ACCESS_KEY):
    return oss2.Auth(akid, secret)


@pytest.fixture
def ob(floe):
    b = oss2.Bucket(auth(), floe.endpoint, unique_bucket_name("v1"))
    b.create_bucket()
    return b


def md5b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def test_objects_roundtrip(ob, s3):
    body = bytes(range(256)) * 97
    r = ob.put_object("d/x y+z.bin", body, headers={"Content-Type": "application/x-test",
                                                    "x-oss-meta-owner": "ana"})
    assert r.status == 200 and r.crc is not None      # oss2 compared the server's CRC-64 with its own
    h = ob.head_object("d/x y+z.bin")
    assert h.content_length == len(body) and h.headers["x-oss-meta-owner"] == "ana"
    assert h.content_type == "application/x-test"
    assert ob.get_object("d/x y+z.bin").read() == body
    assert ob.get_object("d/x y+z.bin", byte_range=(10, 19)).read() == body[10:20]
    ob.copy_object(ob.bucket_name, "d/x y+z.bin", "d/copy")
    assert ob.get_object("d/copy").read() == body
    # the same objects through boto3, in S3's shapes
    assert s3.head_object(Bucket=ob.bucket_name, Key="d/x y+z.bin")["Metadata"] == {"owner": "ana"}


def test_list_pages_and_batch_delete(ob):
    keys = ["p/%02d" % i for i in range(7)]
    for k in keys:
        ob.put_object(k, b"x")
    got, token = [], ""
    while True:
        r = ob.list_objects_v2(prefix="p/", max_keys=3, continuation_token=token)
        got += [o.key for o in r.object_list]
        if not r.is_truncated:
            break
        token = r.next_continuation_token
    assert got == keys
    r = ob.batch_delete_objects(keys[:5])
    assert sorted(r.deleted_keys) == keys[:5]
    assert [o.key for o in oss2.ObjectIteratorV2(ob, prefix="p/")] == keys[5:]


def test_multipart(ob):
    key, parts = "big/obj", [b"a" * (5 << 20), b"b" * 1234]
    up = ob.init_multipart_upload(key).upload_id
    infos = []
    for n, data in enumerate(parts, 1):
        infos.append(oss2.models.PartInfo(n, ob.upload_part(key, up, n, data).etag))
    assert [p.part_number for p in ob.list_parts(key, up).parts] == [1, 2]
    ob.complete_multipart_upload(key, up, infos)
    assert ob.get_object(key).read() == b"".join(parts)
    up2 = ob.init_multipart_upload("big/gone").upload_id
    ob.abort_multipart_upload("big/gone", up2)
    with pytest.raises(oss2.exceptions.NoSuchUpload):
        ob.list_parts("big/gone", up2)


def test_presigned_urls(ob):
    ob.put_object("s/q.txt", b"presigned body")
    url = ob.sign_url("GET", "s/q.txt", 300)
    assert "OSSAccessKeyId=" in url and "Signature=" in url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"presigned body"
    # another key, another method under the same signature
    assert "/s%2Fq.txt?" in url
    assert requests.get(url.replace("/s%2Fq.txt?", "/s%2Fr.txt?"), timeout=10).status_code == 403
    assert requests.delete(url, timeout=10).status_code == 403
    # expired
    r = requests.get(ob.sign_url("GET", "s/q.txt", -5), timeout=10)
    assert r.status_code == 403 and b"<Code>AccessDenied</Code>" in r.content and b"expired" in r.content
    # a presigned PUT, Content-Type signed
    put = ob.sign_url("PUT", "s/up.txt", 300, headers={"Content-Type": "text/plain"})
    r = requests.put(put, data=b"via v1 presigned put", headers={"Content-Type": "text/plain"}, timeout=10)
    assert r.status_code == 200, r.content
    assert ob.get_object("s/up.txt").read() == b"via v1 presigned put"
    r = requests.put(put, data=b"other", headers={"Content-Type": "text/html"}, timeout=10)
    assert r.status_code == 403 and b"SignatureDoesNotMatch" in r.content
    assert ob.get_object("s/up.txt").read() == b"via v1 presigned put"


def test_refusals_with_oss_codes(ob, floe):
    bad = oss2.Bucket(auth(secret="not-the-secret"), floe.endpoint, ob.bucket_name)
    with pytest.raises(oss2.exceptions.SignatureDoesNotMatch) as ei:
        bad.put_object("r/k", b"x")
    assert ei.value.status == 403 and ei.value.request_id
    unknown = oss2.Bucket(auth(akid="LTAINOSUCHKEY0000000"), floe.endpoint, ob.bucket_name)
    with pytest.raises(oss2.exceptions.ServerError) as ei:
        unknown.get_object("r/k")
    assert ei.value.status == 403 and ei.value.code == "InvalidAccessKeyId"
    # a body that does not match its signed Content-MD5
    with pytest.raises(oss2.exceptions.ServerError) as ei:
        ob.put_object("r/k", b"tampered", headers={"Content-MD5": md5b64(b"original")})
    assert ei.value.status == 400 and ei.value.code in ("InvalidDigest", "BadDigest")
    assert not ob.object_exists("r/k")


def raw_v1(floe, method, path, bucket, key, headers=None, date=None, send_headers=None, body=b""):
    """Signs with oss2's V1 signer (Date fixed by the caller if given), then
    sends with requests; send_headers change the request after signing."""
    url = floe.endpoint + path
    req = oss2.http.Request(method, url, data=body, headers=dict(headers or {}))
    if date is not None:
        orig = oss2.auth.utils.http_date
        oss2.auth.utils.http_date = lambda timeval=None: email.utils.formatdate(date, usegmt=True)
    try:
        auth()._sign_request(req, bucket, key)
    finally:
        if date is not None:
            oss2.auth.utils.http_date = orig
    h = dict(req.headers)
    h.update(send_headers or {})
    return requests.request(method, url, headers=h, data=body, timeout=10)


def test_tampering_and_time(ob, floe):
    b = ob.bucket_name
    ok = raw_v1(floe, "PUT", "/%s/t/k" % b, b, "t/k", headers={"x-oss-meta-a": "1"}, body=b"v")
    assert ok.status_code == 200, ok.content
    for send in ({"x-oss-meta-a": "2"}, {"x-oss-meta-b": "1"}, {"Content-Type": "text/html"}):
        r = raw_v1(floe, "PUT", "/%s/t/k2" % b, b, "t/k2", headers={"x-oss-meta-a": "1"}, body=b"v",
                   send_headers=send)
        assert r.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in r.content, send
        assert "x-oss-request-id" in r.headers and b"<EC>" in r.content and b"xmlns" not in r.content
    # an x-amz-* header V1 does not sign (the data plane would act on it)
    r = raw_v1(floe, "PUT", "/%s/t/k2" % b, b, "t/k2", body=b"v",
               send_headers={"x-amz-meta-sneaky": "1"})
    assert r.status_code == 403 and b"HeadersNotSigned" in r.content
    # a stale Date
    r = raw_v1(floe, "GET", "/%s/t/k" % b, b, "t/k", date=time.time() - 20 * 60)
    assert r.status_code == 403 and b"<Code>RequestTimeTooSkewed</Code>" in r.content
    assert not ob.object_exists("t/k2")


def test_bad_signature_refused_before_body(ob, floe):
    path = "/%s/h/big" % ob.bucket_name
    date = email.utils.formatdate(time.time(), usegmt=True)
    head = ("PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nDate: %s\r\nAuthorization: OSS %s:%s\r\n"
            "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n"
            % (path, floe.s3_port, date, ACCESS_KEY, base64.b64encode(b"\0" * 20).decode(), BIG)).encode()
    t0 = time.time()
    got = head_only(floe.s3_port, head)
    assert not got.startswith(b"HTTP/1.1 100"), got[:200]
    assert got.startswith(b"HTTP/1.1 403"), got[:300]
    assert time.time() - t0 < 4
    assert not ob.object_exists("h/big")


def test_catalog_port_refuses_v1_as_oss(floe):
    """OSS Tables speaks OSS4 only: a V1-signed request to the catalog port is
    refused, answered in OSS Tables' shape (x-oss-error-type, x-oss-request-id)."""
    url = "http://127.0.0.1:%d/buckets" % floe.catalog_port
    req = oss2.http.Request("GET", url, headers={})
    auth()._sign_request(req, "", "buckets")
    r = requests.get(url, headers=dict(req.headers), timeout=10)
    assert r.status_code in (400, 403), r.content
    assert "x-oss-error-type" in r.headers and "x-oss-request-id" in r.headers
