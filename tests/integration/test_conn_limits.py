"""Slow clients (issue 9, item 4): a body trickled one byte a second (never
tripping the 30 s per-read timeout) is cut off by the body deadline, and a
request answered without reading its body never gets "100 Continue"."""
import socket
import time

import pytest

import s3helpers as h
from conftest import ACCESS_KEY, SECRET_KEY, make_client


def test_body_trickled_under_the_read_timeout_is_cut_off(floe_factory):
    """One byte a second never trips the 30 s per-read timeout; the body's
    total deadline (10 s grace, then 32 KiB/s on average) does."""
    srv = floe_factory()
    c = make_client(srv.endpoint)
    c.create_bucket(Bucket="trickle")
    path = h.key_path("trickle", "k")
    headers = {"Host": "127.0.0.1:%d" % srv.s3_port, "Content-Length": "1000"}
    h.sign("PUT", path, None, headers, h.UNSIGNED, ACCESS_KEY, SECRET_KEY)
    s = socket.create_connection(("127.0.0.1", srv.s3_port), timeout=30)
    t0 = time.time()
    s.sendall(("PUT %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
               + "\r\n").encode())
    s.setblocking(False)
    resp = b""
    try:
        while time.time() - t0 < 20 and b"\r\n\r\n" not in resp:
            try:
                s.send(b"z")
            except OSError:
                pass
            time.sleep(1)
            try:
                resp += s.recv(65536)
            except BlockingIOError:
                pass
            except OSError:
                break
    finally:
        s.close()
    elapsed = time.time() - t0
    assert b"\r\n\r\n" in resp, "no response after %.0fs of a 1 byte/s body" % elapsed
    assert resp.startswith(b"HTTP/1.1 400 "), resp[:200]
    assert b"RequestTimeout" in resp and b"Connection: close" in resp
    assert 9 <= elapsed <= 15, elapsed
    assert srv.alive()
    with pytest.raises(Exception):
        c.head_object(Bucket="trickle", Key="k")


def test_expect_continue_refused_without_100(floe):
    """An unsigned PUT asking for 100-continue is refused from its head: no
    interim 100, the refusal, then the connection closes unread."""
    s = socket.create_connection(("127.0.0.1", floe.s3_port), timeout=10)
    try:
        s.sendall(b"PUT /nobucket/k HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: 8388608\r\n\r\n")
        resp = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            resp += d
    finally:
        s.close()
    assert not resp.startswith(b"HTTP/1.1 100"), resp[:100]
    assert resp.startswith(b"HTTP/1.1 403 "), resp[:200]
    assert b"Connection: close\r\n" in resp
