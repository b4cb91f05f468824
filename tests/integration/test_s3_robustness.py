"""Robustness: uploads cut off by the client or by killing the server leave no
object and no leftovers; racing writers never produce a mixed object; reads
during overwrites are never torn."""
import hashlib
import http.client
import os
import socket
import struct
import threading
import time

import pytest
from botocore.exceptions import ClientError

import s3helpers as h
from conftest import ACCESS_KEY, SECRET_KEY, make_client, unique_bucket_name

pytestmark = pytest.mark.single_node("temp and blob bytes in DATA_DIR/objects, SIGKILL of the process receiving an upload")

MiB = 1024 * 1024
GiB = 1024 * MiB
CUT_AFTER = 300 * MiB


def blobs_usage(data_dir):
    return h.dir_usage(data_dir)


def wait_for(pred, timeout=15.0, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def start_big_put(port, bucket, key, total=GiB):
    """Opens a connection and sends the headers of a signed UNSIGNED-PAYLOAD
    PUT of `total` bytes; returns the connection's socket."""
    path = h.key_path(bucket, key)
    headers = {"Host": "127.0.0.1:%d" % port, "Content-Length": str(total)}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = "PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
    s.sendall(head.encode())
    return s


def send_pattern(sock, nbytes, block=None):
    block = block or h.pattern_block("big-upload", MiB)
    sent = 0
    while sent < nbytes:
        n = min(len(block), nbytes - sent)
        sock.sendall(block[:n])
        sent += n
    return sent


def assert_upload_in_flight(srv, base_bytes):
    """The partial upload must be visible as temp data in DATA_DIR, so the
    leftover checks below are not vacuous."""
    assert wait_for(lambda: blobs_usage(srv.data_dir)[0] >= base_bytes + 100 * MiB and h.tmp_files(srv.data_dir),
                    timeout=10), "no temp data in DATA_DIR during the upload: %r" % (blobs_usage(srv.data_dir),)


def snapshot(srv, c, bucket):
    """Creates a baseline object and returns the non-SQLite byte usage."""
    c.put_object(Bucket=bucket, Key="baseline", Body=b"baseline object")
    return blobs_usage(srv.data_dir)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["fin", "rst"])
def test_client_cut_mid_upload(floe_factory, how):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("cut")
    c.create_bucket(Bucket=b)
    base_bytes, base_files = snapshot(srv, c, b)
    s = start_big_put(srv.s3_port, b, "huge")
    try:
        send_pattern(s, CUT_AFTER)
        assert_upload_in_flight(srv, base_bytes)
        # while the upload is in flight the object must not be visible
        with pytest.raises(ClientError) as e:
            c.head_object(Bucket=b, Key="huge")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    finally:
        if how == "rst":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    # the server notices, drops the temp file, and stays healthy
    assert wait_for(lambda: blobs_usage(srv.data_dir)[0] == base_bytes, timeout=20), \
        "temp data not released after client cut: %r" % (blobs_usage(srv.data_dir),)
    with pytest.raises(ClientError) as e:
        c.head_object(Bucket=b, Key="huge")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert c.get_object(Bucket=b, Key="baseline")["Body"].read() == b"baseline object"
    assert srv.stop() == 0
    srv.start()
    c = make_client(srv.endpoint)
    with pytest.raises(ClientError):
        c.head_object(Bucket=b, Key="huge")
    assert [o["Key"] for o in c.list_objects_v2(Bucket=b)["Contents"]] == ["baseline"]
    assert h.tmp_files(srv.data_dir) == []
    assert blobs_usage(srv.data_dir) == (base_bytes, base_files)


@pytest.mark.slow
def test_client_process_killed_mid_upload(floe_factory, tmp_path):
    """Same as above, but the client is a separate process killed with SIGKILL."""
    import subprocess
    import sys
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("killclient")
    c.create_bucket(Bucket=b)
    base = snapshot(srv, c, b)
    progress = tmp_path / "progress"
    script = r'''
import sys, time
sys.path.insert(0, %r)
import robust_client
robust_client.main(%d, %r, %r, %r)
''' % (os.path.dirname(__file__), srv.s3_port, b, "huge", str(progress))
    p = subprocess.Popen([sys.executable, "-c", script])
    try:
        assert wait_for(lambda: progress.exists() and int(progress.read_text() or 0) >= CUT_AFTER, timeout=60), \
            "client made no progress"
        assert_upload_in_flight(srv, base[0])
    finally:
        p.kill()
        p.wait()
    assert wait_for(lambda: blobs_usage(srv.data_dir)[0] == base[0], timeout=20), \
        "temp data not released after client kill"
    with pytest.raises(ClientError):
        c.head_object(Bucket=b, Key="huge")
    srv.stop()
    srv.start()
    c = make_client(srv.endpoint)
    with pytest.raises(ClientError):
        c.head_object(Bucket=b, Key="huge")
    assert h.tmp_files(srv.data_dir) == []
    assert blobs_usage(srv.data_dir) == base


@pytest.mark.slow
def test_server_sigkill_mid_upload(floe_factory):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("killsrv")
    c.create_bucket(Bucket=b)
    base_bytes, base_files = snapshot(srv, c, b)
    # an earlier version of the key must survive intact
    c.put_object(Bucket=b, Key="huge", Body=b"old version")
    base_bytes, base_files = blobs_usage(srv.data_dir)
    s = start_big_put(srv.s3_port, b, "huge")
    try:
        send_pattern(s, CUT_AFTER)
        assert_upload_in_flight(srv, base_bytes)
        srv.kill()
    finally:
        s.close()
    assert srv.returncode == -9
    srv.start()
    c = make_client(srv.endpoint)
    assert c.get_object(Bucket=b, Key="huge")["Body"].read() == b"old version"
    assert c.get_object(Bucket=b, Key="baseline")["Body"].read() == b"baseline object"
    assert h.tmp_files(srv.data_dir) == []
    assert blobs_usage(srv.data_dir) == (base_bytes, base_files)


@pytest.mark.slow
def test_server_sigkill_mid_multipart_part(floe_factory):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("killmp")
    c.create_bucket(Bucket=b)
    uid = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    p1 = os.urandom(5 * MiB)
    e1 = c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    base = blobs_usage(srv.data_dir)
    path = h.key_path(b, "mp")
    headers = {"Host": "127.0.0.1:%d" % srv.s3_port, "Content-Length": str(GiB)}
    q = [("partNumber", "2"), ("uploadId", uid)]
    h.sign("PUT", path, q, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", srv.s3_port), timeout=30)
    try:
        s.sendall(("PUT %s?partNumber=2&uploadId=%s HTTP/1.1\r\n" % (path, h.uri_encode(uid, False))
                   + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n").encode())
        send_pattern(s, 150 * MiB)
        assert_upload_in_flight(srv, base[0])
        srv.kill()
    finally:
        s.close()
    srv.start()
    c = make_client(srv.endpoint)
    parts = c.list_parts(Bucket=b, Key="mp", UploadId=uid)["Parts"]
    assert [p["PartNumber"] for p in parts] == [1]
    assert h.tmp_files(srv.data_dir) == []
    assert blobs_usage(srv.data_dir) == base
    e2 = c.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=2, Body=b"end")["ETag"]
    c.complete_multipart_upload(Bucket=b, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert c.get_object(Bucket=b, Key="mp")["Body"].read() == p1 + b"end"


def test_incomplete_body_then_connection_close(floe, s3, bucket):
    """Fewer bytes than Content-Length and then EOF: nothing stored, server fine."""
    s = start_big_put(floe.s3_port, bucket, "short", total=10 * MiB)
    send_pattern(s, 3 * MiB)
    s.shutdown(socket.SHUT_WR)
    try:
        s.settimeout(10)
        s.recv(4096)  # a 400 IncompleteBody or a close are both fine
    except OSError:
        pass
    s.close()
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="short")
    s3.put_object(Bucket=bucket, Key="after", Body=b"ok")
    assert s3.get_object(Bucket=bucket, Key="after")["Body"].read() == b"ok"


def test_missing_content_length(floe, s3, bucket):
    path = h.key_path(bucket, "nolen")
    headers = {"Host": "127.0.0.1:%d" % floe.s3_port}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    c = http.client.HTTPConnection("127.0.0.1", floe.s3_port, timeout=10)
    c.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        c.putheader(k, v)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    # no body at all is a valid empty PUT (200) or S3's 411 MissingContentLength
    assert r.status in (200, 411), (r.status, body)
    if r.status == 411:
        assert h.error_code(body) == "MissingContentLength"


@pytest.mark.slow
def test_racing_puts_never_mix(floe, bucket):
    size = 20 * MiB
    a = h.pattern_block("race-A", size)
    bb = h.pattern_block("race-B", size)
    md5 = {hashlib.md5(a).hexdigest(): "A", hashlib.md5(bb).hexdigest(): "B"}
    clients = [make_client(floe.endpoint) for _ in range(3)]
    rounds = 10
    reads = [0]
    errors = []
    bad_reads = []
    stop = threading.Event()

    def writer(client, body):
        try:
            client.put_object(Bucket=bucket, Key="race", Body=body)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def reader():
        c = make_client(floe.endpoint)
        while not stop.is_set():
            try:
                g = c.get_object(Bucket=bucket, Key="race")
                data = g["Body"].read()
                reads[0] += 1
                d = hashlib.md5(data).hexdigest()
                if d not in md5 or g["ETag"].strip('"') != d:
                    bad_reads.append((len(data), d, g["ETag"]))
            except ClientError as e:
                if e.response["ResponseMetadata"]["HTTPStatusCode"] != 404:
                    bad_reads.append(repr(e))

    rt = threading.Thread(target=reader)
    rt.start()
    winners = []
    try:
        for _ in range(rounds):
            ts = [threading.Thread(target=writer, args=(clients[0], a)),
                  threading.Thread(target=writer, args=(clients[1], bb))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            g = clients[2].get_object(Bucket=bucket, Key="race")
            data = g["Body"].read()
            d = hashlib.md5(data).hexdigest()
            assert d in md5, "object is neither body A nor body B (len %d)" % len(data)
            assert g["ETag"] == '"%s"' % d
            assert g["ContentLength"] == size
            winners.append(md5[d])
    finally:
        stop.set()
        rt.join()
    assert errors == []
    assert bad_reads == [], bad_reads[:5]
    assert reads[0] > 0


@pytest.mark.slow
def test_racing_if_none_match_one_winner(floe, bucket):
    """Concurrent PutObject If-None-Match:* on one key: exactly one wins, the
    others get 412 (or 409 ConditionalRequestConflict), object = the winner."""
    n = 6
    bodies = [h.pattern_block("inm-%d" % i, 2 * MiB) for i in range(n)]
    results = [None] * n
    clients = [make_client(floe.endpoint) for _ in range(n)]
    barrier = threading.Barrier(n)

    def go(i):
        barrier.wait()
        try:
            clients[i].put_object(Bucket=bucket, Key="once", Body=bodies[i], IfNoneMatch="*")
            results[i] = 200
        except ClientError as e:
            results[i] = e.response["ResponseMetadata"]["HTTPStatusCode"]

    ts = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results.count(200) == 1, results
    assert all(r in (200, 409, 412) for r in results), results
    winner = results.index(200)
    data = clients[0].get_object(Bucket=bucket, Key="once")["Body"].read()
    assert data == bodies[winner]


@pytest.mark.slow
def test_aws_chunked_upload_cut_mid_stream(floe_factory):
    """Signed aws-chunked stream of a declared 1 GiB object, cut after ~300 MB."""
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("cutchunk")
    c.create_bucket(Bucket=b)
    base_bytes, base_files = snapshot(srv, c, b)
    path = h.key_path(b, "huge")
    chunk = MiB
    headers = {"Host": "127.0.0.1:%d" % srv.s3_port, "Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(GiB), "Content-Length": str(h.encoded_length(GiB, chunk))}
    _, seed, scope, date = h.sign("PUT", path, None, headers, h.STREAMING, ACCESS_KEY, SECRET_KEY)
    skey = h.signing_key(SECRET_KEY, date[:8], "us-east-1", "s3")
    block = h.pattern_block("chunked-cut", chunk)
    s = socket.create_connection(("127.0.0.1", srv.s3_port), timeout=30)
    try:
        s.sendall(("PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        prev = seed
        for _ in range(CUT_AFTER // chunk):
            prev = h.chunk_signature(skey, date, scope, prev, block)
            s.sendall(("%x;chunk-signature=%s\r\n" % (chunk, prev)).encode() + block + b"\r\n")
        assert_upload_in_flight(srv, base_bytes)
    finally:
        s.close()
    assert wait_for(lambda: blobs_usage(srv.data_dir)[0] == base_bytes, timeout=20), \
        "temp data not released after a cut aws-chunked upload"
    with pytest.raises(ClientError):
        c.head_object(Bucket=b, Key="huge")
    assert srv.stop() == 0
    srv.start()
    assert h.tmp_files(srv.data_dir) == []
    assert blobs_usage(srv.data_dir) == (base_bytes, base_files)


def test_upload_part_cut_mid_stream(floe_factory):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("cutpart")
    c.create_bucket(Bucket=b)
    uid = c.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    base = blobs_usage(srv.data_dir)[0]
    path = h.key_path(b, "mp")
    q = [("partNumber", "1"), ("uploadId", uid)]
    headers = {"Host": "127.0.0.1:%d" % srv.s3_port, "Content-Length": str(64 * MiB)}
    h.sign("PUT", path, q, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", srv.s3_port), timeout=30)
    try:
        s.sendall(("PUT %s?partNumber=1&uploadId=%s HTTP/1.1\r\n" % (path, h.uri_encode(uid, False))
                   + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n").encode())
        send_pattern(s, 20 * MiB)
    finally:
        s.close()
    assert wait_for(lambda: blobs_usage(srv.data_dir)[0] == base, timeout=15)
    assert c.list_parts(Bucket=b, Key="mp", UploadId=uid).get("Parts", []) == []


def test_client_disconnects_mid_download(floe, s3, bucket):
    s3.put_object(Bucket=bucket, Key="dl", Body=h.pattern_block("dl", 30 * MiB))
    for _ in range(5):
        path = h.key_path(bucket, "dl")
        headers = {"Host": "127.0.0.1:%d" % floe.s3_port}
        h.sign("GET", path, None, headers, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
        s = socket.create_connection(("127.0.0.1", floe.s3_port), timeout=10)
        s.sendall(("GET %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        s.recv(65536)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    assert s3.get_object(Bucket=bucket, Key="dl")["ContentLength"] == 30 * MiB
    assert floe.alive()


@pytest.mark.parametrize("garbage", [
    b"\x00\x01\x02garbage\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzzzz\r\n",
    b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 70000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n",
], ids=["binary", "no-target", "bad-version", "negative-length", "cl-and-te", "bad-chunk", "long-target",
        "huge-header", "many-headers"])
def test_malformed_http_gets_4xx_and_server_survives(floe, s3, garbage):
    s = socket.create_connection(("127.0.0.1", floe.s3_port), timeout=10)
    data = b""
    try:
        try:
            s.sendall(garbage)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    finally:
        s.close()
    if data:
        status = int(data.split()[1])
        assert 400 <= status < 500 or status == 505, data[:300]
    assert floe.alive()
    s3.list_buckets()


@pytest.mark.slow
def test_object_larger_than_4gib(floe, s3, bucket):
    """Sizes and offsets past 2^31 and 2^32: a 1 GiB+7 source copied five times
    into one multipart object (UploadPartCopy), then HEAD, list, ranged GETs."""
    block = h.pattern_block("big-upload", MiB)   # the bytes send_pattern sends
    src_len = GiB + 7
    s = start_big_put(floe.s3_port, bucket, "src", total=src_len)
    try:
        send_pattern(s, src_len, block)
        s.settimeout(120)
        resp = s.recv(4096)
    finally:
        s.close()
    assert resp.startswith(b"HTTP/1.1 200"), resp[:300]

    def src_byte_range(a, n):
        return bytes(block[(a + i) % MiB] for i in range(n))

    uid = s3.create_multipart_upload(Bucket=bucket, Key="big")["UploadId"]
    parts = []
    for i in range(1, 6):
        r = s3.upload_part_copy(Bucket=bucket, Key="big", UploadId=uid, PartNumber=i,
                                CopySource={"Bucket": bucket, "Key": "src"})
        parts.append({"PartNumber": i, "ETag": r["CopyPartResult"]["ETag"]})
    assert len({p["ETag"] for p in parts}) == 1
    s3.complete_multipart_upload(Bucket=bucket, Key="big", UploadId=uid, MultipartUpload={"Parts": parts})
    total = 5 * src_len
    assert s3.head_object(Bucket=bucket, Key="big")["ContentLength"] == total
    lst = s3.list_objects_v2(Bucket=bucket, Prefix="big")["Contents"]
    assert lst[0]["Size"] == total
    for off in (2 ** 31 - 5, 2 ** 32 - 5, 4 * src_len - 3, total - 10):
        g = s3.get_object(Bucket=bucket, Key="big", Range="bytes=%d-%d" % (off, off + 9))
        assert g["ContentRange"] == "bytes %d-%d/%d" % (off, off + 9, total)
        got = g["Body"].read()
        exp = bytes(src_byte_range(x % src_len, 1)[0] for x in range(off, off + 10))
        assert got == exp, off
    g = s3.get_object(Bucket=bucket, Key="big", Range="bytes=-5")
    assert g["ContentRange"] == "bytes %d-%d/%d" % (total - 5, total - 1, total)
    g = s3.head_object(Bucket=bucket, Key="big", PartNumber=5)
    assert g["ContentLength"] == src_len
    s3.delete_object(Bucket=bucket, Key="big")
    s3.delete_object(Bucket=bucket, Key="src")


def test_idle_and_slow_connections_do_not_block_others(floe, s3, bucket):
    """Hundreds of half-open requests, a dribbling upload and a download that
    is never read must not delay ordinary requests on other connections."""
    s3.put_object(Bucket=bucket, Key="big", Body=h.pattern_block("stall", 50 * MiB))
    s3.put_object(Bucket=bucket, Key="small", Body=b"small")
    socks = []
    try:
        for i in range(300):
            s = socket.create_connection(("127.0.0.1", floe.s3_port), timeout=10)
            s.sendall(b"GET /%s/small HTTP/1.1\r\nHost: x\r\n" % bucket.encode())  # headers never finished
            socks.append(s)
        # a download nobody reads
        path = h.key_path(bucket, "big")
        headers = {"Host": "127.0.0.1:%d" % floe.s3_port}
        h.sign("GET", path, None, headers, h.EMPTY_SHA256, ACCESS_KEY, SECRET_KEY)
        s = socket.create_connection(("127.0.0.1", floe.s3_port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(("GET %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        socks.append(s)
        # an upload that dribbles
        up = start_big_put(floe.s3_port, bucket, "dribble", total=10 * MiB)
        up.sendall(b"x" * 1000)
        socks.append(up)
        time.sleep(0.3)
        t0 = time.time()
        for i in range(20):
            assert s3.get_object(Bucket=bucket, Key="small")["Body"].read() == b"small"
            up.sendall(b"x" * 100)
        s3.put_object(Bucket=bucket, Key="during", Body=os.urandom(2 * MiB))
        elapsed = time.time() - t0
        assert elapsed < 5, "ordinary requests took %.1fs next to idle/slow connections" % elapsed
    finally:
        for s in socks:
            s.close()
    assert floe.alive()
