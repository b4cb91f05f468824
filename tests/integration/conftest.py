"""Fixtures for floe's S3 data-plane integration tests.

One `floe serve` per session (fresh temp data dir, free ports, fixed keys);
`floe_factory` starts extra servers (kill/restart tests, reusing a data dir).
Each server's stderr goes to a file; on a test failure the tail of every
server that was alive during the test is attached to the report.

FLOE_TEST_CATALOG=postgres runs every server on PostgreSQL instead of its
SQLite file: one throw-away PostgreSQL per session (pgserver.py), one
database per data dir (a restarted server finds its catalog again).

FLOE_TEST_OBJECT_STORE=floe runs every server on a shared S3 object store
(--object-store; objstore.py: a backing floe serve, one prefix per data dir)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

import objstore
import pgserver
import s3helpers

REPO = Path(__file__).resolve().parents[2]
FLOE_BIN = os.environ.get("FLOE_BIN") or str(REPO / "build" / "floe")

ACCESS_KEY = "FLOETESTKEY0000000001"
SECRET_KEY = "floeTestSecret/0123456789abcdefghijklmnopq"
REGION = "us-east-1"

_SERVERS = []          # every server started in this session
_TEST_START = [0.0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FloeServer:
    def __init__(self, data_dir, name="floe", env_keys=True, extra_args=(), s3_port=None,
                 catalog_port=None):
        self.data_dir = str(data_dir)
        self.name = name
        self.env_keys = env_keys
        self.extra_args = list(extra_args)
        self.s3_port = s3_port or free_port()
        self.catalog_port = catalog_port or free_port()
        self.proc = None
        self.stopped_at = None
        self.returncode = None
        # logs live beside the data dir, inside pytest's temp tree
        logdir = Path(tempfile.mkdtemp(prefix="floe-log-", dir=os.path.dirname(os.path.abspath(self.data_dir))))
        self.stderr_path = logdir / "stderr.log"
        self.stdout_path = logdir / "stdout.log"

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.s3_port

    def start(self, timeout=20.0):
        if not os.path.exists(FLOE_BIN):
            pytest.skip("floe binary not built: %s" % FLOE_BIN)
        env = dict(os.environ)
        env.pop("FLOE_ROOT_ACCESS_KEY_ID", None)
        env.pop("FLOE_ROOT_SECRET_ACCESS_KEY", None)
        env.pop("FLOE_CATALOG_DB", None)
        if self.env_keys:
            env["FLOE_ROOT_ACCESS_KEY_ID"] = ACCESS_KEY
            env["FLOE_ROOT_SECRET_ACCESS_KEY"] = SECRET_KEY
        args = [FLOE_BIN, "serve", "--data-dir", self.data_dir,
                "--s3-listen", "127.0.0.1:%d" % self.s3_port,
                "--catalog-listen", "127.0.0.1:%d" % self.catalog_port,
                "--region", REGION] + self.extra_args
        if pgserver.wanted() and not any(a.startswith("--catalog-db") for a in self.extra_args):
            args += ["--catalog-db", pgserver.database_for(self.data_dir)]
        if objstore.wanted() and not any(a.startswith("--object-store") for a in self.extra_args):
            args += objstore.args_for(self.data_dir, FLOE_BIN, ACCESS_KEY, SECRET_KEY, REGION)
        if not any(a.startswith("--maintenance-interval") for a in self.extra_args):
            # the scheduler would compact other tests' tables under them: off
            # unless a test asks for it (test_maint_server.py)
            args += ["--maintenance-interval", "0"]
        self.stopped_at = None
        self.returncode = None
        with open(self.stderr_path, "ab") as err, open(self.stdout_path, "ab") as out:
            err.write(("\n==== start %s %s ====\n" % (time.strftime("%H:%M:%S"), " ".join(args))).encode())
            err.flush()
            self.proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=env)
        _SERVERS.append(self)
        end = time.time() + timeout
        last = None
        while time.time() < end:
            if self.proc.poll() is not None:
                self._mark_stopped()
                pytest.fail("floe exited with %s during start\n%s" % (self.proc.returncode, self.tail()))
            try:
                with urllib.request.urlopen(self.endpoint + "/health", timeout=1) as r:
                    # the catalog port starts listening after the data plane's
                    if r.status == 200:
                        socket.create_connection(("127.0.0.1", self.catalog_port), timeout=1).close()
                        return self
            except Exception as e:  # noqa: BLE001 - keep polling
                last = e
            time.sleep(0.05)
        self.kill()
        pytest.fail("floe did not become healthy in %.0fs (last error %r)\n%s" % (timeout, last, self.tail()))

    def _mark_stopped(self):
        if self.stopped_at is None:
            self.stopped_at = time.time()
        self.returncode = self.proc.returncode if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns the exit status (None if it had to be killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._mark_stopped()
                return None
        self._mark_stopped()
        return self.proc.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._mark_stopped()

    def restart(self, **kw):
        self.stop()
        return self.start(**kw)

    def tail(self, n=60):
        chunks = []
        for label, p in (("stderr", self.stderr_path), ("stdout", self.stdout_path)):
            try:
                lines = p.read_text(errors="replace").splitlines()
            except FileNotFoundError:
                continue
            if lines:
                chunks.append("--- %s %s (last %d lines) ---\n%s" % (self.name, label, n, "\n".join(lines[-n:])))
        return "\n".join(chunks)

    def log_text(self):
        out = ""
        for p in (self.stderr_path, self.stdout_path):
            try:
                out += p.read_text(errors="replace")
            except FileNotFoundError:
                pass
        return out


def make_client(endpoint, access_key=ACCESS_KEY, secret=SECRET_KEY, region=REGION, **cfg):
    s3cfg = {"addressing_style": "path"}
    conf = Config(signature_version="s3v4", s3=s3cfg, retries={"max_attempts": 1, "mode": "standard"},
                  connect_timeout=10, read_timeout=120, **cfg)
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access_key,
        aws_secret_access_key=secret, region_name=region, config=conf)


# ---------------------------------------------------------------- hooks

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running (large uploads, kill/restart, races)")


def pytest_runtest_setup(item):
    _TEST_START[0] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        seen = set()
        for srv in _SERVERS:
            if id(srv) in seen:
                continue
            seen.add(id(srv))
            if srv.stopped_at is None or srv.stopped_at >= _TEST_START[0]:
                rep.sections.append(("floe log tail: %s :%d" % (srv.name, srv.s3_port), srv.tail()))


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def floe(tmp_path_factory):
    data = tmp_path_factory.mktemp("floe-data")
    srv = FloeServer(data, name="session")
    srv.start()
    yield srv
    rc = srv.stop()
    assert rc == 0, "floe did not exit 0 on SIGTERM (rc=%r)\n%s" % (rc, srv.tail())


@pytest.fixture
def floe_factory(tmp_path):
    started = []

    def factory(data_dir=None, **kw):
        d = data_dir or tempfile.mkdtemp(prefix="floe-data-", dir=tmp_path)
        srv = FloeServer(d, name="extra%d" % len(started), **kw)
        started.append(srv)
        return srv.start()

    yield factory
    for srv in started:
        srv.stop()


@pytest.fixture(scope="session")
def endpoint(floe):
    return floe.endpoint


@pytest.fixture(scope="session")
def s3(floe):
    """Default botocore behaviour (flexible checksums: when_supported)."""
    return make_client(floe.endpoint)


@pytest.fixture(scope="session")
def s3_ws(floe):
    return make_client(floe.endpoint, request_checksum_calculation="when_supported",
                       response_checksum_validation="when_supported")


@pytest.fixture(scope="session")
def s3_wr(floe):
    return make_client(floe.endpoint, request_checksum_calculation="when_required",
                       response_checksum_validation="when_required")


@pytest.fixture(params=["when_supported", "when_required"])
def s3_any(floe, request):
    return make_client(floe.endpoint, request_checksum_calculation=request.param,
                       response_checksum_validation=request.param)


@pytest.fixture(scope="session")
def raw(floe):
    return s3helpers.RawClient("127.0.0.1", floe.s3_port, ACCESS_KEY, SECRET_KEY, REGION)


def unique_bucket_name(hint="t"):
    hint = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-")[:40].strip("-") or "t"
    return "%s-%s" % (hint, uuid.uuid4().hex[:12])


@pytest.fixture
def bucket_name(request):
    return unique_bucket_name(request.node.name)


def empty_and_delete(client, name):
    try:
        for up in client.list_multipart_uploads(Bucket=name).get("Uploads", []):
            client.abort_multipart_upload(Bucket=name, Key=up["Key"], UploadId=up["UploadId"])
    except Exception:  # noqa: BLE001
        pass
    try:
        while True:
            r = client.list_objects_v2(Bucket=name)
            keys = [{"Key": o["Key"]} for o in r.get("Contents", [])]
            if not keys:
                break
            for k in keys:
                client.delete_object(Bucket=name, Key=k["Key"])
        client.delete_bucket(Bucket=name)
    except Exception:  # noqa: BLE001
        pass


@pytest.fixture
def bucket(s3, bucket_name):
    s3.create_bucket(Bucket=bucket_name)
    yield bucket_name
    empty_and_delete(s3, bucket_name)


@pytest.fixture
def tools_env(tmp_path, floe):
    """Environment for AWS CLI subprocesses: keys, region, path-style config."""
    cfg = tmp_path / "aws-config"
    creds = tmp_path / "aws-credentials"
    cfg.write_text("[default]\nregion = %s\n" % REGION)
    creds.write_text("")
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("AWS_"):
            env.pop(k)
    env.update({
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": str(cfg),
        "AWS_SHARED_CREDENTIALS_FILE": str(creds),
        "AWS_EC2_METADATA_DISABLED": "true",
        "HOME": str(tmp_path),
        # AWS CLI v1 vendors botocore 1.43.62, which has botocore#3755: after a
        # zero-length PUT sent with Expect: 100-continue is answered without an
        # interim 100 (as S3 itself now does), the next response on that pooled
        # connection is parsed against a stale status line and the CLI stalls
        # 60 s (fixed in botocore 1.43.77). Skip Expect for empty bodies.
        "BOTO_EXPERIMENTAL__NO_EMPTY_CONTINUE": "true",
    })
    aws = str(REPO / ".venv" / "bin" / "aws")
    subprocess.run([aws, "configure", "set", "default.s3.addressing_style", "path"], env=env,
                   check=True, timeout=60)
    return env


def which(name):
    return shutil.which(name)
