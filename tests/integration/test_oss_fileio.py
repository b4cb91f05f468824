"""Iceberg's OSSFileIO (iceberg-aliyun with the OSS Java SDK aliyun-sdk-oss 3.10.2, which signs
V1 and addresses a bucket virtual-hosted, host {bucket}.{endpoint host}, path /{key}) against a `floe serve --location-scheme oss
--s3-domain oss.floe.test`: the Java Iceberg library (tests/compat/JavaPeer.java,
FLOE_FILE_IO=oss) creates a table through the REST catalog (SigV4 osstables) and gets an
oss:// location and the catalog's oss.endpoint http://oss.floe.test:PORT (the warehouse
host {warehouse}.oss.floe.test resolved to 127.0.0.1 by a JVM hosts file), appends with Java's Parquet writer, manifests and
commit through OSSFileIO, reads its rows back; PyIceberg reads the same rows from the oss://
files (through S3, path style); floe's own scan reads them, and floe's own writer appends rows Java reads; S3FileIO still works on the same oss:// table (S3URI takes any scheme); compaction and unreferenced-file removal work on oss:// files."""
import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, REGION, SECRET_KEY
from rest_fixtures import catalog_url, load_rest_catalog, s3tables_client, unique
from test_append_scan import append, floe_cli, make_rows, norm_row

ROOT = Path(__file__).resolve().parents[2]
VERSION = os.environ.get("OSS_ICEBERG_VERSION", "1.10.1")
CP = ROOT / "tests/compat/.cache" / ("oss-iceberg-" + VERSION)
DOMAIN = "oss.floe.test"


@pytest.fixture(scope="module")
def ossfloe(floe_factory_module):
    return floe_factory_module(extra_args=["--location-scheme", "oss", "--s3-domain", DOMAIN])


@pytest.fixture(scope="module")
def floe_factory_module(tmp_path_factory):
    from conftest import FloeServer
    started = []

    def factory(**kw):
        srv = FloeServer(tmp_path_factory.mktemp("floe-oss-data"), name="ossfileio", **kw)
        started.append(srv)
        return srv.start()
    yield factory
    for srv in started:
        srv.stop()


@pytest.fixture(scope="module")
def warehouse(ossfloe):
    return s3tables_client(ossfloe).create_table_bucket(name="oss-" + unique("fio").replace("_", "-"))["arn"]


@pytest.fixture(scope="module")
def java(ossfloe, warehouse, tmp_path_factory):
    if not shutil.which("java"):
        pytest.fail("java is not installed (scripts/install-deps.sh installs it)")
    if not CP.is_dir():
        r = subprocess.run(["bash", str(ROOT / "tests/compat/fetch.sh"), "oss"], capture_output=True, text=True,
                           env=dict(os.environ, OSS_ICEBERG_VERSION=VERSION), timeout=1200)
        assert r.returncode == 0, r.stderr[-3000:]
    hosts = tmp_path_factory.mktemp("jvm-hosts") / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    env = dict(os.environ, FLOE_FILE_IO="oss", FLOE_CATALOG_URI=catalog_url(ossfloe) + "/iceberg",
               FLOE_WAREHOUSE=warehouse, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY,
               FLOE_REGION=REGION, AWS_REGION=REGION)

    # one JVM for every command (JavaPeer's repl): the JVM reads its hosts file at each lookup
    err = open(hosts.parent / "java.stderr", "w+")
    p = subprocess.Popen(["java", "-Djdk.net.hosts.file=%s" % hosts, "-cp", str(CP) + "/*",
                          str(ROOT / "tests/compat/JavaPeer.java"), "repl"],
                         env=dict(env, FLOE_S3_ENDPOINT=ossfloe.endpoint), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=err, text=True)

    def run(*args, io="oss"):
        p.stdin.write(("s3:" if io == "s3" else "") + " ".join(args) + "\n")
        p.stdin.flush()
        out = []
        for line in p.stdout:
            if line.rstrip("\n") in ("--ok--", "--failed--"):
                if line.startswith("--failed--"):
                    err.seek(0)
                    pytest.fail("JavaPeer %s failed:\n%s" % (args, err.read()[-4000:]))
                return "".join(out)
            out.append(line)
        err.seek(0)
        pytest.fail("JavaPeer exited:\n%s" % err.read()[-4000:])
    run.hosts = hosts
    yield run
    p.stdin.close()
    try:
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
        err.close()


def test_ossfileio_writes_and_reads_through_floe(ossfloe, warehouse, java):
    ns = unique("ossio")
    ident = "%s.events" % ns
    loc = java("create", ident, "category").strip().splitlines()[-1]
    assert loc.startswith("oss://") and loc.endswith("--table-s3"), loc
    wb = loc[len("oss://"):]
    cat = load_rest_catalog(ossfloe, warehouse, signing_name="osstables")
    t = cat.load_table(ident)
    assert t.location() == loc and t.metadata_location.startswith(loc + "/metadata/")
    assert t.io.properties["oss.endpoint"] == "http://%s:%d" % (DOMAIN, ossfloe.s3_port)
    # the warehouse's host resolves to 127.0.0.1 for the JVM only
    java.hosts.write_text("127.0.0.1 localhost\n127.0.0.1 %s.%s\n" % (wb, DOMAIN))
    java("append", ident, "0", "700")
    t = cat.load_table(ident)
    assert t.metadata.current_snapshot().summary["java.peer"] == "1"
    files = [f.file.file_path for f in t.scan().plan_files()]
    assert files and all(f.startswith(loc + "/data/") for f in files)
    key = lambda r: r["id"]  # noqa: E731
    java_rows = sorted((norm_row(json.loads(x)) for x in java("scan", ident).splitlines()), key=key)
    assert len(java_rows) == 700
    py_rows = sorted((norm_row(r) for r in t.scan().to_arrow().to_pylist()), key=key)
    assert py_rows == java_rows
    floe_rows = sorted((norm_row(json.loads(x)) for x in
                        floe_cli(ossfloe, warehouse, "scan", ident).stdout.splitlines()), key=key)
    assert floe_rows == java_rows
    # floe's own writer appends into the oss:// table; Java's OSSFileIO reads its files
    append(ossfloe, warehouse, ns, make_rows(5000, 40))
    got = [json.loads(x)["id"] for x in java("scan", ident).splitlines()]
    assert len(got) == 740 and len(set(got)) == 740
    # S3FileIO (the source document's connector configuration) on the same oss:// table
    java("append", ident, "9000", "60", io="s3")
    got = [json.loads(x)["id"] for x in java("scan", ident).splitlines()]
    assert len(got) == 800
    # maintenance on oss:// locations: compaction writes oss:// files OSSFileIO reads; the
    # unreferenced-file job, a week on, finds every file referenced (oss:// and s3:// alike)
    rep = json.loads(floe_cli(ossfloe, warehouse, "maintenance", "run", ident, "--job", "compaction",
                              "--output", "json").stdout)
    assert rep["status"] == "Successful", rep
    t = cat.load_table(ident)
    assert all(f.file.file_path.startswith(loc + "/data/") for f in t.scan().plan_files())
    got = [json.loads(x)["id"] for x in java("scan", ident).splitlines()]
    assert len(got) == 800 and len(set(got)) == 800
    week = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    p = floe_cli(ossfloe, warehouse, "maintenance", "run", ident, "--job", "unreferenced", "--as-of", week,
                 "--dry-run", "--output", "json")
    rep = json.loads(p.stdout.strip().splitlines()[-1])
    assert rep["markedNoncurrent"] == 0 and rep["referenced"] > 0 and rep["objectsListed"] > 0, rep


def test_virtual_hosted_requests(ossfloe):
    """--s3-domain: Host {bucket}.{domain} names the bucket and the path is the key, for
    OSS V1 (resource /{bucket}/{key}), SigV4 (the host is signed) and path style alike."""
    import oss2
    import requests
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from conftest import make_client, unique_bucket_name
    s3 = make_client(ossfloe.endpoint)
    b = unique_bucket_name("vh")
    s3.create_bucket(Bucket=b)
    host = "%s.%s:%d" % (b, DOMAIN.upper(), ossfloe.s3_port)   # the host matches case-insensitively
    base = "http://127.0.0.1:%d" % ossfloe.s3_port
    # OSS V1 (oss2's signer): PUT /{key} on the bucket's host
    req = oss2.http.Request("PUT", base + "/dir/a%20b.txt", data=b"v1 vhost",
                            headers={"Content-Type": "text/plain"})
    oss2.Auth(ACCESS_KEY, SECRET_KEY)._sign_request(req, b, "dir/a b.txt")
    r = requests.put(base + "/dir/a%20b.txt", data=b"v1 vhost", headers=dict(req.headers, Host=host), timeout=10)
    assert r.status_code == 200, r.content
    assert s3.get_object(Bucket=b, Key="dir/a b.txt")["Body"].read() == b"v1 vhost"
    # the same signature does not fit another bucket's host
    r = requests.put(base + "/dir/a%20b.txt", data=b"v1 vhost",
                     headers=dict(req.headers, Host="other.%s:%d" % (DOMAIN, ossfloe.s3_port)), timeout=10)
    assert r.status_code == 403
    # SigV4, virtual-hosted: GET the object, list the bucket
    host = host.lower()   # as HTTP clients send it (botocore signs it lower-cased)
    for url in ("http://%s/dir/a%%20b.txt" % host, "http://%s/?list-type=2" % host):
        a = AWSRequest(method="GET", url=url)
        a.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD"
        S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION).add_auth(a)
        r = requests.get(base + url.split(host, 1)[1], headers=dict(a.headers, Host=host), timeout=10)
        assert r.status_code == 200, r.content
        assert b"v1 vhost" == r.content or b"<Key>dir/a b.txt</Key>" in r.content
    # a Host outside the domain (boto3's 127.0.0.1) stays path style
    assert s3.head_object(Bucket=b, Key="dir/a b.txt")["ContentLength"] == 8
