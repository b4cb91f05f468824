"""Object operations through boto3: put/get/head/delete, checksums, Content-MD5,
conditional requests, ranges, metadata, copy, ETag rules."""
import datetime
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

import s3helpers as h


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def status(e):
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def assert_absent(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert status(e) == 404, "object %r should not exist" % key


# ---------------------------------------------------------------- put / get basics

def test_put_get_roundtrip_and_etag_is_md5(s3_any, bucket):
    body = os.urandom(12345)
    r = s3_any.put_object(Bucket=bucket, Key="obj", Body=body)
    assert r["ETag"] == '"%s"' % h.md5_hex(body)
    g = s3_any.get_object(Bucket=bucket, Key="obj")
    assert g["Body"].read() == body
    assert g["ETag"] == r["ETag"]
    assert g["ContentLength"] == len(body)
    assert g["ResponseMetadata"]["HTTPHeaders"].get("accept-ranges") == "bytes"
    assert g["LastModified"] is not None


def test_put_empty_object(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    assert r["ETag"] == '"d41d8cd98f00b204e9800998ecf8427e"'
    g = s3.get_object(Bucket=bucket, Key="empty")
    assert g["Body"].read() == b""
    assert g["ContentLength"] == 0


def test_overwrite_replaces(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"first version")
    s3.put_object(Bucket=bucket, Key="k", Body=b"2nd")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"2nd"


def test_get_missing_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="nope")
    assert err(e) == ("NoSuchKey", 404)


def test_head_object(s3, bucket):
    body = b"head me" * 10
    s3.put_object(Bucket=bucket, Key="h", Body=body, ContentType="text/plain")
    r = s3.head_object(Bucket=bucket, Key="h")
    assert r["ContentLength"] == len(body)
    assert r["ETag"] == '"%s"' % h.md5_hex(body)
    assert r["ContentType"] == "text/plain"


def test_head_object_missing_is_bare_404(s3, bucket, raw):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="missing")
    assert status(e) == 404
    r = raw.request("HEAD", h.key_path(bucket, "missing"))
    assert r.status == 404
    assert r.body == b""


def test_delete_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="d", Body=b"x")
    r = s3.delete_object(Bucket=bucket, Key="d")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert_absent(s3, bucket, "d")


def test_delete_missing_object_is_204(s3, bucket):
    r = s3.delete_object(Bucket=bucket, Key="never-existed")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_key_prefix_and_longer_key_coexist(s3, bucket):
    s3.put_object(Bucket=bucket, Key="a", Body=b"1")
    s3.put_object(Bucket=bucket, Key="a/b", Body=b"2")
    s3.put_object(Bucket=bucket, Key="a/b/c", Body=b"3")
    assert s3.get_object(Bucket=bucket, Key="a")["Body"].read() == b"1"
    assert s3.get_object(Bucket=bucket, Key="a/b")["Body"].read() == b"2"
    assert s3.get_object(Bucket=bucket, Key="a/b/c")["Body"].read() == b"3"


AWKWARD_KEYS = ["sp ace", "per%cent", "pl+us", "ünïcødé/ç", "a//b", "../x", "dir/../y", "q?uery&x=1#frag",
                "tilde~star*", "emoji-\U0001F600", "trailing/", "semi;colon,comma", "tab\tkey",
                "ctrl\x01char", "line\nbreak", "del\x7f", "xml<&>'\""]


@pytest.mark.parametrize("key", AWKWARD_KEYS)
def test_awkward_key_roundtrip(s3, bucket, key):
    body = key.encode() * 3
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == [key]
    s3.delete_object(Bucket=bucket, Key=key)
    assert_absent(s3, bucket, key)


@pytest.mark.fs_store("the remote store's keys hold PREFIX/o/BUCKET/ too: 1024 bytes less that")
def test_max_length_key(s3, bucket):
    key = "k" * 1024
    s3.put_object(Bucket=bucket, Key=key, Body=b"long")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"long"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"too long")
    assert status(e) == 400
    assert e.value.response["Error"]["Code"] in ("KeyTooLongError", "InvalidArgument", "InvalidRequest")


# ---------------------------------------------------------------- Content-MD5 and checksums

def test_put_content_md5_good(s3_wr, bucket):
    body = b"md5 protected body"
    r = s3_wr.put_object(Bucket=bucket, Key="m", Body=body, ContentMD5=h.md5_b64(body))
    assert r["ETag"] == '"%s"' % h.md5_hex(body)


def test_put_content_md5_bad(s3_any, bucket):
    body = b"md5 protected body"
    with pytest.raises(ClientError) as e:
        s3_any.put_object(Bucket=bucket, Key="m", Body=body, ContentMD5=h.md5_b64(b"other"))
    assert err(e) == ("BadDigest", 400)
    assert_absent(s3_any, bucket, "m")


def test_put_content_md5_malformed(s3_wr, bucket):
    with pytest.raises(ClientError) as e:
        s3_wr.put_object(Bucket=bucket, Key="m", Body=b"x", ContentMD5="not-base64!!")
    assert err(e) == ("InvalidDigest", 400)
    assert_absent(s3_wr, bucket, "m")


@pytest.mark.parametrize("alg", ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"])
def test_put_checksum_algorithm_echoed(s3_ws, bucket, alg):
    body = os.urandom(70000)
    r = s3_ws.put_object(Bucket=bucket, Key="c", Body=body, ChecksumAlgorithm=alg)
    expected = h.CHECKSUMS[alg](body)
    assert r.get("Checksum" + alg) == expected, r["ResponseMetadata"]["HTTPHeaders"]
    g = s3_ws.get_object(Bucket=bucket, Key="c", ChecksumMode="ENABLED")
    assert g["Body"].read() == body
    # if floe returns a checksum on GET it must be the right one
    if g.get("Checksum" + alg) is not None:
        assert g["Checksum" + alg] == expected


@pytest.mark.parametrize("alg", ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"])
def test_put_wrong_checksum_rejected(s3_ws, bucket, alg):
    body = b"the real body " * 100
    wrong = h.CHECKSUMS[alg](b"something else")
    with pytest.raises(ClientError) as e:
        s3_ws.put_object(Bucket=bucket, Key="bad", Body=body, **{"Checksum" + alg: wrong})
    code, st = err(e)
    assert st == 400
    assert code in ("BadDigest", "XAmzContentChecksumMismatch")
    assert_absent(s3_ws, bucket, "bad")


def test_put_default_checksum_when_supported(s3_ws, bucket):
    body = b"default crc32"
    r = s3_ws.put_object(Bucket=bucket, Key="d", Body=body)
    assert r.get("ChecksumCRC32") == h.crc32_b64(body)


def test_delete_objects_when_supported_and_required(s3_ws, s3_wr, bucket):
    for c in (s3_ws, s3_wr):
        s3_ws.put_object(Bucket=bucket, Key="x1", Body=b"1")
        r = c.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "x1"}]})
        assert [d["Key"] for d in r.get("Deleted", [])] == ["x1"]
        assert_absent(s3_ws, bucket, "x1")


# ---------------------------------------------------------------- conditional writes

def test_put_if_none_match_star(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="once", Body=b"v1", IfNoneMatch="*")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="once", Body=b"v2", IfNoneMatch="*")
    assert err(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="once")["Body"].read() == b"v1"


def test_put_if_match(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="cas", Body=b"v1")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cas", Body=b"v2", IfMatch='"%s"' % h.md5_hex(b"nope"))
    assert err(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="cas")["Body"].read() == b"v1"
    r = s3.put_object(Bucket=bucket, Key="cas", Body=b"v2", IfMatch=etag)
    assert r["ETag"] == '"%s"' % h.md5_hex(b"v2")
    assert s3.get_object(Bucket=bucket, Key="cas")["Body"].read() == b"v2"


def test_put_if_match_missing_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="ghost", Body=b"v", IfMatch='"%s"' % h.md5_hex(b"v"))
    assert status(e) in (404, 412)
    assert_absent(s3, bucket, "ghost")


# ---------------------------------------------------------------- ranges

BODY100 = bytes(range(100))


@pytest.fixture
def obj100(s3, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=BODY100)
    return bucket


@pytest.mark.parametrize("rng,lo,hi", [("bytes=0-9", 0, 9), ("bytes=5-", 5, 99), ("bytes=-7", 93, 99),
                                       ("bytes=90-200", 90, 99), ("bytes=99-99", 99, 99)])
def test_get_range(s3, obj100, rng, lo, hi):
    g = s3.get_object(Bucket=obj100, Key="r", Range=rng)
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert g["ContentRange"] == "bytes %d-%d/100" % (lo, hi)
    assert g["ContentLength"] == hi - lo + 1
    assert g["Body"].read() == BODY100[lo:hi + 1]


def test_head_range(s3, obj100):
    r = s3.head_object(Bucket=obj100, Key="r", Range="bytes=0-9")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert r["ContentLength"] == 10


@pytest.mark.parametrize("rng", ["bytes=100-", "bytes=100-200", "bytes=1000-1001"])
def test_get_invalid_range(s3, obj100, rng):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=obj100, Key="r", Range=rng)
    assert err(e) == ("InvalidRange", 416)
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"].get("content-range") in (None, "bytes */100")


def test_range_across_multipart_parts(s3, bucket):
    p1 = os.urandom(5 * 1024 * 1024)
    p2 = os.urandom(1000)
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=2, Body=p2)["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    whole = p1 + p2
    lo = len(p1) - 10
    g = s3.get_object(Bucket=bucket, Key="mp", Range="bytes=%d-%d" % (lo, lo + 19))
    assert g["Body"].read() == whole[lo:lo + 20]
    assert g["ContentRange"] == "bytes %d-%d/%d" % (lo, lo + 19, len(whole))
    g = s3.get_object(Bucket=bucket, Key="mp", Range="bytes=-1500")
    assert g["Body"].read() == whole[-1500:]


# ---------------------------------------------------------------- conditional reads

@pytest.fixture
def cond_obj(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="c", Body=b"conditional")["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="c")["LastModified"]
    return bucket, etag, lm


def test_get_if_match(s3, cond_obj):
    b, etag, _ = cond_obj
    assert s3.get_object(Bucket=b, Key="c", IfMatch=etag)["Body"].read() == b"conditional"
    assert s3.get_object(Bucket=b, Key="c", IfMatch=etag.strip('"'))["Body"].read() == b"conditional"
    assert s3.get_object(Bucket=b, Key="c", IfMatch="*")["Body"].read() == b"conditional"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="c", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert err(e) == ("PreconditionFailed", 412)


def test_get_if_none_match(s3, cond_obj):
    b, etag, _ = cond_obj
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="c", IfNoneMatch=etag)
    assert status(e) == 304
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"].get("etag") == etag
    r = s3.get_object(Bucket=b, Key="c", IfNoneMatch='"0123456789abcdef0123456789abcdef"')
    assert r["Body"].read() == b"conditional"


def test_get_if_modified_since(s3, cond_obj):
    b, _, lm = cond_obj
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="c", IfModifiedSince=lm)
    assert status(e) == 304
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="c", IfModifiedSince=lm + datetime.timedelta(hours=1))
    assert status(e) == 304
    r = s3.get_object(Bucket=b, Key="c", IfModifiedSince=lm - datetime.timedelta(days=1))
    assert r["Body"].read() == b"conditional"


def test_get_if_unmodified_since(s3, cond_obj):
    b, etag, lm = cond_obj
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="c", IfUnmodifiedSince=lm - datetime.timedelta(days=1))
    assert err(e) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=b, Key="c", IfUnmodifiedSince=lm)["Body"].read() == b"conditional"
    assert s3.get_object(Bucket=b, Key="c",
                         IfUnmodifiedSince=lm + datetime.timedelta(days=1))["Body"].read() == b"conditional"
    # S3: If-Match true + If-Unmodified-Since false -> 200
    r = s3.get_object(Bucket=b, Key="c", IfMatch=etag, IfUnmodifiedSince=lm - datetime.timedelta(days=1))
    assert r["Body"].read() == b"conditional"


def test_head_conditionals(s3, cond_obj):
    b, etag, lm = cond_obj
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="c", IfMatch='"0123456789abcdef0123456789abcdef"')
    assert status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="c", IfNoneMatch=etag)
    assert status(e) == 304
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="c", IfUnmodifiedSince=lm - datetime.timedelta(days=1))
    assert status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="c", IfModifiedSince=lm)
    assert status(e) == 304


# ---------------------------------------------------------------- metadata

def test_metadata_roundtrip(s3, bucket):
    md = {"foo": "bar", "camel-case": "Value With Spaces", "empty-ish": "-"}
    s3.put_object(Bucket=bucket, Key="meta", Body=b"m", Metadata=md, ContentType="application/x-floe",
                  ContentEncoding="gzip", CacheControl="max-age=3600, public",
                  ContentDisposition='attachment; filename="f.bin"', ContentLanguage="de")
    for resp in (s3.head_object(Bucket=bucket, Key="meta"), s3.get_object(Bucket=bucket, Key="meta")):
        assert resp["Metadata"] == md
        assert resp["ContentType"] == "application/x-floe"
        assert resp["ContentEncoding"] == "gzip"
        assert resp["CacheControl"] == "max-age=3600, public"
        assert resp["ContentDisposition"] == 'attachment; filename="f.bin"'
        assert resp.get("ContentLanguage") == "de"


def test_metadata_keys_lowercased(s3, bucket):
    s3.put_object(Bucket=bucket, Key="meta", Body=b"m", Metadata={"MiXeD": "Case"})
    assert s3.head_object(Bucket=bucket, Key="meta")["Metadata"] == {"mixed": "Case"}


def test_default_content_type(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ct", Body=b"x")
    ct = s3.head_object(Bucket=bucket, Key="ct")["ContentType"]
    assert ct in ("binary/octet-stream", "application/octet-stream")


def test_response_header_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"x", ContentType="text/plain")
    g = s3.get_object(Bucket=bucket, Key="o", ResponseContentType="image/png",
                      ResponseContentDisposition="inline", ResponseCacheControl="no-cache")
    assert g["ContentType"] == "image/png"
    assert g["ContentDisposition"] == "inline"
    assert g["CacheControl"] == "no-cache"


def test_metadata_too_large(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="big-meta", Body=b"x", Metadata={"k": "v" * 3000})
    assert status(e) == 400
    assert e.value.response["Error"]["Code"] == "MetadataTooLarge"
    assert_absent(s3, bucket, "big-meta")


# ---------------------------------------------------------------- copy

def test_copy_object_copy_directive(s3, bucket):
    body = os.urandom(3000)
    etag = s3.put_object(Bucket=bucket, Key="src key", Body=body, Metadata={"a": "1"},
                         ContentType="text/x-src")["ETag"]
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src key"})
    assert r["CopyObjectResult"]["ETag"] == etag
    assert r["CopyObjectResult"]["LastModified"] is not None
    g = s3.get_object(Bucket=bucket, Key="dst")
    assert g["Body"].read() == body
    assert g["Metadata"] == {"a": "1"}
    assert g["ContentType"] == "text/x-src"
    assert g["ETag"] == etag


def test_copy_object_replace_directive(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"data", Metadata={"a": "1"}, ContentType="text/x-src")
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="text/x-dst")
    g = s3.get_object(Bucket=bucket, Key="dst")
    assert g["Body"].read() == b"data"
    assert g["Metadata"] == {"b": "2"}
    assert g["ContentType"] == "text/x-dst"
    # the source is unchanged
    assert s3.head_object(Bucket=bucket, Key="src")["Metadata"] == {"a": "1"}


def test_copy_object_across_buckets_and_awkward_key(s3, bucket, bucket_name):
    other = bucket_name[:40] + "-dst"
    s3.create_bucket(Bucket=other)
    try:
        key = "dir/ünï cødé+%.bin"
        s3.put_object(Bucket=bucket, Key=key, Body=b"cross")
        s3.copy_object(Bucket=other, Key=key, CopySource={"Bucket": bucket, "Key": key})
        assert s3.get_object(Bucket=other, Key=key)["Body"].read() == b"cross"
    finally:
        s3.delete_object(Bucket=other, Key="dir/ünï cødé+%.bin")
        s3.delete_bucket(Bucket=other)


def test_copy_object_onto_itself_replace(s3, bucket):
    s3.put_object(Bucket=bucket, Key="self", Body=b"same", Metadata={"v": "1"})
    s3.copy_object(Bucket=bucket, Key="self", CopySource={"Bucket": bucket, "Key": "self"},
                   MetadataDirective="REPLACE", Metadata={"v": "2"})
    g = s3.get_object(Bucket=bucket, Key="self")
    assert g["Body"].read() == b"same"
    assert g["Metadata"] == {"v": "2"}


def test_copy_source_if_match(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="src", Body=b"data")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                       CopySourceIfMatch='"0123456789abcdef0123456789abcdef"')
    assert err(e) == ("PreconditionFailed", 412)
    assert_absent(s3, bucket, "dst")
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                       CopySourceIfNoneMatch=etag)
    assert err(e) == ("PreconditionFailed", 412)
    assert_absent(s3, bucket, "dst")
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                   CopySourceIfMatch=etag)
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"data"


def test_copy_missing_source(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "nope"})
    assert err(e) == ("NoSuchKey", 404)


def test_copy_of_multipart_gets_md5_etag(s3, bucket):
    p1, p2 = os.urandom(5 * 1024 * 1024), b"tail"
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=2, Body=p2)["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    r = s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "mp"})
    assert r["CopyObjectResult"]["ETag"] == '"%s"' % h.md5_hex(p1 + p2)
    assert hashlib.md5(s3.get_object(Bucket=bucket, Key="copy")["Body"].read()).hexdigest() == h.md5_hex(p1 + p2)
