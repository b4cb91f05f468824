"""Multipart uploads through boto3."""
import hashlib
import os

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

import s3helpers as h

MiB = 1024 * 1024


def err(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def complete(s3, bucket, key, upload_id, parts, **kw):
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                        MultipartUpload={"Parts": parts}, **kw)


def test_multipart_with_checksums(s3_ws, bucket):
    s3 = s3_ws
    bodies = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(MiB + 17)]
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", ChecksumAlgorithm="CRC32",
                                    Metadata={"m": "1"}, ContentType="application/x-mp")
    uid = up["UploadId"]
    assert up["Bucket"] == bucket and up["Key"] == "mp" and uid
    parts = []
    for i, b in enumerate(bodies, 1):
        r = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=i, Body=b,
                           ChecksumAlgorithm="CRC32")
        assert r["ETag"] == '"%s"' % h.md5_hex(b)
        assert r.get("ChecksumCRC32") == h.crc32_b64(b)
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    lp = s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert [p["PartNumber"] for p in lp["Parts"]] == [1, 2, 3]
    assert [p["Size"] for p in lp["Parts"]] == [len(b) for b in bodies]
    assert [p["ETag"] for p in lp["Parts"]] == [p["ETag"] for p in parts]
    assert lp["UploadId"] == uid and lp["Bucket"] == bucket and lp["Key"] == "mp"
    assert lp["IsTruncated"] is False
    r = complete(s3, bucket, "mp", uid, parts)
    assert r["ETag"] == '"%s"' % h.multipart_etag(bodies)
    assert r["Key"] == "mp" and r["Bucket"] == bucket
    g = s3.get_object(Bucket=bucket, Key="mp", ChecksumMode="ENABLED")
    data = g["Body"].read()
    assert data == b"".join(bodies)
    assert g["ETag"] == r["ETag"]
    assert g["ContentLength"] == len(data)
    assert g["Metadata"] == {"m": "1"}
    assert g["ContentType"] == "application/x-mp"
    # after completion the upload is gone
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert err(e) == ("NoSuchUpload", 404)


def test_multipart_etag_rule_no_checksums(s3_wr, bucket):
    bodies = [os.urandom(5 * MiB), b"x" * 10]
    uid = s3_wr.create_multipart_upload(Bucket=bucket, Key="e")["UploadId"]
    parts = []
    for i, b in enumerate(bodies, 1):
        r = s3_wr.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=i, Body=b)
        parts.append({"PartNumber": i, "ETag": r["ETag"]})
    r = complete(s3_wr, bucket, "e", uid, parts)
    assert r["ETag"] == '"%s"' % h.multipart_etag(bodies)
    assert s3_wr.head_object(Bucket=bucket, Key="e")["ETag"] == r["ETag"]
    lst = s3_wr.list_objects_v2(Bucket=bucket)["Contents"]
    assert lst[0]["ETag"] == r["ETag"] and lst[0]["Size"] == sum(map(len, bodies))


def test_multipart_single_small_part(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="one")["UploadId"]
    r = s3.upload_part(Bucket=bucket, Key="one", UploadId=uid, PartNumber=1, Body=b"tiny")
    c = complete(s3, bucket, "one", uid, [{"PartNumber": 1, "ETag": r["ETag"]}])
    assert c["ETag"] == '"%s"' % h.multipart_etag([b"tiny"])
    assert s3.get_object(Bucket=bucket, Key="one")["Body"].read() == b"tiny"


def test_multipart_part_overwrite_and_subset(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ow")["UploadId"]
    p1a, p1b = os.urandom(5 * MiB), os.urandom(5 * MiB)
    s3.upload_part(Bucket=bucket, Key="ow", UploadId=uid, PartNumber=1, Body=p1a)
    e1 = s3.upload_part(Bucket=bucket, Key="ow", UploadId=uid, PartNumber=1, Body=p1b)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="ow", UploadId=uid, PartNumber=2, Body=b"unused")["ETag"]
    e3 = s3.upload_part(Bucket=bucket, Key="ow", UploadId=uid, PartNumber=3, Body=b"end")["ETag"]
    lp = s3.list_parts(Bucket=bucket, Key="ow", UploadId=uid)
    assert [p["ETag"] for p in lp["Parts"]] == [e1, e2, e3]
    # complete with parts 1 and 3 only (gaps allowed)
    c = complete(s3, bucket, "ow", uid, [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 3, "ETag": e3}])
    assert c["ETag"] == '"%s"' % h.multipart_etag([p1b, b"end"])
    assert s3.get_object(Bucket=bucket, Key="ow")["Body"].read() == p1b + b"end"


def test_list_parts_pagination(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="lp")["UploadId"]
    try:
        for i in range(1, 6):
            s3.upload_part(Bucket=bucket, Key="lp", UploadId=uid, PartNumber=i, Body=b"p%d" % i)
        r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=2)
        assert [p["PartNumber"] for p in r["Parts"]] == [1, 2]
        assert r["IsTruncated"] is True
        r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=2,
                          PartNumberMarker=int(r["NextPartNumberMarker"]))
        assert [p["PartNumber"] for p in r["Parts"]] == [3, 4]
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="lp", UploadId=uid)


def test_upload_part_copy(s3, bucket):
    src = os.urandom(6 * MiB)
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    p1 = os.urandom(5 * MiB)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    rng = (1000, 1000 + 5 * MiB - 1)
    r = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceRange="bytes=%d-%d" % rng)
    copied = src[rng[0]:rng[1] + 1]
    e2 = r["CopyPartResult"]["ETag"]
    assert e2 == '"%s"' % h.md5_hex(copied)
    r = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=3,
                            CopySource={"Bucket": bucket, "Key": "src"})
    e3 = r["CopyPartResult"]["ETag"]
    assert e3 == '"%s"' % h.md5_hex(src)
    c = complete(s3, bucket, "dst", uid, [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2},
                                          {"PartNumber": 3, "ETag": e3}])
    assert c["ETag"] == '"%s"' % h.multipart_etag([p1, copied, src])
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == p1 + copied + src


def test_upload_part_copy_bad_range(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"0123456789")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
    try:
        with pytest.raises(ClientError) as e:
            s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1,
                                CopySource={"Bucket": bucket, "Key": "src"}, CopySourceRange="bytes=5-100")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] in (400, 416)
        assert e.value.response["Error"]["Code"] in ("InvalidArgument", "InvalidRange")
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="dst", UploadId=uid)


def test_list_multipart_uploads_and_abort(s3, bucket):
    u1 = s3.create_multipart_upload(Bucket=bucket, Key="x/one")["UploadId"]
    u2 = s3.create_multipart_upload(Bucket=bucket, Key="x/two")["UploadId"]
    u3 = s3.create_multipart_upload(Bucket=bucket, Key="y/three")["UploadId"]
    r = s3.list_multipart_uploads(Bucket=bucket)
    got = [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
    assert got == [("x/one", u1), ("x/two", u2), ("y/three", u3)]
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="x/")
    assert [u["UploadId"] for u in r.get("Uploads", [])] == [u1, u2]
    a = s3.abort_multipart_upload(Bucket=bucket, Key="x/two", UploadId=u2)
    assert a["ResponseMetadata"]["HTTPStatusCode"] == 204
    r = s3.list_multipart_uploads(Bucket=bucket)
    assert [u["UploadId"] for u in r.get("Uploads", [])] == [u1, u3]
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="x/two", UploadId=u2, PartNumber=1, Body=b"late")
    assert err(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="x/two", UploadId=u2)
    assert err(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        complete(s3, bucket, "x/two", u2, [{"PartNumber": 1, "ETag": '"%s"' % h.md5_hex(b"late")}])
    assert err(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket=bucket, Key="x/two", UploadId=u2)
    assert err(e) == ("NoSuchUpload", 404)
    for k, u in (("x/one", u1), ("y/three", u3)):
        s3.abort_multipart_upload(Bucket=bucket, Key=k, UploadId=u)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="x/two")


def test_upload_id_bound_to_key(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="right")["UploadId"]
    try:
        with pytest.raises(ClientError) as e:
            s3.upload_part(Bucket=bucket, Key="wrong", UploadId=uid, PartNumber=1, Body=b"x")
        assert err(e) == ("NoSuchUpload", 404)
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="right", UploadId=uid)


def test_upload_part_bad_number(s3, bucket, raw):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="n")["UploadId"]
    try:
        for n in ("0", "10001"):
            r = raw.request("PUT", h.key_path(bucket, "n"), query=[("partNumber", n), ("uploadId", uid)],
                            body=b"x")
            assert r.status == 400 and r.error_code() in ("InvalidArgument", "InvalidPartNumber"), r
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="n", UploadId=uid)


def test_complete_invalid_part(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ip")["UploadId"]
    p1 = os.urandom(5 * MiB)  # big enough that only the part references are wrong
    e1 = s3.upload_part(Bucket=bucket, Key="ip", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    with pytest.raises(ClientError) as e:
        complete(s3, bucket, "ip", uid, [{"PartNumber": 1, "ETag": '"%s"' % h.md5_hex(b"other")}])
    assert err(e) == ("InvalidPart", 400)
    with pytest.raises(ClientError) as e:
        complete(s3, bucket, "ip", uid, [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e1}])
    assert err(e) == ("InvalidPart", 400)
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="ip")
    # the upload survives a failed complete
    c = complete(s3, bucket, "ip", uid, [{"PartNumber": 1, "ETag": e1}])
    assert s3.get_object(Bucket=bucket, Key="ip")["Body"].read() == p1
    assert c["ETag"] == '"%s"' % h.multipart_etag([p1])


def test_complete_invalid_part_order(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="po")["UploadId"]
    try:
        p = [os.urandom(5 * MiB), os.urandom(5 * MiB)]  # sizes valid in any order: only the order is wrong
        e = [s3.upload_part(Bucket=bucket, Key="po", UploadId=uid, PartNumber=i + 1, Body=b)["ETag"]
             for i, b in enumerate(p)]
        with pytest.raises(ClientError) as ex:
            complete(s3, bucket, "po", uid, [{"PartNumber": 2, "ETag": e[1]}, {"PartNumber": 1, "ETag": e[0]}])
        assert err(ex) == ("InvalidPartOrder", 400)
        with pytest.raises(ClientError) as ex:
            complete(s3, bucket, "po", uid, [{"PartNumber": 1, "ETag": e[0]}, {"PartNumber": 1, "ETag": e[0]}])
        assert err(ex) == ("InvalidPartOrder", 400)
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key="po")
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="po", UploadId=uid)


def test_complete_entity_too_small(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ts")["UploadId"]
    try:
        e1 = s3.upload_part(Bucket=bucket, Key="ts", UploadId=uid, PartNumber=1, Body=b"a" * 1024)["ETag"]
        e2 = s3.upload_part(Bucket=bucket, Key="ts", UploadId=uid, PartNumber=2, Body=b"b" * 1024)["ETag"]
        with pytest.raises(ClientError) as ex:
            complete(s3, bucket, "ts", uid, [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}])
        assert err(ex) == ("EntityTooSmall", 400)
        with pytest.raises(ClientError):
            s3.head_object(Bucket=bucket, Key="ts")
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="ts", UploadId=uid)


def test_complete_empty_part_list(raw, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="em")["UploadId"]
    try:
        body = b"<CompleteMultipartUpload></CompleteMultipartUpload>"
        r = raw.request("POST", h.key_path(bucket, "em"), query=[("uploadId", uid)], body=body)
        assert r.status == 400 and r.error_code() in ("MalformedXML", "InvalidRequest"), r
    finally:
        s3.abort_multipart_upload(Bucket=bucket, Key="em", UploadId=uid)


def test_complete_if_none_match(s3, bucket):
    s3.put_object(Bucket=bucket, Key="exists", Body=b"old")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="exists")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="exists", UploadId=uid, PartNumber=1, Body=b"new")["ETag"]
    with pytest.raises(ClientError) as ex:
        complete(s3, bucket, "exists", uid, [{"PartNumber": 1, "ETag": e1}], IfNoneMatch="*")
    assert err(ex) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="exists")["Body"].read() == b"old"
    s3.abort_multipart_upload(Bucket=bucket, Key="exists", UploadId=uid)


def test_multipart_abort_then_no_object(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ab")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="ab", UploadId=uid, PartNumber=1, Body=os.urandom(MiB))
    s3.abort_multipart_upload(Bucket=bucket, Key="ab", UploadId=uid)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="ab")
    assert err(e) == ("NoSuchKey", 404)
    s3.delete_bucket(Bucket=bucket)  # nothing left behind that blocks bucket deletion
    s3.create_bucket(Bucket=bucket)


@pytest.mark.slow
def test_large_multipart_100mib_crc32(s3_ws, bucket, tmp_path):
    size = 100 * MiB + 12345
    src = tmp_path / "big.bin"
    block = h.pattern_block("large-mp", MiB)
    sha = hashlib.sha256()
    with open(src, "wb") as f:
        written, i = 0, 0
        while written < size:
            chunk = block[i % 7:] + block[:i % 7]  # vary blocks so parts differ
            chunk = chunk[:min(MiB, size - written)]
            f.write(chunk)
            sha.update(chunk)
            written += len(chunk)
            i += 1
    cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=16 * MiB, max_concurrency=4)
    s3_ws.upload_file(str(src), bucket, "big", ExtraArgs={"ChecksumAlgorithm": "CRC32"}, Config=cfg)
    head = s3_ws.head_object(Bucket=bucket, Key="big")
    assert head["ContentLength"] == size
    nparts = -(-size // (16 * MiB))
    # expected multipart ETag from the local file's 16 MiB parts
    md5s = []
    with open(src, "rb") as f:
        while True:
            p = f.read(16 * MiB)
            if not p:
                break
            md5s.append(hashlib.md5(p).hexdigest())
    assert head["ETag"] == '"%s"' % h.multipart_etag_from_md5s(md5s)
    assert head["ETag"].endswith('-%d"' % nparts)
    dst = tmp_path / "big.out"
    s3_ws.download_file(bucket, "big", str(dst), Config=cfg)
    sha2 = hashlib.sha256()
    with open(dst, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            sha2.update(chunk)
    assert sha2.hexdigest() == sha.hexdigest()
