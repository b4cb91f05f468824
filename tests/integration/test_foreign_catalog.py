"""floe's Iceberg client against a catalog that is not floe's: Apache Iceberg's reference REST
catalog server (iceberg-open-api's RESTCatalogServer: RESTCatalogAdapter over a JdbcCatalog on
SQLite, S3FileIO), fetched from Maven Central by tests/compat/restfixture.sh and run on
loopback by tests/compat/RestFixture.java. Its warehouse is a plain bucket on floe's data
plane (`floe serve`, path-style S3), so floe is only the storage here: the catalog, its commit
checks and its metadata files are Java's.

  - PyIceberg creates a namespace and a partitioned table in the reference catalog;
  - `floe append --auth none` commits two fast-append snapshots (timestamptz, decimal, struct,
    list and map columns); PyIceberg reads exactly those rows and two chained snapshots with
    the summaries floe wrote, and `floe scan` prints the same rows;
  - with no keys of its own, floe uses the ones the catalog vends in LoadTableResult.config;
    OAuth2 client credentials (the server's /v1/oauth/tokens) and a bearer token work too;
  - several `floe append` processes racing on one table all land: the server's optimistic
    check (assert-ref-snapshot-id, then the JDBC compare-and-swap) turns the losers away with
    409 and they re-base."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY, free_port
from test_append_scan import SCHEMA, SPEC, make_rows, norm_row

ROOT = Path(__file__).resolve().parents[2]
RESTFIXTURE = ROOT / "tests/compat/restfixture.sh"
LAUNCHER = ROOT / "tests/compat/RestFixture.java"


class RefCatalog:
    def __init__(self, uri, warehouse, proc, log_path):
        self.uri, self.warehouse, self.proc, self.log_path = uri, warehouse, proc, log_path

    def log_tail(self, n=80):
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _wait_ready(uri, proc, log_path, timeout=180.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail("the reference REST catalog exited (rc=%s):\n%s" % (
                proc.returncode, Path(log_path).read_text(errors="replace")[-4000:]))
        try:
            with urllib.request.urlopen(uri + "/v1/config", timeout=2) as r:
                if r.status == 200 and "defaults" in json.loads(r.read()):
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail("the reference REST catalog did not answer GET /v1/config in %ds:\n%s" % (
        timeout, Path(log_path).read_text(errors="replace")[-4000:]))


@pytest.fixture(scope="module")
def ref_catalog(floe, s3, tmp_path_factory):
    if not shutil.which("java") or not shutil.which("mvn"):
        pytest.fail("java and mvn are needed (scripts/install-deps.sh installs them)")
    # The jars (first use: Maven Central into tests/compat/.cache; later: cached).
    r = subprocess.run(["bash", str(RESTFIXTURE)], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    classpath = r.stdout.strip().splitlines()[-1]

    bucket = "foreign-%s" % uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=bucket)
    warehouse = "s3://%s/wh" % bucket
    work = tmp_path_factory.mktemp("refcat")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
    env.update({
        # RCKUtils.environmentCatalogConfig: CATALOG_X_Y__Z -> catalog property x.y-z
        "CATALOG_REST_PORT": str(port),
        "CATALOG_URI": "jdbc:sqlite:%s" % (work / "catalog.db"),
        "CATALOG_WAREHOUSE": warehouse,
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": floe.endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_S3_ACCESS__KEY__ID": ACCESS_KEY,
        "CATALOG_S3_SECRET__ACCESS__KEY": SECRET_KEY,
        "CATALOG_CLIENT_REGION": REGION,
        # RESTServerCatalogAdapter copies s3.access-key-id/secret into LoadTableResult.config
        "CATALOG_INCLUDE__CREDENTIALS": "true",
        "AWS_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    })
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(["java", "-cp", classpath, str(LAUNCHER)], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    uri = "http://127.0.0.1:%d" % port
    try:
        _wait_ready(uri, proc, log_path)
        yield RefCatalog(uri, warehouse, proc, log_path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def py_catalog(floe, ref):
    from pyiceberg.catalog import load_catalog
    return load_catalog("reference", **{
        "type": "rest",
        "uri": ref.uri,
        "s3.endpoint": floe.endpoint,
        "s3.access-key-id": ACCESS_KEY,
        "s3.secret-access-key": SECRET_KEY,
        "s3.region": REGION,
        "s3.force-virtual-addressing": "false",
    })


def floe_cmd(floe, ref, *args):
    return [FLOE_BIN, *args, "--catalog-uri", ref.uri, "--auth", "none",
            "--s3-endpoint", floe.endpoint, "--region", REGION]


def floe_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "AWS_"))}
    env.update(FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)
    return env


def run_floe(floe, ref, *args, stdin=None, ok=True):
    cmd = floe_cmd(floe, ref, *args)
    p = subprocess.run(cmd, env=floe_env(), capture_output=True, text=True, timeout=300, input=stdin)
    if ok:
        assert p.returncode == 0, "%s\nstdout: %s\nstderr: %s\nserver log:\n%s" % (
            cmd, p.stdout[-2000:], p.stderr[-4000:], ref.log_tail())
    return p


def floe_append(floe, ref, table, rows, *extra):
    data = "".join(json.dumps(r) + "\n" for r in rows)
    p = run_floe(floe, ref, "append", table, "--file", "-", "--output", "json", *extra, stdin=data)
    return json.loads(p.stdout)


def by_id(rows):
    return sorted(rows, key=lambda r: r["id"])


@pytest.fixture(scope="module")
def events(floe, ref_catalog):
    """A partitioned v2 table created by PyIceberg in the reference catalog, then two
    `floe append` commits (the first written in batches of 300 rows)."""
    cat = py_catalog(floe, ref_catalog)
    ns = "foreign_%s" % uuid.uuid4().hex[:8]
    cat.create_namespace(ns)
    t = cat.create_table("%s.events" % ns, schema=SCHEMA, partition_spec=SPEC)
    assert t.metadata_location.startswith(ref_catalog.warehouse + "/")
    name = "%s.events" % ns
    first, second = make_rows(0, 900), make_rows(900, 400)
    r1 = floe_append(floe, ref_catalog, name, first, "--summary", "floe.test.batch=1", "--batch-rows", "300")
    r2 = floe_append(floe, ref_catalog, name, second, "--summary", "floe.test.batch=2")
    return cat, name, (r1, r2), first + second


def test_two_appends_read_back_by_pyiceberg(floe, ref_catalog, events):
    cat, name, (r1, r2), rows = events
    assert r1["added-records"] == 900 and r2["added-records"] == 400

    t = cat.load_table(name)
    # Java wrote the table metadata: the new metadata file lives in the table's location.
    assert t.metadata_location.startswith(t.metadata.location + "/metadata/")
    snaps = t.metadata.snapshots
    assert [s.snapshot_id for s in snaps] == [r1["snapshot-id"], r2["snapshot-id"]]
    assert t.metadata.current_snapshot_id == r2["snapshot-id"]
    assert snaps[0].parent_snapshot_id is None
    assert snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert snaps[1].sequence_number == snaps[0].sequence_number + 1
    s1, s2 = snaps[0].summary, snaps[1].summary
    assert s1.operation.value == "append" and s2.operation.value == "append"
    assert s1["floe.test.batch"] == "1" and s2["floe.test.batch"] == "2"
    assert s1["added-records"] == "900" and s1["total-records"] == "900"
    assert s2["added-records"] == "400" and s2["total-records"] == "1300"
    files = list(t.scan().plan_files())
    assert int(s2["total-data-files"]) == len(files)
    assert int(s1["added-data-files"]) + int(s2["added-data-files"]) == len(files)
    for task in files:
        assert task.file.file_path.startswith(t.metadata.location + "/data/")

    got = [norm_row(r) for r in t.scan().to_arrow().to_pylist()]
    assert by_id(got) == by_id([norm_row(r) for r in rows])
    old = t.scan(snapshot_id=r1["snapshot-id"]).to_arrow()
    assert sorted(old.column("id").to_pylist()) == list(range(900))


def test_floe_scan_prints_the_same_rows(floe, ref_catalog, events):
    cat, name, _, rows = events
    p = run_floe(floe, ref_catalog, "scan", name)
    floe_rows = [norm_row(json.loads(line)) for line in p.stdout.splitlines()]
    assert by_id(floe_rows) == by_id([norm_row(r) for r in rows])
    py_rows = [norm_row(r) for r in cat.load_table(name).scan().to_arrow().to_pylist()]
    assert by_id(floe_rows) == by_id(py_rows)

    p = run_floe(floe, ref_catalog, "snapshots", name, "--output", "json")
    doc = json.loads(p.stdout)
    snaps = doc["snapshots"] if isinstance(doc, dict) else doc
    assert [s["snapshot-id"] for s in snaps] == [s.snapshot_id for s in cat.load_table(name).metadata.snapshots]


def test_vended_credentials_and_auth_modes(floe, ref_catalog):
    """The data-plane keys come from the table's config when floe has none; the catalog's
    OAuth2 token endpoint and a bearer token are accepted; a missing table is a clean 404."""
    cat = py_catalog(floe, ref_catalog)
    ns = "vend_%s" % uuid.uuid4().hex[:8]
    cat.create_namespace(ns)
    cat.create_table((ns, "events"), schema=SCHEMA, partition_spec=SPEC)
    name = "%s.events" % ns
    no_keys = {k: v for k, v in floe_env().items() if k not in ("FLOE_ACCESS_KEY_ID", "FLOE_SECRET_ACCESS_KEY")}
    batches = [make_rows(30000, 60), make_rows(31000, 60), make_rows(32000, 60)]
    auths = [("--auth", "none"), ("--auth", "oauth2", "--credential", "floe-client:floe-secret"),
             ("--auth", "bearer", "--token", "opaque-token")]
    for rows, auth in zip(batches, auths):
        cmd = [FLOE_BIN, "append", name, "--file", "-", "--catalog-uri", ref_catalog.uri, *auth,
               "--s3-endpoint", floe.endpoint, "--region", REGION]
        p = subprocess.run(cmd, env=no_keys, capture_output=True, text=True, timeout=300,
                           input="".join(json.dumps(r) + "\n" for r in rows))
        assert p.returncode == 0, "%s\n%s\nserver log:\n%s" % (cmd, p.stderr, ref_catalog.log_tail())
    want = by_id([norm_row(r) for b in batches for r in b])
    p = subprocess.run(floe_cmd(floe, ref_catalog, "scan", name), env=no_keys, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert by_id([norm_row(json.loads(line)) for line in p.stdout.splitlines()]) == want
    t = cat.load_table(name)
    assert len(t.metadata.snapshots) == 3
    assert by_id([norm_row(r) for r in t.scan().to_arrow().to_pylist()]) == want

    p = run_floe(floe, ref_catalog, "append", "%s.nothere" % ns, "--file", "-", stdin="{}\n", ok=False)
    assert p.returncode == 1 and "404 NoSuchTableException" in p.stderr


def test_concurrent_appends_all_land(floe, ref_catalog):
    """Three `floe append` processes at once on a table with history: each commit asserts the
    parent it built on, the reference server answers the losers 409 (CommitFailedException)
    and they re-base."""
    cat = py_catalog(floe, ref_catalog)
    ns = "race_%s" % uuid.uuid4().hex[:8]
    cat.create_namespace(ns)
    cat.create_table((ns, "events"), schema=SCHEMA, partition_spec=SPEC)
    name = "%s.events" % ns
    base = make_rows(0, 200)
    floe_append(floe, ref_catalog, name, base)
    k_procs, n = 3, 150
    procs = []
    for k in range(k_procs):
        cmd = floe_cmd(floe, ref_catalog, "append", name, "--file", "-", "--output", "json",
                       "--summary", "floe.test.racer=%d" % k)
        procs.append(subprocess.Popen(cmd, env=floe_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    # Write every input before closing any, so the commits start together.
    batches = [make_rows(20000 + k * 1000, n) for k in range(k_procs)]
    for p, rows in zip(procs, batches):
        p.stdin.write("".join(json.dumps(r) + "\n" for r in rows))
    for p in procs:
        p.stdin.close()
    results = []
    for p in procs:
        out, err = p.stdout.read(), p.stderr.read()
        assert p.wait(timeout=300) == 0, "%s\nserver log:\n%s" % (err, ref_catalog.log_tail())
        results.append(json.loads(out))

    t = cat.load_table(name)
    snaps = t.metadata.snapshots
    assert len(snaps) == 1 + k_procs
    new = snaps[1:]
    assert sorted(s.snapshot_id for s in new) == sorted(r["snapshot-id"] for r in results)
    # One linear chain: each new snapshot's parent is the one before it, sequence numbers +1,
    # totals counted on top of the parent the commit finally landed on.
    for prev, cur in zip(snaps, new):
        assert cur.parent_snapshot_id == prev.snapshot_id
        assert cur.sequence_number == prev.sequence_number + 1
    assert [int(s.summary["total-records"]) for s in new] == [200 + n * (i + 1) for i in range(k_procs)]
    racers = {s.summary["floe.test.racer"] for s in new}
    assert racers == {str(k) for k in range(k_procs)}
    got = [norm_row(r) for r in t.scan().to_arrow().to_pylist()]
    assert by_id(got) == by_id([norm_row(r) for b in [base] + batches for r in b])
    # Which commits re-based: the manifest list name carries the attempt number
    # (snap-<id>-<attempt>-<uuid>.avro); racing three at once, at least one lost a round.
    attempts = [int(re.search(r"/snap-\d+-(\d+)-", s.manifest_list).group(1)) for s in new]
    print("commit attempts per racer:", attempts)
    assert max(attempts) > 1, attempts
