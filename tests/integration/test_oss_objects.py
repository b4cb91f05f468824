"""The OSS object API on the data plane, driven by the OSS Python SDK's
object client: put/get/head/delete, ranges, x-oss-meta-*, copy, ListObjects
and ListObjectsV2, DeleteMultipleObjects, multipart (initiate, upload part,
list parts, complete, abort) and the SDK's uploader; x-oss-hash-crc64ecma as
the SDK's own Crc64 computes it on PUT, parts, Complete, GET and HEAD; a
Content-MD5 or CRC-64 that does not match the body is refused and stores
nothing; OSS's XML errors (Code, Message, RequestId, HostId, EC) parsed by
the SDK, while boto3 keeps S3's shapes for the same objects."""
import io
import xml.etree.ElementTree as ET

import pytest
from alibabacloud_oss_v2.crc import Crc64

from conftest import unique_bucket_name
from oss_fixtures import *  # noqa: F401,F403


def crc64(data):
    c = Crc64(0)
    c.update(data)
    return str(c.sum64())


@pytest.fixture
def obucket(ossc, request):
    b = unique_bucket_name(request.node.name[:30])
    ossc.put_bucket(oss.PutBucketRequest(bucket=b))
    return b


def test_put_get_head_meta_crc(ossc, obucket, s3):
    b, body = obucket, bytes(range(256)) * 41
    r = ossc.put_object(oss.PutObjectRequest(bucket=b, key="d/x.bin", body=body, metadata={"Owner": "ana"},
                                             content_type="application/x-test"))
    assert r.hash_crc64 == crc64(body) and r.headers["x-oss-request-id"] == r.request_id
    h = ossc.head_object(oss.HeadObjectRequest(bucket=b, key="d/x.bin"))
    assert h.content_length == len(body) and h.hash_crc64 == crc64(body)
    assert h.metadata == {"owner": "ana"} and h.content_type == "application/x-test"
    g = ossc.get_object(oss.GetObjectRequest(bucket=b, key="d/x.bin"))
    assert g.body.content == body and g.hash_crc64 == crc64(body)
    rg = ossc.get_object(oss.GetObjectRequest(bucket=b, key="d/x.bin", range_header="bytes=10-19"))
    assert rg.body.content == body[10:20] and rg.status_code == 206
    # the same object through boto3: S3's metadata names, no OSS headers
    hb = s3.head_object(Bucket=b, Key="d/x.bin")
    assert hb["Metadata"] == {"owner": "ana"}
    assert not any(k.startswith("x-oss-") for k in hb["ResponseMetadata"]["HTTPHeaders"])


def test_get_object_to_file_checks_crc(ossc, obucket, tmp_path, floe):
    body = b"crc checked download " * 5000
    ossc.put_object(oss.PutObjectRequest(bucket=obucket, key="f", body=body))
    # get_object_to_file makes attempts-1 tries: give it the SDK's default retries
    oss.Client(oss_config(floe.endpoint, retry_max_attempts=3)).get_object_to_file(oss.GetObjectRequest(bucket=obucket, key="f"), str(tmp_path / "f"))
    assert (tmp_path / "f").read_bytes() == body


def test_copy_list_delete(ossc, obucket):
    b = obucket
    for k in ("a/1", "a/2", "a/sub/3", "b/4"):
        ossc.put_object(oss.PutObjectRequest(bucket=b, key=k, body=k.encode()))
    ossc.copy_object(oss.CopyObjectRequest(bucket=b, key="a/copy", source_bucket=b, source_key="a/1"))
    assert ossc.get_object(oss.GetObjectRequest(bucket=b, key="a/copy")).body.content == b"a/1"
    v1 = ossc.list_objects(oss.ListObjectsRequest(bucket=b, prefix="a/", delimiter="/"))
    assert [o.key for o in v1.contents] == ["a/1", "a/2", "a/copy"]
    assert [p.prefix for p in v1.common_prefixes] == ["a/sub/"]
    v2 = ossc.list_objects_v2(oss.ListObjectsV2Request(bucket=b, max_keys=2))
    assert v2.is_truncated and len(v2.contents) == 2
    rest = ossc.list_objects_v2(oss.ListObjectsV2Request(bucket=b, continuation_token=v2.next_continuation_token))
    assert [o.key for o in v2.contents + rest.contents] == ["a/1", "a/2", "a/copy", "a/sub/3", "b/4"]
    d = ossc.delete_multiple_objects(oss.DeleteMultipleObjectsRequest(
        bucket=b, objects=[oss.DeleteObject(key="a/1"), oss.DeleteObject(key="a/sub/3")]))
    assert sorted(x.key for x in d.deleted_objects) == ["a/1", "a/sub/3"]
    ossc.delete_object(oss.DeleteObjectRequest(bucket=b, key="b/4"))
    left = ossc.list_objects_v2(oss.ListObjectsV2Request(bucket=b))
    assert [o.key for o in left.contents] == ["a/2", "a/copy"]


def test_multipart_and_uploader(ossc, obucket):
    b = obucket
    p1, p2 = b"a" * (5 << 20), b"tail part"
    init = ossc.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(bucket=b, key="mp.bin"))
    r1 = ossc.upload_part(oss.UploadPartRequest(bucket=b, key="mp.bin", upload_id=init.upload_id, part_number=1, body=p1))
    r2 = ossc.upload_part(oss.UploadPartRequest(bucket=b, key="mp.bin", upload_id=init.upload_id, part_number=2, body=p2))
    assert r1.hash_crc64 == crc64(p1) and r2.hash_crc64 == crc64(p2)
    parts = ossc.list_parts(oss.ListPartsRequest(bucket=b, key="mp.bin", upload_id=init.upload_id)).parts
    assert [(p.part_number, p.size) for p in parts] == [(1, len(p1)), (2, len(p2))]
    c = ossc.complete_multipart_upload(oss.CompleteMultipartUploadRequest(
        bucket=b, key="mp.bin", upload_id=init.upload_id,
        complete_multipart_upload=oss.CompleteMultipartUpload(parts=[
            oss.UploadPart(part_number=1, etag=r1.etag), oss.UploadPart(part_number=2, etag=r2.etag)])))
    assert c.hash_crc64 == crc64(p1 + p2)
    g = ossc.get_object(oss.GetObjectRequest(bucket=b, key="mp.bin"))
    assert g.body.content == p1 + p2 and g.hash_crc64 == crc64(p1 + p2)
    ab = ossc.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(bucket=b, key="ab"))
    ossc.abort_multipart_upload(oss.AbortMultipartUploadRequest(bucket=b, key="ab", upload_id=ab.upload_id))
    se = oss_error(ossc.list_parts, oss.ListPartsRequest(bucket=b, key="ab", upload_id=ab.upload_id))
    assert se.code == "NoSuchUpload"
    big = bytes(range(251)) * (12 * 4200)
    up = ossc.uploader().upload_from(oss.PutObjectRequest(bucket=b, key="up.bin"), io.BytesIO(big))
    assert up.hash_crc64 == crc64(big)
    assert ossc.get_object(oss.GetObjectRequest(bucket=b, key="up.bin")).body.content == big


def test_bad_digests_store_nothing(ossc, obucket, floe):
    b = obucket
    good = b"the real body"
    r = oss_raw(floe.s3_port, "PUT", "/%s/md5" % b, bucket=b, key="md5", body=good,
                headers={"Content-MD5": content_md5(b"something else")})
    assert r.status_code == 400 and ET.fromstring(r.content).findtext("Code") == "BadDigest"
    r = oss_raw(floe.s3_port, "PUT", "/%s/crc" % b, bucket=b, key="crc", body=good,
                headers={"x-oss-hash-crc64ecma": str((int(crc64(good)) + 1) % (1 << 64))})
    assert r.status_code == 400 and ET.fromstring(r.content).findtext("Code") == "InvalidDigest"
    for k in ("md5", "crc"):
        assert oss_error(ossc.head_object, oss.HeadObjectRequest(bucket=b, key=k)).status_code == 404
    r = oss_raw(floe.s3_port, "PUT", "/%s/crc" % b, bucket=b, key="crc", body=good,
                headers={"x-oss-hash-crc64ecma": crc64(good), "Content-MD5": content_md5(good)})
    assert r.status_code == 200 and r.headers["x-oss-hash-crc64ecma"] == crc64(good)


def test_oss_error_xml(ossc, obucket, s3):
    se = oss_error(ossc.get_object, oss.GetObjectRequest(bucket=obucket, key="missing"))
    assert se.status_code == 404 and se.code == "NoSuchKey" and se.ec == "0000-00000000"
    assert se.request_id == se.headers["x-oss-request-id"]
    doc = ET.fromstring(se.snapshot)
    assert doc.tag == "Error" and doc.findtext("HostId") and doc.findtext("RequestId") == se.request_id
    se = oss_error(ossc.get_bucket_info if hasattr(ossc, "get_bucket_info") else ossc.list_objects_v2,
                   oss.ListObjectsV2Request(bucket="no-such-" + obucket) if not hasattr(ossc, "get_bucket_info")
                   else oss.GetBucketInfoRequest(bucket="no-such-" + obucket))
    assert se.status_code in (404, 501)
    # boto3 on the same object: S3's error, no OSS fields
    import botocore.exceptions
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.get_object(Bucket=obucket, Key="missing")
    hh = ei.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert "x-amz-request-id" in hh and "x-oss-request-id" not in hh


def test_upload_part_copy_and_list_uploads(ossc, obucket):
    """UploadPartCopy with x-oss-copy-source-range and ListMultipartUploads, as the SDK calls them."""
    b = obucket
    src = bytes(range(256)) * (24 * 1024)  # 6 MiB
    ossc.put_object(oss.PutObjectRequest(bucket=b, key="src é.bin", body=src))
    init = ossc.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(bucket=b, key="pc/dst.bin"))
    other = ossc.initiate_multipart_upload(oss.InitiateMultipartUploadRequest(bucket=b, key="pc/other.bin"))
    ups = ossc.list_multipart_uploads(oss.ListMultipartUploadsRequest(bucket=b, prefix="pc/")).uploads
    assert sorted((u.key, u.upload_id) for u in ups) == sorted(
        [("pc/dst.bin", init.upload_id), ("pc/other.bin", other.upload_id)])
    c1 = ossc.upload_part_copy(oss.UploadPartCopyRequest(
        bucket=b, key="pc/dst.bin", upload_id=init.upload_id, part_number=1, source_bucket=b,
        source_key="src é.bin", source_range="bytes=0-%d" % ((5 << 20) - 1)))
    c2 = ossc.upload_part_copy(oss.UploadPartCopyRequest(
        bucket=b, key="pc/dst.bin", upload_id=init.upload_id, part_number=2, source_bucket=b,
        source_key="src é.bin", source_range="bytes=%d-%d" % (5 << 20, len(src) - 1)))
    done = ossc.complete_multipart_upload(oss.CompleteMultipartUploadRequest(
        bucket=b, key="pc/dst.bin", upload_id=init.upload_id,
        complete_multipart_upload=oss.CompleteMultipartUpload(parts=[
            oss.UploadPart(part_number=1, etag=c1.etag), oss.UploadPart(part_number=2, etag=c2.etag)])))
    assert done.hash_crc64 == crc64(src)  # parts made by copy carry their CRC-64 too
    g = ossc.get_object(oss.GetObjectRequest(bucket=b, key="pc/dst.bin"))
    assert g.body.content == src and g.hash_crc64 == crc64(src)
    ossc.abort_multipart_upload(oss.AbortMultipartUploadRequest(bucket=b, key="pc/other.bin", upload_id=other.upload_id))
    assert not ossc.list_multipart_uploads(oss.ListMultipartUploadsRequest(bucket=b, prefix="pc/")).uploads
