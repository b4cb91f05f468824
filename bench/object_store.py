#!/usr/bin/env python3
"""bench/object_store.py: what the S3 object-store backend costs. Two floe serve
processes on this machine: a "backing" one (its data plane is the store) and a
"front" one with --object-store on it. The same boto3 load runs against the
backing store directly and through the front: 4 PUTs and 4 GETs of a 64 MiB
object (MiB/s), then 200 PUTs and 200 GETs of 1 KB (ms each), one client.
Both processes share the machine's cores, so the front's cost shows as the
difference. Usage: .venv/bin/python bench/object_store.py   (FLOE_BIN: build/floe)
"""
import os, shutil, sys, time, subprocess, tempfile, socket, urllib.request
DIRS = []
sys.path.insert(0, "tests/integration")
from conftest import make_client, ACCESS_KEY, SECRET_KEY
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def start(extra):
    d = tempfile.mkdtemp(prefix="floe-bench-os-"); sp = port(); DIRS.append(d)
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=ACCESS_KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET_KEY,
               FLOE_OBJECT_STORE_SECRET_ACCESS_KEY=SECRET_KEY)
    p = subprocess.Popen([os.environ.get("FLOE_BIN", "build/floe"), "serve", "--data-dir", d, "--s3-listen", "127.0.0.1:%d" % sp,
                          "--catalog-listen", "127.0.0.1:%d" % port(), "--access-log", "false",
                          "--maintenance-interval", "0"] + extra, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ep = "http://127.0.0.1:%d" % sp
    for _ in range(100):
        try: urllib.request.urlopen(ep + "/health", timeout=1); break
        except Exception: time.sleep(0.1)
    return p, ep
b, bep = start([])
make_client(bep).create_bucket(Bucket="shared")
f, fep = start(["--object-store", "s3://shared/x", "--object-store-endpoint", bep, "--object-store-path-style",
                "--object-store-access-key-id", ACCESS_KEY])
body = os.urandom(64 << 20)
for name, ep in (("direct", bep), ("through floe", fep)):
    c = make_client(ep); bk = "bench-" + name.replace(" ", "")
    c.create_bucket(Bucket=bk)
    t = time.time()
    for i in range(4): c.put_object(Bucket=bk, Key="o%d" % i, Body=body)
    tp = time.time() - t; t = time.time()
    for i in range(4): assert len(c.get_object(Bucket=bk, Key="o%d" % i)["Body"].read()) == len(body)
    tg = time.time() - t; t = time.time()
    for i in range(200): c.put_object(Bucket=bk, Key="s%d" % i, Body=b"x" * 1000)
    ts = time.time() - t; t = time.time()
    for i in range(200): c.get_object(Bucket=bk, Key="s%d" % i)["Body"].read()
    tgs = time.time() - t
    print("%-13s PUT 4x64MiB %.0f MiB/s  GET %.0f MiB/s  small PUT %.1f ms  small GET %.1f ms" % (
        name, 256 / tp, 256 / tg, ts / 200 * 1000, tgs / 200 * 1000))
f.terminate(); b.terminate(); f.wait(); b.wait()
for d in DIRS:
    shutil.rmtree(d, ignore_errors=True)
