#!/usr/bin/env python3
"""Time of one Iceberg REST commit carrying N add-schema updates.

Usage: .venv/bin/python bench/commit_updates.py [--sizes 1000,3000,10000] [--floe build/floe]

Starts `floe serve` on free 127.0.0.1 ports with a fresh data directory (removed at
the end), creates a table bucket (S3 Tables API), a namespace and one table per size
(REST), then sends one signed POST .../tables/{t} whose updates are N add-schema
actions, each a distinct two-column schema, and prints the wall time of that request
and the time per update. A commit above floe's cap (FL_ICEBERG_MAX_COMMIT_UPDATES,
10,000) answers 400 at once; run a build with the cap raised to time larger sizes."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import boto3
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ROOT = Path(__file__).resolve().parents[1]
KEY, SECRET, REGION = "FLOEBENCHKEY00000001", "floeBenchSecret/0123456789abcdefghijklmn", "us-east-1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rest:
    def __init__(self, base, arn):
        self.base, self.prefix, self.http = base + "/iceberg", quote(arn, safe=""), requests.Session()

    def req(self, method, tail, body=None):
        url = "%s/v1/%s/%s" % (self.base, self.prefix, tail)
        data = json.dumps(body).encode() if body is not None else None
        r = AWSRequest(method=method, url=url, data=data, headers={"Content-Type": "application/json"})
        SigV4Auth(Credentials(KEY, SECRET), "s3tables", REGION).add_auth(r)
        return self.http.request(method, url, data=data, headers=dict(r.headers.items()), timeout=3600)


def schema(i):
    return {"type": "struct", "schema-id": i + 1, "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "c%d" % i, "required": False, "type": "string"}]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--floe", default=os.environ.get("FLOE_BIN", str(ROOT / "build" / "floe")))
    a = ap.parse_args()
    data = tempfile.mkdtemp(prefix="floe-commitbench-", dir=ROOT / "bench")
    s3p, catp = free_port(), free_port()
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=KEY, FLOE_ROOT_SECRET_ACCESS_KEY=SECRET)
    proc = subprocess.Popen([a.floe, "serve", "--data-dir", data, "--s3-listen", "127.0.0.1:%d" % s3p,
                             "--catalog-listen", "127.0.0.1:%d" % catp, "--region", REGION],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % s3p, timeout=1)
                break
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.05)
        base = "http://127.0.0.1:%d" % catp
        tb = boto3.client("s3tables", endpoint_url=base, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name=REGION)
        arn = tb.create_table_bucket(name="commitbench")["arn"]
        rest = Rest(base, arn)
        assert rest.req("POST", "namespaces", {"namespace": ["ns"]}).status_code == 200
        print("%-8s %8s %10s %14s" % ("updates", "status", "seconds", "us/update"))
        for n in [int(s) for s in a.sizes.split(",")]:
            t = "t%d" % n
            r = rest.req("POST", "namespaces/ns/tables", {"name": t, "schema": schema(-1)})
            assert r.status_code == 200, r.text
            body = {"requirements": [], "updates": [{"action": "add-schema", "schema": schema(i)} for i in range(n)]}
            t0 = time.perf_counter()
            r = rest.req("POST", "namespaces/ns/tables/" + t, body)
            dt = time.perf_counter() - t0
            print("%-8d %8d %10.3f %14.1f" % (n, r.status_code, dt, dt / n * 1e6), flush=True)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
