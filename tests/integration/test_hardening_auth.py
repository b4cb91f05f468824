"""Issue 9 hardening of authentication and names (items 2, 3, 4, 6): unsigned
x-amz-* headers (presigned URL turned into a copy), NUL bytes in bucket names,
the catalog port refusing before it reads a body, and credential scope (region)
plus ARNs of another account or region. Each refusal has a positive control
built the same way."""
import hashlib
import json
import socket
import time
import urllib.parse
from urllib.parse import quote

import boto3
import pytest
import requests
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

import s3helpers as h
from conftest import ACCESS_KEY, REGION, SECRET_KEY, make_client
from rest_fixtures import RestRaw, assert_rest_error, load_rest_catalog, unique
from tables_fixtures import *  # noqa: F401,F403 - fixtures
from tables_fixtures import client_error, make_s3tables_client, signed_request, unique_tb_name

OTHER_REGION = "eu-west-1"


def s3_err(resp):
    return resp.status_code, h.error_code(resp.content)


def xml_elem(body, name):
    import xml.etree.ElementTree as ET
    root = ET.fromstring(body)
    el = root.find(name)
    return el.text if el is not None else None


def raw_s3(floe, method, path, headers=None, body=b"", region=REGION, unsigned=None):
    """A raw request signed with botocore's S3SigV4Auth; headers in `unsigned`
    are added after signing."""
    url = floe.endpoint + path
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    req.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", region).add_auth(req)
    hdrs = dict(req.headers.items())
    hdrs.update(unsigned or {})
    # requests would re-quote the path; send it as given
    s = requests.Session()
    p = requests.Request(method, url, headers=hdrs, data=body).prepare()
    p.url = url
    return s.send(p, timeout=30)


# ------------------------------------------------------------ item 2

def test_presigned_put_with_unsigned_copy_source_refused(s3, bucket, floe):
    other = "src-" + bucket[:40]
    s3.create_bucket(Bucket=other)
    try:
        s3.put_object(Bucket=other, Key="secret", Body=b"top secret")
        url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "dst"}, ExpiresIn=300)
        r = requests.put(url, data=b"", headers={"x-amz-copy-source": "/%s/secret" % other}, timeout=10)
        assert s3_err(r) == (403, "AccessDenied"), r.text
        assert "not signed" in r.text and xml_elem(r.content, "HeadersNotSigned") == "x-amz-copy-source", r.text
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket=bucket, Key="dst")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        # unsigned metadata / storage class likewise
        r = requests.put(url, data=b"x", headers={"x-amz-storage-class": "STANDARD"}, timeout=10)
        assert s3_err(r) == (403, "AccessDenied"), r.text
        # control: the same URL without extra headers, and with the checksum
        # headers presigned clients may add, works
        r = requests.put(url, data=b"plain", timeout=10)
        assert r.status_code == 200, r.text
        r = requests.put(url, data=b"plain", headers={"x-amz-checksum-crc32": h.crc32_b64(b"plain")}, timeout=10)
        assert r.status_code == 200, r.text
        assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"plain"
    finally:
        for k in ("secret",):
            s3.delete_object(Bucket=other, Key=k)
        s3.delete_bucket(Bucket=other)


def test_presigned_upload_part_with_unsigned_copy_source_refused(s3, bucket):
    s3.put_object(Bucket=bucket, Key="victim", Body=b"v" * 1000)
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    try:
        url = s3.generate_presigned_url("upload_part", Params={"Bucket": bucket, "Key": "mp", "UploadId": up,
                                                               "PartNumber": 1}, ExpiresIn=300)
        r = requests.put(url, data=b"", headers={"x-amz-copy-source": "/%s/victim" % bucket}, timeout=10)
        assert s3_err(r) == (403, "AccessDenied"), r.text
        assert xml_elem(r.content, "HeadersNotSigned") == "x-amz-copy-source"
        assert s3.list_parts(Bucket=bucket, Key="mp", UploadId=up).get("Parts", []) == []
        r = requests.put(url, data=b"part one", timeout=10)  # control
        assert r.status_code == 200, r.text
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=up)


def test_header_signed_request_with_unsigned_amz_header_refused(floe, s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    r = raw_s3(floe, "PUT", "/%s/dst2" % bucket, unsigned={"x-amz-copy-source": "/%s/src" % bucket})
    assert s3_err(r) == (403, "AccessDenied"), r.text
    assert xml_elem(r.content, "HeadersNotSigned") == "x-amz-copy-source"
    r = raw_s3(floe, "PUT", "/%s/dst2" % bucket, body=b"m", unsigned={"x-amz-meta-a": "1", "X-Amz-Tagging": "a=b"})
    assert s3_err(r) == (403, "AccessDenied"), r.text
    assert set(xml_elem(r.content, "HeadersNotSigned").split(", ")) == {"x-amz-meta-a", "x-amz-tagging"}
    # control: signed, the copy happens
    r = raw_s3(floe, "PUT", "/%s/dst2" % bucket, headers={"x-amz-copy-source": "/%s/src" % bucket})
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket=bucket, Key="dst2")["Body"].read() == b"source"


# ------------------------------------------------------------ item 3

def test_nul_in_bucket_name_refused(floe, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"not yours")
    r = raw_s3(floe, "GET", "/%s%%00x/k" % bucket)
    assert s3_err(r) == (400, "InvalidBucketName"), r.text
    assert b"not yours" not in r.content
    name = "nul-" + bucket[:40]
    r = raw_s3(floe, "PUT", "/%s%%00suffix" % name)
    assert s3_err(r) == (400, "InvalidBucketName"), r.text
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=name)
    r = raw_s3(floe, "DELETE", "/%s%%00x/k" % bucket)
    assert s3_err(r) == (400, "InvalidBucketName"), r.text
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"not yours"
    # an encoded '/' would name a path inside another bucket (a table's warehouse) under
    # the rules of a bucket that does not exist
    s3.put_object(Bucket=bucket, Key="x/k", Body=b"inner")
    r = raw_s3(floe, "GET", "/%s%%2Fx/k" % bucket)
    assert s3_err(r) == (400, "InvalidBucketName"), r.text
    assert b"inner" not in r.content
    # keys, copy sources and query parameters with a NUL are refused, never cut short
    r = raw_s3(floe, "GET", "/%s/k%%00x" % bucket)
    assert r.status_code == 400, r.text
    r = raw_s3(floe, "PUT", "/%s/copy" % bucket, headers={"x-amz-copy-source": "/%s/k%%00x" % bucket})
    assert r.status_code == 400, r.text
    r = raw_s3(floe, "PUT", "/%s/copy" % bucket, headers={"x-amz-copy-source": "/%s%%00x/k" % bucket})
    assert r.status_code == 400, r.text
    r = raw_s3(floe, "GET", "/%s?list-type=2&prefix=k%%00zzz" % bucket)
    assert r.status_code == 400, r.text
    # control
    r = raw_s3(floe, "GET", "/%s/k" % bucket)
    assert r.status_code == 200 and r.content == b"not yours"


# ------------------------------------------------------------ item 6, S3 side

def test_wrong_region_refused_s3(floe, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    r = raw_s3(floe, "GET", "/%s/k" % bucket, region=OTHER_REGION)
    assert s3_err(r) == (400, "AuthorizationHeaderMalformed"), r.text
    assert xml_elem(r.content, "Message") == ("The authorization header is malformed; the region 'eu-west-1' "
                                              "is wrong; expecting 'us-east-1'"), r.text
    assert xml_elem(r.content, "Region") == REGION, r.text
    assert b"x" != r.content
    r = raw_s3(floe, "PUT", "/%s/k2" % bucket, body=b"y", region=OTHER_REGION)
    assert s3_err(r) == (400, "AuthorizationHeaderMalformed"), r.text
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k2")
    # boto3 signed for eu-west-1: refused, and (as against AWS) botocore's
    # region redirector reads <Region>, re-signs for us-east-1 and succeeds
    c = make_client(floe.endpoint, region=OTHER_REGION)
    seen = []
    c.meta.events.register("needs-retry.s3.GetObject",
                           lambda response=None, **kw: seen.append(response[1]["Error"]["Code"])
                           if response and response[1].get("Error") else None)
    assert c.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"
    assert seen and seen[0] == "AuthorizationHeaderMalformed", seen
    # presigned form
    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"}, ExpiresIn=300)
    assert "eu-west-1" in urllib.parse.unquote(url)
    r = requests.get(url, timeout=10)
    assert s3_err(r) == (400, "AuthorizationQueryParametersError"), r.text
    assert xml_elem(r.content, "Message") == ("Error parsing the X-Amz-Credential parameter; the region "
                                              "'eu-west-1' is wrong; expecting 'us-east-1'"), r.text
    assert xml_elem(r.content, "Region") == REGION
    # control
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"


# ------------------------------------------------------------ item 6, catalog side

def s3tables_in(floe, region):
    conf = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=60)
    return boto3.session.Session().client(
        "s3tables", endpoint_url="http://127.0.0.1:%d" % floe.catalog_port, region_name=region,
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, config=conf)


def test_wrong_region_refused_catalog(floe, s3t, tbucket):
    c = s3tables_in(floe, OTHER_REGION)
    code, status, msg = client_error(c.list_table_buckets)
    assert status == 403 and code == "InvalidSignatureException", (code, status, msg)
    assert "region" in msg
    code, status, _ = client_error(c.get_table_bucket, tableBucketARN=tbucket)
    assert status == 403
    # Iceberg REST, signed for another region
    url = "http://127.0.0.1:%d/iceberg/v1/config?warehouse=%s" % (floe.catalog_port, quote(tbucket, safe=""))
    req = AWSRequest(method="GET", url=url, headers={})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", OTHER_REGION).add_auth(req)
    r = requests.get(url, headers=dict(req.headers.items()), timeout=10)
    assert_rest_error(r, 403)
    # control
    assert s3t.get_table_bucket(tableBucketARN=tbucket)["arn"] == tbucket
    req = AWSRequest(method="GET", url=url, headers={})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    assert requests.get(url, headers=dict(req.headers.items()), timeout=10).status_code == 200


def foreign(arn, account=None, region=None):
    """The same ARN with another account and/or region."""
    head, rest = (arn.split(":s3tables:", 1) if ":s3tables:" in arn else arn.split(":osstables:", 1))
    sep = ":s3tables:" if ":s3tables:" in arn else ":osstables:"
    reg, acct, tail = rest.split(":", 2)
    return head + sep + ":".join([region or reg, account or acct, tail])


def test_arn_of_other_account_or_region_does_not_resolve(floe, s3t, tbucket, tns):
    other_acct = foreign(tbucket, account="999999999999")
    other_region = foreign(tbucket, region=OTHER_REGION)
    assert other_acct != tbucket and other_region != tbucket
    for fn, kw in ((s3t.get_table_bucket, {}), (s3t.get_namespace, {"namespace": tns}),
                   (s3t.list_namespaces, {})):
        code, status, _ = client_error(fn, tableBucketARN=other_acct, **kw)
        assert (code, status) == ("AccessDeniedException", 403), (fn, code, status)
        code, status, _ = client_error(fn, tableBucketARN=other_region, **kw)
        assert (code, status) == ("NotFoundException", 404), (fn, code, status)
        assert fn(tableBucketARN=tbucket, **kw)  # control
    # other ARN forms of this account still resolve
    alt = tbucket.replace("arn:aws:s3tables:", "acs:osstables:") if tbucket.startswith("arn:") \
        else tbucket.replace("acs:osstables:", "arn:aws:s3tables:")
    assert s3t.get_table_bucket(tableBucketARN=alt)["name"]
    # Iceberg REST: warehouse and prefix
    for arn, status in ((other_acct, 403), (other_region, 404)):
        r = signed_request(floe.catalog_port, "GET", "/iceberg/v1/config",
                           query="warehouse=" + quote(arn, safe=""))
        assert_rest_error(r, status)
        r = RestRaw(floe, arn).request("GET", "/v1/%s/namespaces" % quote(arn, safe=""))
        assert_rest_error(r, status)
    # a NUL in the warehouse does not cut the ARN short
    r = signed_request(floe.catalog_port, "GET", "/iceberg/v1/config",
                       query="warehouse=" + quote(tbucket, safe="") + "%00x")
    assert_rest_error(r, 400)
    r = signed_request(floe.catalog_port, "GET", "/iceberg/v1/config", query="warehouse=" + quote(tbucket, safe=""))
    assert r.status_code == 200, r.text
    assert RestRaw(floe, tbucket).request("GET", "/v1/%s/namespaces" % quote(tbucket, safe="")).status_code == 200


# ------------------------------------------------------------ item 4

def head_only(port, head, wait=5.0):
    """Sends only a request head and returns what the server answers before any
    body byte is sent (b'' if nothing came within wait seconds)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        s.sendall(head)
        s.settimeout(wait)
        got = b""
        end = time.time() + wait
        while time.time() < end and b"\r\n\r\n" not in got:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            got += chunk
        if got.startswith(b"HTTP/1.1 100") and b"\r\n\r\n" in got:
            # a 100 Continue: note it and wait for more
            try:
                got += s.recv(65536)
            except socket.timeout:
                pass
        return got
    finally:
        s.close()


BIG = 8 * 1024 * 1024


@pytest.mark.parametrize("path", ["/buckets", "/iceberg/v1/namespaces"])
def test_catalog_refuses_unsigned_before_reading_body(floe, path):
    method = "PUT" if path == "/buckets" else "POST"
    head = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nExpect: 100-continue\r\n\r\n" % (method, path, floe.catalog_port, BIG)).encode()
    t0 = time.time()
    got = head_only(floe.catalog_port, head)
    assert not got.startswith(b"HTTP/1.1 100"), got[:200]
    status = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.1 ") else None
    assert status in (401, 403), got[:300]
    assert time.time() - t0 < 4


def test_catalog_refuses_unknown_key_before_reading_body(floe):
    body = b"{" + b" " * (BIG - 2) + b"}"
    url = "http://127.0.0.1:%d/buckets" % floe.catalog_port
    req = AWSRequest(method="PUT", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials("AKIDUNKNOWN000000000", SECRET_KEY), "s3tables", REGION).add_auth(req)
    hdrs = "".join("%s: %s\r\n" % kv for kv in req.headers.items())
    head = ("PUT /buckets HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Length: %d\r\n"
            "Expect: 100-continue\r\n\r\n" % (floe.catalog_port, hdrs, len(body))).encode()
    got = head_only(floe.catalog_port, head)
    assert not got.startswith(b"HTTP/1.1 100"), got[:200]
    assert got.startswith(b"HTTP/1.1 403"), got[:300]
    assert b"UnrecognizedClientException" in got
    # a wrong region is refused from the head too
    req = AWSRequest(method="PUT", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", OTHER_REGION).add_auth(req)
    hdrs = "".join("%s: %s\r\n" % kv for kv in req.headers.items())
    head = ("PUT /buckets HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Length: %d\r\n"
            "Expect: 100-continue\r\n\r\n" % (floe.catalog_port, hdrs, len(body))).encode()
    got = head_only(floe.catalog_port, head)
    assert got.startswith(b"HTTP/1.1 403"), got[:300]


def test_catalog_signed_body_still_verified(floe, s3t):
    name = unique_tb_name("hb")
    body = json.dumps({"name": name}).encode()
    # control: a correctly signed body (no x-amz-content-sha256) is accepted, with Expect
    r = signed_request(floe.catalog_port, "PUT", "/buckets", body=body, headers={"Expect": "100-continue"})
    assert r.status_code == 200, r.text
    arn = r.json()["arn"]
    # the body is covered by the signature: tampering is caught after reading it
    url = "http://127.0.0.1:%d/namespaces/%s" % (floe.catalog_port, quote(arn, safe=""))
    nb = json.dumps({"namespace": ["a"]}).encode()
    req = AWSRequest(method="PUT", url=url, data=nb, headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    r = requests.put(url, data=json.dumps({"namespace": ["b"]}).encode(), headers=dict(req.headers.items()),
                     timeout=10)
    assert r.status_code == 403 and r.headers.get("x-amzn-ErrorType", "").startswith("InvalidSignature"), r.text
    # with x-amz-content-sha256 sent, a body not matching it is refused
    req = AWSRequest(method="PUT", url=url, data=nb, headers={"Content-Type": "application/json",
                                                              "x-amz-content-sha256": hashlib.sha256(nb).hexdigest()})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    r = requests.put(url, data=b'{"namespace": ["c"]}', headers=dict(req.headers.items()), timeout=10)
    assert r.status_code == 400, r.text
    r = requests.put(url, data=nb, headers=dict(req.headers.items()), timeout=10)
    assert r.status_code == 200, r.text
    s3t.delete_namespace(tableBucketARN=arn, namespace="a")
    s3t.delete_table_bucket(tableBucketARN=arn)


def test_catalog_refuses_bodies_no_signature_covers(floe, s3t):
    """UNSIGNED-PAYLOAD and presigned URLs sign no body: on the catalog port a body sent with
    them could be anything the holder likes (a bucket, a commit, a registered table)."""
    url = "http://127.0.0.1:%d/buckets" % floe.catalog_port
    name = unique_tb_name("unsig")
    body = json.dumps({"name": name}).encode()
    req = AWSRequest(method="PUT", url=url, data=b'{"name": "intended"}',
                     headers={"Content-Type": "application/json", "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    r = requests.put(url, data=body, headers=dict(req.headers.items()), timeout=10)
    assert r.status_code == 403 and r.headers.get("x-amzn-ErrorType", "").startswith("Forbidden"), r.text
    # a presigned URL (signed headers: host) with a body of the holder's choosing
    pre = AWSRequest(method="PUT", url=url)
    from botocore.auth import SigV4QueryAuth
    SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION, expires=300).add_auth(pre)
    r = requests.put(pre.url, data=body, headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 403, r.text
    names = [b["name"] for b in s3t.list_table_buckets()["tableBuckets"]]
    assert name not in names
    # REST answers in its own shape
    rurl = "http://127.0.0.1:%d/iceberg/v1/config" % floe.catalog_port
    req = AWSRequest(method="POST", url=rurl, data=b"{}",
                     headers={"Content-Type": "application/json", "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    r = requests.post(rurl, data=b'{"x": 1}', headers=dict(req.headers.items()), timeout=10)
    assert r.status_code == 401 and r.json()["error"]["type"] == "NotAuthorizedException", r.text
    # a bodiless request may still be sent UNSIGNED-PAYLOAD (nothing to tamper with)
    req = AWSRequest(method="GET", url=url, headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3tables", REGION).add_auth(req)
    r = requests.get(url, headers=dict(req.headers.items()), timeout=10)
    assert r.status_code == 200, r.text
