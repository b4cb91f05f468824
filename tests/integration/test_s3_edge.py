"""Edge cases of the S3 data plane that SDKs and tools hit in practice:
range/conditional corner cases, part reads, signed trailers, query and path
encoding, keep-alive, Expect: 100-continue, copy-to-self, limits."""
import hashlib
import hmac
import http.client
import os
import socket
import time

import pytest
from botocore.exceptions import ClientError

import s3helpers as h
from conftest import ACCESS_KEY, SECRET_KEY

MiB = 1024 * 1024


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def status(e):
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"]


# ---------------------------------------------------------------- ranges

def test_range_syntactically_invalid_is_ignored(raw, s3, bucket):
    body = bytes(range(50))
    s3.put_object(Bucket=bucket, Key="r", Body=body)
    for rng in ("bytes=abc", "items=0-5", "bytes=5-2"):
        r = raw.request("GET", h.key_path(bucket, "r"), headers={"Range": rng})
        assert r.status in (200, 416), (rng, r)
        if r.status == 200:
            assert r.body == body, rng


def test_range_on_empty_object(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="e", Body=b"")
    r = raw.request("GET", h.key_path(bucket, "e"), headers={"Range": "bytes=0-0"})
    assert r.status in (200, 416), r
    if r.status == 416:
        assert r.error_code() == "InvalidRange"
    else:
        assert r.body == b""


def test_range_with_checksum_mode(s3_ws, bucket):
    """botocore validates a returned full-object checksum against whatever body
    it got; a ranged GET must not carry the whole object's checksum."""
    body = os.urandom(100000)
    s3_ws.put_object(Bucket=bucket, Key="c", Body=body, ChecksumAlgorithm="CRC32")
    g = s3_ws.get_object(Bucket=bucket, Key="c", Range="bytes=10-99", ChecksumMode="ENABLED")
    assert g["Body"].read() == body[10:100]
    g = s3_ws.get_object(Bucket=bucket, Key="c", ChecksumMode="ENABLED")
    assert g["Body"].read() == body


def test_head_invalid_range(s3, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=b"12345")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="r", Range="bytes=10-20")
    assert status(e) == 416


def test_get_part_number(s3, bucket):
    p1, p2 = os.urandom(5 * MiB), os.urandom(1234)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=2, Body=p2)["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    g = s3.get_object(Bucket=bucket, Key="mp", PartNumber=2)
    assert g["Body"].read() == p2
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert g["ContentRange"] == "bytes %d-%d/%d" % (len(p1), len(p1) + len(p2) - 1, len(p1) + len(p2))
    assert g.get("PartsCount") == 2
    hd = s3.head_object(Bucket=bucket, Key="mp", PartNumber=1)
    assert hd["ContentLength"] == len(p1)


# ---------------------------------------------------------------- conditionals

def test_if_none_match_list_and_weak(raw, s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="c", Body=b"x")["ETag"]
    r = raw.request("GET", h.key_path(bucket, "c"),
                    headers={"If-None-Match": '"0123456789abcdef0123456789abcdef", %s' % etag})
    assert r.status == 304, r
    assert r.body == b""
    r = raw.request("GET", h.key_path(bucket, "c"), headers={"If-Match": '"0123456789abcdef0123456789abcdef", %s' % etag})
    assert r.status == 200 and r.body == b"x", r


def test_304_carries_etag_and_no_body(raw, s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="c", Body=b"body")["ETag"]
    r = raw.request("GET", h.key_path(bucket, "c"), headers={"If-None-Match": etag})
    assert r.status == 304 and r.body == b""
    assert r.header("ETag") == etag
    assert r.header("Last-Modified")


def test_delete_object_if_match(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="d", Body=b"x")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="d", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert err(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="d")["Body"].read() == b"x"
    s3.delete_object(Bucket=bucket, Key="d", IfMatch=etag)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="d")


# ---------------------------------------------------------------- copy corner cases

def test_copy_to_itself_without_change_rejected(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"same")
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"})
    assert err(e) == ("InvalidRequest", 400)
    assert s3.get_object(Bucket=bucket, Key="self")["Body"].read() == b"same"


def test_copy_source_if_modified_since(s3, bucket):
    import datetime
    s3.put_object(Bucket=bucket, Key="src", Body=b"data")
    lm = s3.head_object(Bucket=bucket, Key="src")["LastModified"]
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                       CopySourceIfUnmodifiedSince=lm - datetime.timedelta(days=1))
    assert err(e) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                       CopySourceIfModifiedSince=lm + datetime.timedelta(days=1))
    assert err(e) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="dst")


def test_copy_large_multipart_source(s3, bucket):
    parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), b"end"]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    refs = []
    for i, p in enumerate(parts, 1):
        refs.append({"PartNumber": i, "ETag": s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid,
                                                             PartNumber=i, Body=p)["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={"Parts": refs})
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "mp"})
    g = s3.get_object(Bucket=bucket, Key="copy", Range="bytes=%d-%d" % (5 * MiB - 3, 5 * MiB + 2))
    whole = b"".join(parts)
    assert g["Body"].read() == whole[5 * MiB - 3:5 * MiB + 3]
    # deleting the source does not disturb the copy
    s3.delete_object(Bucket=bucket, Key="mp")
    assert hashlib.md5(s3.get_object(Bucket=bucket, Key="copy")["Body"].read()).hexdigest() == h.md5_hex(whole)


# ---------------------------------------------------------------- part checksums

def test_upload_part_bad_md5_not_stored(s3_wr, bucket):
    uid = s3_wr.create_multipart_upload(Bucket=bucket, Key="p")["UploadId"]
    try:
        with pytest.raises(ClientError) as e:
            s3_wr.upload_part(Bucket=bucket, Key="p", UploadId=uid, PartNumber=1, Body=b"part",
                              ContentMD5=h.md5_b64(b"other"))
        assert err(e) == ("BadDigest", 400)
        with pytest.raises(ClientError) as e:
            s3_wr.upload_part(Bucket=bucket, Key="p", UploadId=uid, PartNumber=2, Body=b"part",
                              ChecksumSHA256=h.sha256_b64(b"other"))
        assert e.value.response["Error"]["Code"] in ("BadDigest", "XAmzContentChecksumMismatch")
        assert s3_wr.list_parts(Bucket=bucket, Key="p", UploadId=uid).get("Parts", []) == []
    finally:
        s3_wr.abort_multipart_upload(Bucket=bucket, Key="p", UploadId=uid)


def test_complete_with_unquoted_etags(raw, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="u")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="u", UploadId=uid, PartNumber=1, Body=b"abc")["ETag"]
    body = ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
            "</CompleteMultipartUpload>" % e1.strip('"')).encode()
    r = raw.request("POST", h.key_path(bucket, "u"), query=[("uploadId", uid)], body=body)
    assert r.status == 200 and b"<Error>" not in r.body, r
    assert s3.get_object(Bucket=bucket, Key="u")["Body"].read() == b"abc"


# ---------------------------------------------------------------- signed trailer (Java SDK over http)

def signed_trailer_put(raw, bucket, key, payload, checksum_value, tamper_trailer=False):
    path = h.key_path(bucket, key)
    trailer_name = "x-amz-checksum-crc32"
    chunk = 65536
    pieces = [payload[i:i + chunk] for i in range(0, len(payload), chunk)]
    trailer = "%s:%s" % (trailer_name, checksum_value)
    # encoded length: signed chunks, final 0-chunk header, trailer lines, final CRLF
    enc = sum(len("%x;chunk-signature=" % len(p)) + 64 + 2 + len(p) + 2 for p in pieces)
    enc += len("0;chunk-signature=") + 64 + 2
    enc += len(trailer) + 2 + len("x-amz-trailer-signature:") + 64 + 2 + 2
    headers = {"Host": raw.hostport, "Content-Encoding": "aws-chunked", "Content-Length": str(enc),
               "x-amz-decoded-content-length": str(len(payload)), "x-amz-trailer": trailer_name}
    _, seed, scope, date = h.sign("PUT", path, None, headers, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                                  ACCESS_KEY, SECRET_KEY)
    skey = h.signing_key(SECRET_KEY, date[:8], "us-east-1", "s3")
    body = b""
    prev = seed
    for p in pieces + [b""]:
        sig = h.chunk_signature(skey, date, scope, prev, p)
        if p:
            body += ("%x;chunk-signature=%s\r\n" % (len(p), sig)).encode() + p + b"\r\n"
        else:
            body += ("0;chunk-signature=%s\r\n" % sig).encode()
        prev = sig
    sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", date, scope, prev,
                     hashlib.sha256((trailer + "\n").encode()).hexdigest()])
    tsig = hmac.new(skey, sts.encode(), hashlib.sha256).hexdigest()
    sent_trailer = trailer
    if tamper_trailer:
        sent_trailer = "%s:%s" % (trailer_name, h.crc32_b64(b"forged"))
    body += ("%s\r\nx-amz-trailer-signature:%s\r\n\r\n" % (sent_trailer, tsig)).encode()
    assert len(body) == enc
    return raw.request("PUT", path, body=body, headers=headers, sign_it=False)


def test_signed_trailer_put(raw, s3, bucket):
    payload = os.urandom(150000)
    r = signed_trailer_put(raw, bucket, "st", payload, h.crc32_b64(payload))
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="st")["Body"].read() == payload


def test_signed_trailer_forged(raw, s3, bucket):
    payload = os.urandom(150000)
    r = signed_trailer_put(raw, bucket, "st-forged", payload, h.crc32_b64(payload), tamper_trailer=True)
    assert r.status in (400, 403), r
    assert r.error_code() in ("SignatureDoesNotMatch", "BadDigest", "XAmzContentChecksumMismatch"), r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="st-forged")


def test_signed_trailer_wrong_checksum(raw, s3, bucket):
    payload = os.urandom(150000)
    r = signed_trailer_put(raw, bucket, "st-bad", payload, h.crc32_b64(b"wrong"))
    assert r.status == 400, r
    assert r.error_code() in ("BadDigest", "XAmzContentChecksumMismatch"), r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="st-bad")


# ---------------------------------------------------------------- path and query encoding

def test_encoded_slash_in_path_is_same_key(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="x/y", Body=b"slash")
    r = raw.request("GET", "/%s/x%%2Fy" % bucket)
    assert r.status == 200 and r.body == b"slash", r


def test_lowercase_percent_encoding_in_path(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="a b", Body=b"lower")
    r = raw.request("GET", "/%s/a%%20b" % bucket)
    assert r.status == 200 and r.body == b"lower"
    s3.put_object(Bucket=bucket, Key="ü", Body=b"umlaut")
    r = raw.request("GET", "/%s/%%c3%%bc" % bucket)
    assert r.status == 200 and r.body == b"umlaut", r


def test_plus_in_raw_query_means_space(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="a b/1", Body=b"")
    s3.put_object(Bucket=bucket, Key="a+b/2", Body=b"")
    # signed for prefix "a b"; sent as prefix=a+b (form encoding)
    path = "/" + bucket
    headers = {"Host": raw.hostport}
    h.sign("GET", path, [("list-type", "2"), ("prefix", "a b")], headers, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
    c = http.client.HTTPConnection("127.0.0.1", raw.port, timeout=10)
    c.putrequest("GET", path + "?list-type=2&prefix=a+b", skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        c.putheader(k, v)
    c.endheaders()
    resp = c.getresponse()
    body = resp.read()
    c.close()
    assert resp.status == 200, body
    assert b"<Key>a b/1</Key>" in body and b"a+b/2" not in body, body


def test_key_with_leading_slash(s3, bucket):
    s3.put_object(Bucket=bucket, Key="/lead", Body=b"L")
    s3.put_object(Bucket=bucket, Key="lead", Body=b"N")
    assert s3.get_object(Bucket=bucket, Key="/lead")["Body"].read() == b"L"
    assert s3.get_object(Bucket=bucket, Key="lead")["Body"].read() == b"N"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["/lead", "lead"]


def test_key_length_limit_in_bytes(s3, bucket):
    ok = "ü" * 512  # 1024 bytes
    s3.put_object(Bucket=bucket, Key=ok, Body=b"ok")
    assert s3.get_object(Bucket=bucket, Key=ok)["Body"].read() == b"ok"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="ü" * 513, Body=b"too long")
    assert status(e) == 400


def test_list_max_keys_capped_at_1000(s3, bucket):
    r = s3.list_objects_v2(Bucket=bucket, MaxKeys=5000)
    assert r["MaxKeys"] in (1000, 5000)


def test_list_fetch_owner(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"")
    r = s3.list_objects_v2(Bucket=bucket, FetchOwner=True)
    assert r["Contents"][0].get("Owner", {}).get("ID")


def test_list_start_after_and_token(s3, bucket):
    for k in "abcdef":
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    r = s3.list_objects_v2(Bucket=bucket, StartAfter="a", MaxKeys=2)
    assert [o["Key"] for o in r["Contents"]] == ["b", "c"]
    r = s3.list_objects_v2(Bucket=bucket, StartAfter="a", MaxKeys=2, ContinuationToken=r["NextContinuationToken"])
    assert [o["Key"] for o in r["Contents"]] == ["d", "e"]


def test_list_prefix_is_itself_a_key(s3, bucket):
    for k in ["p", "p/", "p/a", "p/b/c", "pq"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    r = s3.list_objects_v2(Bucket=bucket, Prefix="p/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["p/", "p/a"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["p/b/"]
    r = s3.list_objects_v2(Bucket=bucket, Prefix="p", Delimiter="/")
    assert [o["Key"] for o in r.get("Contents", [])] == ["p", "pq"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["p/"]


# ---------------------------------------------------------------- HTTP behaviour

def test_keep_alive_many_requests_one_connection(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"keepalive")
    c = http.client.HTTPConnection("127.0.0.1", raw.port, timeout=10)
    try:
        for i in range(50):
            headers = {"Host": raw.hostport}
            h.sign("GET", h.key_path(bucket, "k"), None, headers, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
            c.putrequest("GET", h.key_path(bucket, "k"), skip_host=True, skip_accept_encoding=True)
            for k, v in headers.items():
                c.putheader(k, v)
            c.endheaders()
            r = c.getresponse()
            assert r.status == 200 and r.read() == b"keepalive", i
    finally:
        c.close()


def test_pipelined_requests(raw, s3, bucket):
    s3.put_object(Bucket=bucket, Key="p1", Body=b"one")
    s3.put_object(Bucket=bucket, Key="p2", Body=b"two")
    reqs = b""
    for key in ("p1", "p2"):
        headers = {"Host": raw.hostport}
        h.sign("GET", h.key_path(bucket, key), None, headers, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
        reqs += ("GET %s HTTP/1.1\r\n" % h.key_path(bucket, key) + "".join("%s: %s\r\n" % kv for kv in headers.items())
                 + "\r\n").encode()
    s = socket.create_connection(("127.0.0.1", raw.port), timeout=10)
    s.sendall(reqs)
    data = b""
    end = time.time() + 10
    while time.time() < end and not (b"one" in data and data.rstrip().endswith(b"two")):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    assert data.count(b"HTTP/1.1 200") == 2, data
    assert data.index(b"one") < data.index(b"two")


def test_expect_100_continue_error_without_body(raw, s3):
    """PUT to a missing bucket with Expect: 100-continue: the server answers
    (100 or the final error) without waiting for the body."""
    path = "/no-such-bucket-expect-test/k"
    headers = {"Host": raw.hostport, "Content-Length": str(10 * MiB), "Expect": "100-continue"}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", raw.port), timeout=5)
    try:
        s.sendall(("PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        first = s.recv(4096)
        assert first.startswith(b"HTTP/1.1 100") or first.startswith(b"HTTP/1.1 404"), first
        if first.startswith(b"HTTP/1.1 404"):
            assert b"NoSuchBucket" in first or b"Content-Length" in first
    finally:
        s.close()


def test_transfer_encoding_chunked_plain_body(raw, s3, bucket):
    path = h.key_path(bucket, "te")
    headers = {"Host": raw.hostport, "Transfer-Encoding": "chunked"}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY,
           signed=["host", "x-amz-content-sha256", "x-amz-date"])
    payload = os.urandom(100000)
    c = http.client.HTTPConnection("127.0.0.1", raw.port, timeout=10)
    c.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        c.putheader(k, v)
    c.endheaders()
    for i in range(0, len(payload), 30000):
        p = payload[i:i + 30000]
        c.send(b"%x\r\n" % len(p) + p + b"\r\n")
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status in (200, 411), body
    if r.status == 200:
        assert s3.get_object(Bucket=bucket, Key="te")["Body"].read() == payload
    else:
        assert h.error_code(body) == "MissingContentLength"


def test_many_parallel_connections(floe, bucket):
    import concurrent.futures as cf
    from conftest import make_client
    clients = [make_client(floe.endpoint) for _ in range(16)]

    def work(i):
        c = clients[i % 16]
        body = ("%d" % i).encode() * 1000
        c.put_object(Bucket=bucket, Key="par/%03d" % i, Body=body)
        return c.get_object(Bucket=bucket, Key="par/%03d" % i)["Body"].read() == body

    with cf.ThreadPoolExecutor(32) as ex:
        assert all(ex.map(work, range(200)))
    assert clients[0].list_objects_v2(Bucket=bucket, Prefix="par/")["KeyCount"] == 200


def test_request_id_on_errors(raw, bucket):
    r = raw.request("GET", h.key_path(bucket, "missing"))
    assert r.status == 404 and r.error_code() == "NoSuchKey"
    assert r.header("x-amz-request-id")
    assert b"<RequestId>" in r.body
    assert (r.header("Content-Type") or "").startswith("application/xml")


def test_unknown_method_or_subresource(raw, bucket):
    r = raw.request("PATCH", h.key_path(bucket, "k"), body=b"x")
    assert r.status in (405, 501), r
    assert r.error_code() in ("MethodNotAllowed", "NotImplemented"), r


# ---------------------------------------------------------------- SigV4 canonicalisation details

def send_raw(port, method, target, header_lines, body=b""):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        req = ("%s %s HTTP/1.1\r\n" % (method, target)).encode()
        for k, v in header_lines:
            req += ("%s: %s\r\n" % (k, v)).encode()
        req += b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
        s.sendall(req + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.decode(errors="replace"), rest


def test_header_whitespace_and_duplicates_canonicalised(raw, s3, bucket):
    path = h.key_path(bucket, "ws")
    body = b"ws"
    ph = hashlib.sha256(body).hexdigest()
    # canonical form: values trimmed, inner runs collapsed, duplicates joined with ','
    hdrs = {"Host": raw.hostport, "x-amz-meta-note": "hello world", "x-amz-meta-dup": "a,b"}
    _, sig, scope, date = h.sign("PUT", path, None, hdrs, ph, ACCESS_KEY, SECRET_KEY)
    lines = [("Host", raw.hostport), ("x-amz-date", date), ("x-amz-content-sha256", ph),
             ("x-amz-meta-note", "  hello    world  "), ("x-amz-meta-dup", "a"), ("x-amz-meta-dup", "b"),
             ("Authorization", hdrs["Authorization"])]
    st, head, rest = send_raw(raw.port, "PUT", path, lines, body)
    assert st == 200, (head, rest)
    md = s3.head_object(Bucket=bucket, Key="ws")["Metadata"]
    assert md.get("note", "").split() == ["hello", "world"]


def test_authorization_without_spaces(raw, s3, bucket):
    path = h.key_path(bucket, "nospace")
    hdrs = {"Host": raw.hostport}
    h.sign("PUT", path, None, hdrs, hashlib.sha256(b"x").hexdigest(), ACCESS_KEY, SECRET_KEY)
    hdrs["Authorization"] = hdrs["Authorization"].replace(", ", ",")
    r = raw.request("PUT", path, body=b"x", headers=hdrs, sign_it=False)
    assert r.status == 200, r


def test_subresource_with_equals(raw, s3, bucket):
    r = raw.request("POST", h.key_path(bucket, "eq"), query=[("uploads", "")])
    assert r.status == 200, r
    # the same with "uploads=" on the wire
    path = h.key_path(bucket, "eq2")
    hdrs = {"Host": raw.hostport}
    h.sign("POST", path, [("uploads", "")], hdrs, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
    st, head, rest = send_raw(raw.port, "POST", path + "?uploads=", list(hdrs.items()))
    assert st == 200, (head, rest)
    assert b"<UploadId>" in rest
    ups = [u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
    assert ups == ["eq", "eq2"]


def test_presigned_from_the_future(s3, bucket, monkeypatch):
    import test_s3_auth
    import requests
    s3.put_object(Bucket=bucket, Key="f", Body=b"x")
    test_s3_auth.shift_botocore_clock(monkeypatch, 30 * 60)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "f"}, ExpiresIn=3600)
    monkeypatch.undo()
    r = requests.get(url, timeout=10)
    assert r.status_code == 403, r.text
    assert h.error_code(r.content) in ("AccessDenied", "RequestTimeTooSkewed"), r.text


def test_aws_chunked_with_gzip_content_encoding(raw, s3, bucket):
    import test_s3_auth
    payload = os.urandom(70000)
    r = test_s3_auth.chunked_put(raw, bucket, "gz", payload,
                                 extra_headers={"Content-Encoding": "aws-chunked,gzip"})
    assert r.status == 200, r
    g = s3.get_object(Bucket=bucket, Key="gz")
    assert g["Body"].read() == payload
    assert g.get("ContentEncoding") == "gzip"


def test_unsigned_trailer_chunk_extensions(raw, s3, bucket):
    path = h.key_path(bucket, "ext")
    payload = os.urandom(20000)
    body = b"%x;foo=bar\r\n" % len(payload) + payload + b"\r\n0;foo=bar\r\n"
    body += ("x-amz-checksum-crc32:%s\r\n\r\n" % h.crc32_b64(payload)).encode()
    headers = {"Host": raw.hostport, "Content-Encoding": "aws-chunked", "Content-Length": str(len(body)),
               "x-amz-decoded-content-length": str(len(payload)), "x-amz-trailer": "x-amz-checksum-crc32"}
    h.sign("PUT", path, None, headers, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", ACCESS_KEY, SECRET_KEY)
    r = raw.request("PUT", path, body=body, headers=headers, sign_it=False)
    assert r.status == 200, r
    assert s3.get_object(Bucket=bucket, Key="ext")["Body"].read() == payload


def test_empty_put_then_put_on_reused_connection(floe, bucket):
    """A zero-length PUT with Expect: 100-continue followed by a non-empty PUT
    on the same pooled connection completes promptly (no stall, no retry)."""
    import io
    from conftest import make_client
    c = make_client(floe.endpoint, max_pool_connections=1)
    t0 = time.time()
    for i in range(3):
        c.put_object(Bucket=bucket, Key="empty%d" % i, Body=io.BytesIO(b""))
        c.put_object(Bucket=bucket, Key="full%d" % i, Body=io.BytesIO(b"x" * 3000))
    assert time.time() - t0 < 10
    assert c.get_object(Bucket=bucket, Key="full2")["Body"].read() == b"x" * 3000
    assert c.head_object(Bucket=bucket, Key="empty2")["ContentLength"] == 0
