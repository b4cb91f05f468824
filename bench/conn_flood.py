#!/usr/bin/env python3
"""Connection flood: what idle (or slow-head) connections from one client
address cost floe, and whether a signed client on another address is served.

    .venv/bin/python bench/conn_flood.py [--bin build/floe] [--conns 1100]
                                         [--seconds 10] [--mode idle|slowhead]

Starts `floe serve` on free ports with a temp data dir, measures a signed boto3
client (PutObject 1 KB, GetObject, GET /health on both ports, from 127.0.0.1)
alone, then while 127.0.0.2 holds --conns connections per port (idle, or with a
request head that never ends) and keeps replacing the oldest ~200 a second.
Prints connections held, floe's threads and RSS (/proc/PID/status), and the
signed client's p50/p99 latency and failures (e.g. 503 SlowDown).
Linux only (127.0.0.2 must route to lo)."""
import argparse
import collections
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import boto3
from botocore.config import Config

KEY, SECRET = "FLOEBENCHKEY00000001", "floeBenchSecret/0123456789abcdefghijklmn"
ATTACKER = "127.0.0.2"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def metric(port, name, server):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            m = re.search(r'^%s\{server="%s"\} (\S+)$' % (name, server), r.read().decode(), re.M)
            return int(float(m.group(1))) if m else None
    except Exception:  # noqa: BLE001 - a refused /metrics is itself a finding
        return None


class Flood(threading.Thread):
    def __init__(self, ports, n, payload, churn_per_s=200):
        super().__init__(daemon=True)
        self.ports, self.n, self.payload, self.churn = ports, n, payload, churn_per_s
        self.socks = collections.deque()
        self.ready, self.halt = threading.Event(), threading.Event()

    def _open(self, port):
        try:
            s = socket.socket()
            s.bind((ATTACKER, 0))
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            if self.payload:
                s.sendall(self.payload)
            self.socks.append(s)
        except OSError:
            pass

    def run(self):
        for port in self.ports:
            for _ in range(self.n):
                self._open(port)
        self.ready.set()
        i = 0
        while not self.halt.is_set():
            t0 = time.time()
            for _ in range(max(1, self.churn // 20)):
                if self.socks:
                    self.socks.popleft().close()
                self._open(self.ports[i % len(self.ports)])
                i += 1
            time.sleep(max(0, 0.05 - (time.time() - t0)))

    def stop(self):
        self.halt.set()
        self.join(30)
        while self.socks:
            self.socks.popleft().close()


def load(endpoint, s3_port, cat_port, seconds):
    c = boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"max_attempts": 1}, connect_timeout=10, read_timeout=30))

    def health(port):
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=10) as r:
            r.read()

    ops = (lambda i: c.put_object(Bucket="flood", Key="k%d" % (i % 8), Body=b"v" * 1000),
           lambda i: c.get_object(Bucket="flood", Key="k%d" % (i % 8))["Body"].read(),
           lambda i: health(s3_port), lambda i: health(cat_port))
    for i in range(8):
        ops[0](i)
    lat, fails = [], collections.Counter()
    end, i = time.time() + seconds, 0
    while time.time() < end:
        for op in ops:
            t0 = time.time()
            try:
                op(i)
            except Exception as e:  # noqa: BLE001 - counted by kind
                fails[re.sub(r"\d{4,}", "N", repr(e))[:80]] += 1
            lat.append(time.time() - t0)
        i += 1
    lat.sort()
    return lat, fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "floe"))
    ap.add_argument("--conns", type=int, default=1100, help="per port")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--mode", choices=["idle", "slowhead"], default="idle")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    data = tempfile.mkdtemp(prefix="floe-flood-")
    s3p, catp = free_port(), free_port()
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET)
    log = open(os.path.join(data, "floe.log"), "wb")
    p = subprocess.Popen([a.bin, "serve", "--data-dir", data + "/d", "--s3-listen", "127.0.0.1:%d" % s3p,
                          "--catalog-listen", "127.0.0.1:%d" % catp, "--region", "us-east-1"],
                         env=env, stdout=log, stderr=log)
    flood = None
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % s3p, timeout=1).read()
                break
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.05)
        endpoint = "http://127.0.0.1:%d" % s3p
        boto3.session.Session().client(
            "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
            region_name="us-east-1", config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket="flood")
        rows = []

        def row(label, lat, fails):
            st = proc_status(p.pid)
            rows.append((label, metric(s3p, "floe_http_connections", "s3"),
                         metric(catp, "floe_http_connections", "catalog"),
                         st["Threads"], st["VmRSS"], len(lat),
                         "%.1f" % (1000 * lat[len(lat) // 2]) if lat else "-",
                         "%.1f" % (1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))]) if lat else "-",
                         sum(fails.values())))
            return fails

        lat, fails = load(endpoint, s3p, catp, a.seconds)
        row("alone", lat, fails)
        payload = b"" if a.mode == "idle" else b"GET /flood/k0 HTTP/1.1\r\nHost: x\r\nX-A: "
        flood = Flood([s3p, catp], a.conns, payload)
        t0 = time.time()
        flood.start()
        flood.ready.wait(120)
        setup = time.time() - t0
        lat, fails = load(endpoint, s3p, catp, a.seconds)
        fails = row("%d %s/port from %s" % (a.conns, a.mode, ATTACKER), lat, fails)
        print("floe %s (%s), flood set up in %.1fs, %.0fs of signed load each" % (
            a.bin, subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                                   "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
            setup, a.seconds))
        hdr = ("phase", "s3 conns", "catalog conns", "threads", "VmRSS", "requests", "p50 ms", "p99 ms",
               "failed")
        w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
        for r in [hdr] + rows:
            print("  ".join(str(v).rjust(w[i]) if i else str(v).ljust(w[i]) for i, v in enumerate(r)))
        for k, v in fails.most_common(3):
            print("  failure x%d: %s" % (v, k))
    finally:
        if flood:
            flood.stop()
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
