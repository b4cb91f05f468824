"""floe serve --object-store s3://BUCKET/PREFIX: floe's data plane keeps its
objects in another S3-compatible store (here a second floe serve, the
"backing" store, started by the test). Through the front node: PutObject,
GetObject (whole, ranged, larger than one 4 MiB read), HeadObject metadata,
conditional writes, listings with delimiters and start-after, CopyObject and a
multipart upload passed through (the ETag is the backing store's MD5-of-MD5s);
the objects really are in the backing bucket under the prefix. The same front
on a third-party store too: versitygw (posix backend), which
scripts/install-deps.sh builds into tests/.cache/bin (the test skips, saying
so, when it could not)."""
import base64
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY, make_client


@pytest.fixture
def pair(floe_factory):
    backing = floe_factory()
    make_client(backing.endpoint).create_bucket(Bucket="shared")
    front = floe_factory(extra_args=[
        "--object-store", "s3://shared/pre", "--object-store-endpoint", backing.endpoint,
        "--object-store-path-style", "--object-store-access-key-id", ACCESS_KEY])
    return backing, front


def _env_secret(monkeypatch):
    monkeypatch.setenv("FLOE_OBJECT_STORE_SECRET_ACCESS_KEY", SECRET_KEY)


@pytest.fixture(autouse=True)
def secret_env(monkeypatch):
    _env_secret(monkeypatch)


def test_objects_live_in_the_backing_store(pair):
    backing, front = pair
    s3, raw = make_client(front.endpoint), make_client(backing.endpoint)
    s3.create_bucket(Bucket="bk1")
    with pytest.raises(ClientError) as ei:
        s3.create_bucket(Bucket="bk1")
    assert ei.value.response["Error"]["Code"] in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists")
    assert "bk1" in [b["Name"] for b in s3.list_buckets()["Buckets"]]

    body = os.urandom(9 * 1024 * 1024 + 123)  # more than two ranged reads
    r = s3.put_object(Bucket="bk1", Key="dir/a b+c.bin", Body=body, ContentType="application/x-test",
                      Metadata={"who": "me"})
    assert r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest()
    got = s3.get_object(Bucket="bk1", Key="dir/a b+c.bin")
    assert got["Body"].read() == body
    assert got["ContentType"] == "application/x-test" and got["Metadata"] == {"who": "me"}
    h = s3.head_object(Bucket="bk1", Key="dir/a b+c.bin")
    assert h["ContentLength"] == len(body) and h["ETag"] == r["ETag"]
    rg = s3.get_object(Bucket="bk1", Key="dir/a b+c.bin", Range="bytes=4194300-4194400")
    assert rg["Body"].read() == body[4194300:4194401]
    # in the backing bucket, under the prefix
    keys = [o["Key"] for o in raw.list_objects_v2(Bucket="shared", Prefix="pre/")["Contents"]]
    assert "pre/o/bk1/dir/a b+c.bin" in keys and "pre/b/bk1" in keys
    assert raw.get_object(Bucket="shared", Key="pre/o/bk1/dir/a b+c.bin")["Body"].read() == body

    # conditional writes are decided by the backing store
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket="bk1", Key="dir/a b+c.bin", Body=b"x", IfNoneMatch="*")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    s3.put_object(Bucket="bk1", Key="dir/new", Body=b"", IfNoneMatch="*")
    assert s3.get_object(Bucket="bk1", Key="dir/new")["Body"].read() == b""

    # listings
    for k in ("x/1", "x/2", "y", "z/3"):
        s3.put_object(Bucket="bk1", Key=k, Body=k.encode())
    top = s3.list_objects_v2(Bucket="bk1", Delimiter="/")
    assert [o["Key"] for o in top["Contents"]] == ["y"]
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["dir/", "x/", "z/"]
    page = s3.list_objects_v2(Bucket="bk1", MaxKeys=2, StartAfter="x/1")
    assert [o["Key"] for o in page["Contents"]] == ["x/2", "y"] and page["IsTruncated"]
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket="bk1", Key="nope")
    assert ei.value.response["Error"]["Code"] == "NoSuchKey"
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket="nob", Key="nope")
    assert ei.value.response["Error"]["Code"] == "NoSuchBucket"

    # copy
    s3.copy_object(Bucket="bk1", Key="copy", CopySource={"Bucket": "bk1", "Key": "dir/a b+c.bin"})
    assert s3.get_object(Bucket="bk1", Key="copy")["Body"].read() == body

    # multipart, passed through
    up = s3.create_multipart_upload(Bucket="bk1", Key="mp", ContentType="text/x-mp")["UploadId"]
    p1, p2 = os.urandom(5 * 1024 * 1024), b"tail"
    e1 = s3.upload_part(Bucket="bk1", Key="mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket="bk1", Key="mp", UploadId=up, PartNumber=2, Body=p2)["ETag"]
    assert [p["PartNumber"] for p in s3.list_parts(Bucket="bk1", Key="mp", UploadId=up)["Parts"]] == [1, 2]
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket="bk1")["Uploads"]] == ["mp"]
    done = s3.complete_multipart_upload(Bucket="bk1", Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    want = hashlib.md5(hashlib.md5(p1).digest() + hashlib.md5(p2).digest()).hexdigest() + "-2"
    assert done["ETag"] == '"%s"' % want
    g = s3.get_object(Bucket="bk1", Key="mp")
    assert g["Body"].read() == p1 + p2 and g["ContentType"] == "text/x-mp"
    assert raw.head_object(Bucket="shared", Key="pre/o/bk1/mp")["ETag"] == done["ETag"]
    gp = s3.get_object(Bucket="bk1", Key="mp", PartNumber=2)
    assert gp["Body"].read() == p2 and gp["PartsCount"] == 2
    hp = s3.head_object(Bucket="bk1", Key="mp", PartNumber=1)
    assert hp["ContentLength"] == len(p1) and hp["ContentRange"] == "bytes 0-%d/%d" % (len(p1) - 1, len(p1) + 4)

    with pytest.raises(ClientError) as ei:
        s3.delete_bucket(Bucket="bk1")
    assert ei.value.response["Error"]["Code"] == "BucketNotEmpty"
    for k in ("dir/a b+c.bin", "dir/new", "x/1", "x/2", "y", "z/3", "copy", "mp"):
        s3.delete_object(Bucket="bk1", Key=k)
    s3.delete_bucket(Bucket="bk1")
    assert "bk1" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # keys are keys, not paths; any byte lists back; times and metadata as on disk
    s3.create_bucket(Bucket="bk2")
    odd = ["../x", "a/./b/../c", "ctrl\x01char", "sp ace+plus"]
    for k in odd:
        s3.put_object(Bucket="bk2", Key=k, Body=k.encode())
        assert s3.get_object(Bucket="bk2", Key=k)["Body"].read() == k.encode()
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket="bk2")["Contents"]) == sorted(odd)
    head = s3.head_object(Bucket="bk2", Key="../x")["LastModified"]
    listed = [o for o in s3.list_objects_v2(Bucket="bk2")["Contents"] if o["Key"] == "../x"][0]
    assert head == listed["LastModified"].replace(microsecond=0)
    big = {"m%02d" % i: "v" * 60 for i in range(30)}  # ~1.9 KiB of user metadata
    s3.put_object(Bucket="bk2", Key="meta", Body=b"m", Metadata=big, ChecksumAlgorithm="SHA256")
    h = s3.head_object(Bucket="bk2", Key="meta", ChecksumMode="ENABLED")
    assert h["Metadata"] == big and h["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(b"m").digest()).decode()
    # the remote key spends PREFIX/o/BUCKET/ of S3's 1024 bytes
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket="bk2", Key="k" * 1020, Body=b"")
    assert ei.value.response["Error"]["Code"] == "KeyTooLongError"
    s3.put_object(Bucket="bk2", Key="k" * (1024 - len("pre/o/bk2/")), Body=b"")

    # the secret never reaches the log
    assert SECRET_KEY not in front.log_text()


# ---- a third-party S3 store as the backing store -------------------------------
VERSITYGW = os.path.join(os.path.dirname(__file__), "..", ".cache", "bin", "versitygw")


@pytest.fixture
def versitygw(tmp_path):
    """versitygw (posix backend) on 127.0.0.1, built by scripts/install-deps.sh."""
    import socket
    import subprocess
    import time
    if not os.access(VERSITYGW, os.X_OK):
        pytest.skip("versitygw is not installed (scripts/install-deps.sh builds it into tests/.cache/bin; "
                    "tests/.cache/versitygw.err says why it did not)")
    from conftest import free_port
    port = free_port()
    root = tmp_path / "vgw"
    root.mkdir()
    log = open(tmp_path / "vgw.log", "wb")
    p = subprocess.Popen([VERSITYGW, "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--region", "us-east-1",
                          "--port", "127.0.0.1:%d" % port, "posix", str(root)],
                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    ep = "http://127.0.0.1:%d" % port
    deadline = time.time() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if p.poll() is not None or time.time() > deadline:
                p.kill()
                raise AssertionError("versitygw did not start: %s" % open(tmp_path / "vgw.log").read()[-2000:])
            time.sleep(0.1)
    yield ep
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
    log.close()


def test_versitygw_as_the_backing_store(floe_factory, versitygw):
    """The same front, on versitygw: objects (streamed PUT, ranged GET, metadata),
    a conditional write, listings, copy, a multipart upload passed through, and
    a PyIceberg table written and read through floe."""
    raw = make_client(versitygw)
    raw.create_bucket(Bucket="shared")
    front = floe_factory(extra_args=[
        "--object-store", "s3://shared/pre", "--object-store-endpoint", versitygw,
        "--object-store-path-style", "--object-store-access-key-id", ACCESS_KEY])
    s3 = make_client(front.endpoint)
    s3.create_bucket(Bucket="vgb")
    body = os.urandom(9 * 1024 * 1024 + 7)
    r = s3.put_object(Bucket="vgb", Key="d/a.bin", Body=body, ContentType="application/x-test", Metadata={"k": "v"})
    assert r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest()
    got = s3.get_object(Bucket="vgb", Key="d/a.bin")
    assert got["Body"].read() == body and got["Metadata"] == {"k": "v"}
    assert got["ContentType"] == "application/x-test"
    rg = s3.get_object(Bucket="vgb", Key="d/a.bin", Range="bytes=4194300-4194400")
    assert rg["Body"].read() == body[4194300:4194401]
    assert raw.get_object(Bucket="shared", Key="pre/o/vgb/d/a.bin")["Body"].read() == body
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket="vgb", Key="d/a.bin", Body=b"x", IfNoneMatch="*")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    for k in ("x/1", "x/2", "y"):
        s3.put_object(Bucket="vgb", Key=k, Body=k.encode())
    top = s3.list_objects_v2(Bucket="vgb", Delimiter="/")
    assert [o["Key"] for o in top["Contents"]] == ["y"]
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["d/", "x/"]
    s3.copy_object(Bucket="vgb", Key="copy", CopySource={"Bucket": "vgb", "Key": "d/a.bin"})
    assert s3.get_object(Bucket="vgb", Key="copy")["Body"].read() == body
    up = s3.create_multipart_upload(Bucket="vgb", Key="mp")["UploadId"]
    p1, p2 = os.urandom(5 * 1024 * 1024), b"tail"
    e1 = s3.upload_part(Bucket="vgb", Key="mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket="vgb", Key="mp", UploadId=up, PartNumber=2, Body=p2)["ETag"]
    done = s3.complete_multipart_upload(Bucket="vgb", Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    want = hashlib.md5(hashlib.md5(p1).digest() + hashlib.md5(p2).digest()).hexdigest() + "-2"
    assert done["ETag"] == '"%s"' % want
    assert s3.get_object(Bucket="vgb", Key="mp")["Body"].read() == p1 + p2
    for k in ("d/a.bin", "x/1", "x/2", "y", "copy", "mp"):
        s3.delete_object(Bucket="vgb", Key=k)
    s3.delete_bucket(Bucket="vgb")
    assert "vgb" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # an Iceberg table through floe's catalog, its files in versitygw
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    from rest_fixtures import load_rest_catalog, s3tables_client
    arn = s3tables_client(front).create_table_bucket(name="vgw-tables")["arn"]
    cat = load_rest_catalog(front, arn, name="vgw")
    cat.create_namespace("n")
    t = cat.create_table(("n", "t"), Schema(NestedField(1, "id", LongType(), required=False)))
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    assert cat.load_table(("n", "t")).scan().to_arrow().num_rows == 3
    wb = t.metadata_location[5:].split("/", 1)[0]
    assert raw.list_objects_v2(Bucket="shared", Prefix="pre/o/%s/" % wb)["KeyCount"] >= 3


def _sock_put(front, path, headers, part, total, query=None):
    """A signed PUT that announces total bytes, sends part of them and hangs up."""
    import socket
    from s3helpers import sign, uri_encode
    host, port = "127.0.0.1", int(front.endpoint.rsplit(":", 1)[1])
    h = {"Host": "%s:%d" % (host, port), "Content-Length": str(total)}
    h.update(headers)
    sign("PUT", path, query, h, "UNSIGNED-PAYLOAD", ACCESS_KEY, SECRET_KEY)
    if query:
        path += "?" + "&".join(uri_encode(k, False) + "=" + uri_encode(v, False) for k, v in query)
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(("PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode())
    s.sendall(part)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(30)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


def test_streamed_put_cut_short_or_refused_leaves_nothing(pair):
    """A PUT or UploadPart of known length streams to the backing store as it
    arrives; a body cut short, or one that fails its Content-MD5, must leave no
    (partial) object there and keep the one before."""
    import time
    backing, front = pair
    s3, raw = make_client(front.endpoint), make_client(backing.endpoint)
    s3.create_bucket(Bucket="stb")
    s3.put_object(Bucket="stb", Key="keep", Body=b"old")
    big = os.urandom(4 * 1024 * 1024)
    _sock_put(front, "/stb/cut", {}, big[: len(big) // 2], len(big))
    _sock_put(front, "/stb/keep", {}, big[:1024 * 1024], len(big))
    time.sleep(0.5)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket="stb", Key="cut")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    keys = [o["Key"] for o in raw.list_objects_v2(Bucket="shared", Prefix="pre/o/stb/").get("Contents", [])]
    assert keys == ["pre/o/stb/keep"]
    assert s3.get_object(Bucket="stb", Key="keep")["Body"].read() == b"old"
    # all bytes sent, but the wrong Content-MD5: BadDigest, nothing replaced
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket="stb", Key="keep", Body=big, ContentMD5=base64.b64encode(b"0" * 16).decode())
    assert ei.value.response["Error"]["Code"] == "BadDigest"
    assert s3.get_object(Bucket="stb", Key="keep")["Body"].read() == b"old"
    # a part cut short: no part in the backing store's upload
    up = s3.create_multipart_upload(Bucket="stb", Key="mp")["UploadId"]
    _sock_put(front, "/stb/mp", {}, big[:1000], len(big), query=[("partNumber", "1"), ("uploadId", up)])
    time.sleep(0.5)
    assert s3.list_parts(Bucket="stb", Key="mp", UploadId=up).get("Parts", []) == []
    e1 = s3.upload_part(Bucket="stb", Key="mp", UploadId=up, PartNumber=1, Body=big)["ETag"]
    assert e1 == '"%s"' % hashlib.md5(big).hexdigest()
    s3.abort_multipart_upload(Bucket="stb", Key="mp", UploadId=up)
