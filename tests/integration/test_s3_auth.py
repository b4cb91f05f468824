"""SigV4 authentication and hostile input: wrong keys, clock skew, tampered
bodies and aws-chunked streams, presigned URLs, malformed XML, anonymous
requests. Each negative case has a positive control built the same way, so
a failure points at the server, not at the test's own request builder."""
import hashlib
import http.client
import os
import time
import urllib.parse

import pytest
import requests
from botocore.exceptions import ClientError

import conftest
import s3helpers as h
from conftest import ACCESS_KEY, SECRET_KEY, make_client


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def absent(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return False
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"] == 404


# ---------------------------------------------------------------- keys

def test_wrong_secret(floe, bucket):
    c = make_client(floe.endpoint, secret=SECRET_KEY + "x")
    with pytest.raises(ClientError) as e:
        c.list_objects_v2(Bucket=bucket)
    assert err(e) == ("SignatureDoesNotMatch", 403)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert err(e) == ("SignatureDoesNotMatch", 403)


def test_unknown_access_key(floe, s3, bucket):
    c = make_client(floe.endpoint, access_key="AKIDUNKNOWN000000000")
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert err(e) == ("InvalidAccessKeyId", 403)
    assert absent(s3, bucket, "k")


def test_unauthenticated_requests_denied(floe, s3, bucket):
    s3.put_object(Bucket=bucket, Key="secret", Body=b"s3cr3t")
    r = requests.get(floe.endpoint + "/", timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "AccessDenied", r.text
    r = requests.get("%s/%s/secret" % (floe.endpoint, bucket), timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "AccessDenied", r.text
    assert b"s3cr3t" not in r.content
    r = requests.put("%s/%s/anon" % (floe.endpoint, bucket), data=b"x", timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "AccessDenied", r.text
    assert absent(s3, bucket, "anon")
    r = requests.put("%s/%s" % (floe.endpoint, conftest.unique_bucket_name("anon")), timeout=10)
    assert r.status_code == 403


def test_garbage_authorization_header(floe, bucket):
    for auth in ("AWS4-HMAC-SHA256 garbage", "Bearer abc", "AWS4-HMAC-SHA256 Credential=x, SignedHeaders=host, Signature=zz",
                 "AWS4-HMAC-SHA256 Credential=%s/2020/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=%s"
                 % (ACCESS_KEY, "0" * 64)):
        r = requests.get("%s/%s" % (floe.endpoint, bucket), headers={"Authorization": auth,
                                                                    "x-amz-date": h.amz_now(),
                                                                    "x-amz-content-sha256": h.EMPTY_SHA256},
                         timeout=10)
        assert r.status_code in (400, 403), (auth, r.status_code, r.text)
        assert h.error_code(r.content) in ("AccessDenied", "AuthorizationHeaderMalformed", "SignatureDoesNotMatch",
                                           "InvalidArgument", "InvalidAccessKeyId", "InvalidRequest"), r.text


# ---------------------------------------------------------------- clock skew

def test_raw_signed_request_control(raw, bucket):
    r = raw.request("PUT", h.key_path(bucket, "raw ok"), body=b"raw body")
    assert r.status == 200, r
    r = raw.request("GET", h.key_path(bucket, "raw ok"))
    assert r.status == 200 and r.body == b"raw body"


@pytest.mark.parametrize("offset", [-20 * 60, 20 * 60])
def test_clock_skew(raw, s3, bucket, offset):
    r = raw.request("PUT", h.key_path(bucket, "skew"), body=b"x", amz_date=h.amz_now(offset))
    assert r.status == 403, r
    assert r.error_code() == "RequestTimeTooSkewed", r
    assert absent(s3, bucket, "skew")
    # 5 minutes off is fine
    r = raw.request("PUT", h.key_path(bucket, "skew"), body=b"x", amz_date=h.amz_now(offset // 4))
    assert r.status == 200, r


def shift_botocore_clock(monkeypatch, seconds):
    """Moves the clock botocore signs with (its own SigV4 signer, and the CRT
    signer it uses when awscrt is installed)."""
    import datetime
    import importlib
    for modname in ("botocore.auth", "botocore.crt.auth"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        real = mod.get_current_datetime
        monkeypatch.setattr(mod, "get_current_datetime",
                            lambda *a, _real=real, **k: _real(*a, **k) + datetime.timedelta(seconds=seconds))


def test_clock_skew_boto3(floe, bucket, monkeypatch):
    shift_botocore_clock(monkeypatch, -20 * 60)
    c = make_client(floe.endpoint)
    with pytest.raises(ClientError) as e:
        c.list_objects_v2(Bucket=bucket)
    assert err(e) == ("RequestTimeTooSkewed", 403)


# ---------------------------------------------------------------- payload hash

def test_tampered_body_sha256_mismatch(raw, s3, bucket):
    signed_body = b"A" * 4096
    sent = b"B" * 4096
    r = raw.request("PUT", h.key_path(bucket, "tampered"), body=signed_body, send_body=sent)
    assert r.status == 400, r
    assert r.error_code() == "XAmzContentSHA256Mismatch", r
    assert absent(s3, bucket, "tampered")


def test_tampered_body_keeps_old_object(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"original")
    body = os.urandom(300000)
    bad = bytearray(body)
    bad[150000] ^= 1
    r = raw.request("PUT", h.key_path(bucket, "keep"), body=body, send_body=bytes(bad))
    assert r.status == 400 and r.error_code() == "XAmzContentSHA256Mismatch", r
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"original"


def test_unsigned_payload_put(raw, s3, bucket):
    r = raw.request("PUT", h.key_path(bucket, "unsigned"), body=b"free bytes", payload_hash=h.UNSIGNED)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="unsigned")["Body"].read() == b"free bytes"


def test_unsigned_meta_header_rejected(raw, s3, bucket):
    headers = {"x-amz-meta-injected": "evil"}
    hdrs = dict(headers)
    hdrs["Host"] = raw.hostport
    body = b"meta"
    h.sign("PUT", h.key_path(bucket, "m"), None, hdrs, hashlib.sha256(body).hexdigest(), ACCESS_KEY, SECRET_KEY,
           signed=["host", "x-amz-content-sha256", "x-amz-date"])
    r = raw.request("PUT", h.key_path(bucket, "m"), body=body, headers=hdrs, sign_it=False)
    assert r.status == 403, r
    assert r.error_code() in ("AccessDenied", "SignatureDoesNotMatch"), r
    assert absent(s3, bucket, "m")


def test_signature_covers_query(raw, s3, bucket):
    """A signed ListObjectsV2 whose query is changed after signing fails."""
    path = "/" + bucket
    hdrs = {"Host": raw.hostport}
    h.sign("GET", path, [("list-type", "2"), ("prefix", "a")], hdrs, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
    c = http.client.HTTPConnection("127.0.0.1", raw.port, timeout=10)
    c.putrequest("GET", path + "?list-type=2&prefix=b", skip_host=True, skip_accept_encoding=True)
    for k, v in hdrs.items():
        c.putheader(k, v)
    c.endheaders()
    resp = c.getresponse()
    body = resp.read()
    c.close()
    assert resp.status == 403 and h.error_code(body) == "SignatureDoesNotMatch", body


# ---------------------------------------------------------------- aws-chunked

def chunked_put(raw, bucket, key, payload, chunk_size=65536, tamper=None, decoded_len=None,
                extra_headers=None, http_chunked=False):
    """PUT with STREAMING-AWS4-HMAC-SHA256-PAYLOAD. tamper(list_of_chunks) may
    modify the (header, data) list after signing."""
    path = h.key_path(bucket, key)
    enc_len = h.encoded_length(len(payload), chunk_size)
    headers = {"Host": raw.hostport, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(payload) if decoded_len is None else decoded_len)}
    if not http_chunked:
        headers["Content-Length"] = str(enc_len)
    headers.update(extra_headers or {})
    _, seed, scope, date = h.sign("PUT", path, None, headers, h.STREAMING, ACCESS_KEY, SECRET_KEY)
    skey = h.signing_key(SECRET_KEY, date[:8], "us-east-1", "s3")
    chunks = h.aws_chunked_body(payload, chunk_size, seed, skey, date, scope)
    if tamper:
        tamper(chunks)
    body = h.encode_chunks(chunks)
    if http_chunked:
        headers["Transfer-Encoding"] = "chunked"
    c = http.client.HTTPConnection("127.0.0.1", raw.port, timeout=30)
    try:
        c.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            c.putheader(k, v)
        c.endheaders()
        try:
            if http_chunked:
                for i in range(0, len(body), 10000):
                    piece = body[i:i + 10000]
                    c.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
                c.send(b"0\r\n\r\n")
            else:
                c.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = c.getresponse()
        return h.Resp(r.status, r.getheaders(), r.read())
    finally:
        c.close()


def test_aws_chunked_signed_control(raw, s3, bucket):
    payload = os.urandom(200 * 1024 + 7)
    r = chunked_put(raw, bucket, "chunked", payload, extra_headers={"Content-Type": "text/x-chunk"})
    assert r.status == 200, r
    assert r.header("ETag") == '"%s"' % h.md5_hex(payload)
    g = s3.get_object(Bucket=bucket, Key="chunked")
    assert g["Body"].read() == payload
    # aws-chunked is a transfer detail, never stored as the object's encoding
    assert "aws-chunked" not in (g.get("ContentEncoding") or "")


def test_aws_chunked_signed_over_http_chunked(raw, s3, bucket):
    payload = os.urandom(150 * 1024)
    r = chunked_put(raw, bucket, "te-chunked", payload, http_chunked=True)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="te-chunked")["Body"].read() == payload


def test_aws_chunked_tampered_data(raw, s3, bucket):
    payload = os.urandom(200 * 1024)

    def flip(chunks):
        hdr, data = chunks[1]
        d = bytearray(data)
        d[100] ^= 0xFF
        chunks[1] = (hdr, bytes(d))

    r = chunked_put(raw, bucket, "tampered-chunk", payload, tamper=flip)
    assert r.status == 403, r
    assert r.error_code() == "SignatureDoesNotMatch", r
    assert absent(s3, bucket, "tampered-chunk")


def test_aws_chunked_tampered_final_signature(raw, s3, bucket):
    payload = os.urandom(100 * 1024)

    def bad_final(chunks):
        hdr, data = chunks[-1]
        s = hdr.decode()
        sig = s.split("=")[1].strip()
        s = s.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
        chunks[-1] = (s.encode(), data)

    r = chunked_put(raw, bucket, "tampered-final", payload, tamper=bad_final)
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    assert absent(s3, bucket, "tampered-final")


def test_aws_chunked_reordered_chunks(raw, s3, bucket):
    payload = os.urandom(64 * 1024) + os.urandom(64 * 1024) + b"end"

    def swap(chunks):
        chunks[0], chunks[1] = chunks[1], chunks[0]

    r = chunked_put(raw, bucket, "swapped", payload, tamper=swap)
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    assert absent(s3, bucket, "swapped")


def test_aws_chunked_wrong_decoded_length(raw, s3, bucket):
    payload = os.urandom(70000)
    r = chunked_put(raw, bucket, "badlen", payload, decoded_len=len(payload) + 10)
    assert r.status == 400, r
    assert r.error_code() in ("IncompleteBody", "InvalidRequest", "InvalidArgument", "XAmzContentSHA256Mismatch"), r
    assert absent(s3, bucket, "badlen")


def unsigned_trailer_put(raw, bucket, key, payload, checksum_name, checksum_value, http_chunked=True):
    path = h.key_path(bucket, key)
    body = b""
    for i in range(0, len(payload), 65536):
        piece = payload[i:i + 65536]
        body += b"%x\r\n" % len(piece) + piece + b"\r\n"
    body += b"0\r\n" + ("%s:%s\r\n" % (checksum_name, checksum_value)).encode() + b"\r\n"
    headers = {"Host": raw.hostport, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(payload)), "x-amz-trailer": checksum_name,
               "x-amz-sdk-checksum-algorithm": checksum_name.split("-")[-1].upper()}
    if not http_chunked:
        headers["Content-Length"] = str(len(body))
    h.sign("PUT", path, None, headers, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", ACCESS_KEY, SECRET_KEY)
    if http_chunked:
        headers["Transfer-Encoding"] = "chunked"
    c = http.client.HTTPConnection("127.0.0.1", raw.port, timeout=30)
    try:
        c.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            c.putheader(k, v)
        c.endheaders()
        try:
            if http_chunked:
                c.send(b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
            else:
                c.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = c.getresponse()
        return h.Resp(r.status, r.getheaders(), r.read())
    finally:
        c.close()


@pytest.mark.parametrize("http_chunked", [True, False], ids=["transfer-chunked", "content-length"])
def test_unsigned_trailer_checksum(raw, s3, bucket, http_chunked):
    payload = os.urandom(150000)
    r = unsigned_trailer_put(raw, bucket, "trailer", payload, "x-amz-checksum-crc32", h.crc32_b64(payload),
                             http_chunked=http_chunked)
    assert r.status == 200, r
    assert r.header("x-amz-checksum-crc32") == h.crc32_b64(payload)
    assert s3.get_object(Bucket=bucket, Key="trailer")["Body"].read() == payload


def test_unsigned_trailer_bad_checksum(raw, s3, bucket):
    payload = os.urandom(150000)
    r = unsigned_trailer_put(raw, bucket, "trailer-bad", payload, "x-amz-checksum-crc32c",
                             h.crc32c_b64(b"not the payload"))
    assert r.status == 400, r
    assert r.error_code() in ("BadDigest", "XAmzContentChecksumMismatch"), r
    assert absent(s3, bucket, "trailer-bad")


# ---------------------------------------------------------------- malformed XML

@pytest.mark.parametrize("body", [b"<Delete><Object><Key>a</Key></Object", b"not xml at all",
                                  b"<Delete><Object></Object></Delete>", b"<Wrong><Object><Key>a</Key></Object></Wrong>"])
def test_delete_objects_malformed_xml(raw, s3, bucket, body):
    s3.put_object(Bucket=bucket, Key="a", Body=b"keep")
    r = raw.request("POST", "/" + bucket, query=[("delete", "")], body=body,
                    headers={"Content-MD5": h.md5_b64(body)})
    assert r.status == 400, r
    assert r.error_code() == "MalformedXML", r
    assert s3.get_object(Bucket=bucket, Key="a")["Body"].read() == b"keep"


def test_delete_objects_requires_integrity_header(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="a", Body=b"keep")
    body = b"<Delete><Object><Key>a</Key></Object></Delete>"
    r = raw.request("POST", "/" + bucket, query=[("delete", "")], body=body,
                    headers={"Content-MD5": h.md5_b64(b"different")})
    assert r.status == 400 and r.error_code() in ("BadDigest", "InvalidDigest"), r
    assert s3.get_object(Bucket=bucket, Key="a")["Body"].read() == b"keep"


@pytest.mark.parametrize("body", [b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>",
                                  b"garbage", b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber>"
                                              b"<ETag>\"abc\"</ETag></Part></CompleteMultipartUpload>"])
def test_complete_multipart_malformed_xml(raw, s3, bucket, body):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mx")["UploadId"]
    try:
        s3.upload_part(Bucket=bucket, Key="mx", UploadId=uid, PartNumber=1, Body=b"p")
        r = raw.request("POST", h.key_path(bucket, "mx"), query=[("uploadId", uid)], body=body)
        assert r.status == 400, r
        assert r.error_code() in ("MalformedXML", "InvalidArgument") if b"<PartNumber>x" in body \
            else r.error_code() == "MalformedXML", r
        assert absent(s3, bucket, "mx")
        # the upload is still usable
        assert len(s3.list_parts(Bucket=bucket, Key="mx", UploadId=uid)["Parts"]) == 1
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="mx", UploadId=uid)


# ---------------------------------------------------------------- presigned URLs

def test_presigned_get(s3, bucket):
    s3.put_object(Bucket=bucket, Key="dir/pre signed+ü", Body=b"presigned body")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "dir/pre signed+ü"},
                                    ExpiresIn=300)
    assert "X-Amz-Signature=" in url and "X-Amz-Credential=" in url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200, r.text
    assert r.content == b"presigned body"
    # with urllib too (no extra headers at all)
    import urllib.request
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.read() == b"presigned body"


def test_presigned_put(s3, bucket):
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "uploaded"}, ExpiresIn=300)
    r = requests.put(url, data=b"via presigned put", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers.get("ETag") == '"%s"' % h.md5_hex(b"via presigned put")
    assert s3.get_object(Bucket=bucket, Key="uploaded")["Body"].read() == b"via presigned put"


def test_presigned_tampered(s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"}, ExpiresIn=300)
    other = url.replace("/p?", "/q?")
    r = requests.get(other, timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "SignatureDoesNotMatch", r.text
    # tamper with the expiry
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qsl(u.query)
    q = [(k, "3000" if k == "X-Amz-Expires" else v) for k, v in q]
    r = requests.get(urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q))), timeout=10)
    assert r.status_code == 403, r.text


def test_presigned_expired(s3, bucket, monkeypatch):
    s3.put_object(Bucket=bucket, Key="exp", Body=b"x")
    shift_botocore_clock(monkeypatch, -2 * 3600)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"}, ExpiresIn=3600)
    still_valid = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"},
                                            ExpiresIn=3 * 3600)
    monkeypatch.undo()
    # control: signed 2 h ago but valid for 3 h -> fine (no 15-minute skew rule for presigned)
    r = requests.get(still_valid, timeout=10)
    assert r.status_code == 200 and r.content == b"x", r.text
    r = requests.get(url, timeout=10)
    assert r.status_code == 403, r.text
    assert h.error_code(r.content) == "AccessDenied", r.text
    # a short expiry that really runs out
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"}, ExpiresIn=1)
    time.sleep(2.2)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "AccessDenied", r.text


def test_presigned_put_expired_stores_nothing(s3, bucket, monkeypatch):
    shift_botocore_clock(monkeypatch, -2 * 3600)
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "late"}, ExpiresIn=3600)
    monkeypatch.undo()
    r = requests.put(url, data=b"late", timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "AccessDenied", r.text
    assert absent(s3, bucket, "late")


def test_presigned_expires_too_long(s3, bucket):
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "x"}, ExpiresIn=604801)
    r = requests.get(url, timeout=10)
    assert r.status_code in (400, 403), r.text
    assert h.error_code(r.content) in ("AuthorizationQueryParametersError", "AccessDenied"), r.text


def test_presigned_wrong_secret(floe, bucket, s3):
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    bad = make_client(floe.endpoint, secret="wrong-secret-wrong-secret")
    url = bad.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"}, ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and h.error_code(r.content) == "SignatureDoesNotMatch", r.text


def test_presigned_other_region(floe, s3, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=b"region")
    c = make_client(floe.endpoint, region="ap-southeast-2")
    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "r"}, ExpiresIn=300)
    assert "ap-southeast-2" in url
    # the credential scope must name the server's region, as on AWS (issue 9)
    r = requests.get(url, timeout=10)
    assert r.status_code == 400 and h.error_code(r.content) == "AuthorizationQueryParametersError", r.text
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "r"}, ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"region", r.text
