"""`floe serve` process behaviour: graceful SIGTERM with open and busy
connections, exclusive data dir, bad command lines."""
import os
import signal
import socket
import subprocess
import time

import pytest
from botocore.exceptions import ClientError

import s3helpers as h
from conftest import ACCESS_KEY, FLOE_BIN, SECRET_KEY, free_port, make_client, unique_bucket_name

pytestmark = pytest.mark.single_node('SIGTERM of one process with its open connections, its exclusive data dir')

MiB = 1024 * 1024


def test_sigterm_with_idle_keepalive_connection(floe_factory):
    srv = floe_factory()
    s = socket.create_connection(("127.0.0.1", srv.s3_port), timeout=5)
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(15)
        srv._mark_stopped()
        assert rc == 0
        assert time.time() - t0 < 10, "SIGTERM waited for an idle keep-alive connection"
    finally:
        s.close()


def test_sigterm_during_upload(floe_factory):
    srv = floe_factory()
    c = make_client(srv.endpoint)
    b = unique_bucket_name("term")
    c.create_bucket(Bucket=b)
    base = h.dir_usage(srv.data_dir)
    total = 64 * MiB
    path = h.key_path(b, "inflight")
    headers = {"Host": "127.0.0.1:%d" % srv.s3_port, "Content-Length": str(total)}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", srv.s3_port), timeout=20)
    block = h.pattern_block("term", MiB)
    resp = b""
    try:
        s.sendall(("PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
                   + "\r\n").encode())
        for _ in range(16):
            s.sendall(block)
        srv.proc.send_signal(signal.SIGTERM)
        try:
            for _ in range(48):
                s.sendall(block)
            s.settimeout(20)
            resp = s.recv(4096)
        except OSError:
            pass
    finally:
        s.close()
    rc = srv.proc.wait(20)
    srv._mark_stopped()
    assert rc == 0
    srv.start()
    c = make_client(srv.endpoint)
    if resp.startswith(b"HTTP/1.1 200"):
        # finished gracefully: the whole object is there
        assert c.head_object(Bucket=b, Key="inflight")["ContentLength"] == total
    else:
        with pytest.raises(ClientError):
            c.head_object(Bucket=b, Key="inflight")
        assert h.dir_usage(srv.data_dir) == base
    assert h.tmp_files(srv.data_dir) == []


def test_data_dir_is_exclusive(floe_factory):
    srv = floe_factory()
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=ACCESS_KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET_KEY)
    p = subprocess.Popen([FLOE_BIN, "serve", "--data-dir", srv.data_dir, "--s3-listen", "127.0.0.1:%d" % free_port(),
                          "--catalog-listen", "127.0.0.1:%d" % free_port()], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        rc = p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        pytest.fail("a second floe serve on the same data dir kept running")
    assert rc != 0
    # the first one is unaffected
    make_client(srv.endpoint).list_buckets()


def test_port_in_use_fails(tmp_path):
    if not os.path.exists(FLOE_BIN):
        pytest.skip("floe binary not built")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=ACCESS_KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET_KEY)
        r = subprocess.run([FLOE_BIN, "serve", "--data-dir", str(tmp_path / "d"), "--s3-listen",
                            "127.0.0.1:%d" % busy.getsockname()[1], "--catalog-listen", "127.0.0.1:%d" % free_port()],
                           env=env, capture_output=True, timeout=10)
        assert r.returncode != 0
        assert r.stderr.strip(), "no message on a failed listen"
    finally:
        busy.close()


@pytest.mark.parametrize("args", [["serve", "--bogus-flag"], ["serve", "--s3-listen"], ["no-such-command"]])
def test_bad_command_line(args, tmp_path):
    if not os.path.exists(FLOE_BIN):
        pytest.skip("floe binary not built")
    r = subprocess.run([FLOE_BIN] + args, capture_output=True, timeout=10, cwd=tmp_path)
    assert r.returncode not in (0, None) and r.returncode > 0
    assert r.stderr.strip()


def test_root_key_file_readable_by_others_refused(floe_factory, tmp_path):
    """Issue 9 item 11: a root-key file group/others can read stops the start,
    with a message naming the file and the flag; with the flag, a warning."""
    if not os.path.exists(FLOE_BIN):
        pytest.skip("floe binary not built")
    data = tmp_path / "keyed"
    data.mkdir(mode=0o700)
    key = data / "root-key"
    key.write_text("access_key_id=%s\nsecret_access_key=%s\n" % (ACCESS_KEY, SECRET_KEY))
    os.chmod(key, 0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOE_ROOT_")}
    args = [FLOE_BIN, "serve", "--data-dir", str(data), "--s3-listen", "127.0.0.1:%d" % free_port(),
            "--catalog-listen", "127.0.0.1:%d" % free_port()]
    r = subprocess.run(args, env=env, capture_output=True, timeout=20)
    assert r.returncode != 0, r.stdout
    err = r.stderr.decode()
    assert "root-key" in err and "--allow-insecure-key-file" in err and "chmod 600" in err, err
    # with the flag it starts, warns, and the key in the file works
    srv = floe_factory(data_dir=str(data), env_keys=False, extra_args=["--allow-insecure-key-file"])
    assert "accessible by group or others" in srv.log_text()
    make_client(srv.endpoint).list_buckets()
    srv.stop()
    # 0600 again: starts without the flag and without the warning
    os.chmod(key, 0o600)
    srv = floe_factory(data_dir=str(data), env_keys=False)
    assert "accessible by group or others" not in srv.log_text()
    make_client(srv.endpoint).list_buckets()


def test_node_with_another_iam_master_key_refuses_to_start(floe_factory, monkeypatch):
    """Nodes on one catalog share its master key: a node whose key differs would
    fail every request signed with an IAM user's key, so it refuses to start.
    (The key at its default place, DATA_DIR/iam-master-key.)"""
    monkeypatch.delenv("FLOE_IAM_MASTER_KEY_FILE")
    srv = floe_factory()
    key_path = os.path.join(srv.data_dir, "iam-master-key")
    with open(key_path, "rb") as f:
        good = f.read()
    srv.stop()
    with open(key_path, "wb") as f:
        f.write(os.urandom(32))
    srv.spawn()
    try:
        assert srv.proc.wait(20) != 0
    finally:
        srv._mark_stopped()
    assert "is not the key that sealed this catalog's secrets" in srv.log_text()
    with open(key_path, "wb") as f:
        f.write(good)
    srv.start()
    assert make_client(srv.endpoint).list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200
