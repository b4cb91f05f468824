"""FLOE_TEST_OBJECT_STORE=floe: every floe serve the tests start keeps its
objects in one shared S3-compatible store instead of DATA_DIR/objects: a
backing `floe serve` started on first use (its data plane, path-style, the
tests' fixed keys), stopped when the test process exits. Each data dir gets a
prefix of its own in the backing bucket, so a restarted server finds its
objects again. Tests that look at DATA_DIR/objects on disk do not apply.

wanted()        whether the environment asks for it
args_for(key)   the --object-store flags for data dir key (starts the backing store)
"""
import atexit
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

BUCKET = "floe-test-objects"
_STATE = {}


def wanted():
    return os.environ.get("FLOE_TEST_OBJECT_STORE", "").lower() == "floe"


def _free_port():
    from conftest import free_port
    return free_port()


def _backing(floe_bin, akid, secret, region):
    if "endpoint" in _STATE:
        return _STATE["endpoint"]
    d = tempfile.mkdtemp(prefix="floe-objstore-", dir="/tmp")
    port = _free_port()
    env = dict(os.environ, FLOE_ROOT_ACCESS_KEY_ID=akid, FLOE_ROOT_SECRET_ACCESS_KEY=secret)
    env.pop("FLOE_CATALOG_DB", None)
    log = open(os.path.join(d, "backing.log"), "ab")
    proc = subprocess.Popen([floe_bin, "serve", "--data-dir", os.path.join(d, "data"), "--s3-listen",
                             "127.0.0.1:%d" % port, "--catalog-listen", "127.0.0.1:%d" % _free_port(),
                             "--region", region, "--maintenance-interval", "0", "--access-log", "false"],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
    def stop():
        proc.terminate()
        proc.wait(15)
        shutil.rmtree(d, ignore_errors=True)
    atexit.register(stop)
    endpoint = "http://127.0.0.1:%d" % port
    end = time.time() + 20
    while True:
        try:
            urllib.request.urlopen(endpoint + "/health", timeout=1).read()
            break
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None or time.time() > end:
                raise RuntimeError("backing object store did not start (log: %s)" % log.name)
            time.sleep(0.1)
    import boto3
    from botocore.config import Config
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=akid, aws_secret_access_key=secret,
                 region_name=region, config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=BUCKET)
    _STATE["endpoint"] = endpoint
    return endpoint


def args_for(key, floe_bin, akid, secret, region):
    endpoint = _backing(floe_bin, akid, secret, region)
    prefix = hashlib.sha1(os.path.abspath(str(key)).encode()).hexdigest()[:16]
    return ["--object-store", "s3://%s/%s" % (BUCKET, prefix), "--object-store-endpoint", endpoint,
            "--object-store-path-style", "--object-store-access-key-id", akid,
            "--object-store-secret-access-key", secret]
