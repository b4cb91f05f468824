"""floe's own Iceberg REST client and table IO against a live `floe serve`:
`floe snapshots` compared with PyIceberg's view of the same table, the IO layer
(tests/tools/io_tool.c) compared with boto3's view of floe's data plane, auth
failures, and a stale commit reported as a conflict."""
import datetime
import hashlib
import json
import os
import subprocess
import uuid

import pyarrow as pa
import pytest

from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY, make_client
from rest_fixtures import (  # noqa: F401 - fixtures
    catalog_url, rest_catalog, s3tables, table_bucket, unique)

pytest.importorskip("pyiceberg")

from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

IO_TOOL = os.path.join(os.path.dirname(FLOE_BIN), "io_tool")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "name", StringType(), required=False))
ARROW = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rows(ids):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(["r%d" % i for i in ids])},
                    schema=ARROW)


def clean_env(keys="FLOE", secret=SECRET_KEY, **extra):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("AWS_") or k.startswith("FLOE_"):
            env.pop(k)
    if keys:
        env[keys + "_ACCESS_KEY_ID"] = ACCESS_KEY
        env[keys + "_SECRET_ACCESS_KEY"] = secret
    env.update(extra)
    return env


def conn(floe, arn):
    return ["--catalog-uri", catalog_url(floe) + "/iceberg", "--warehouse", arn, "--region", REGION]


def snapshots(floe, arn, table, *args, env=None, ok=True):
    p = subprocess.run([FLOE_BIN, "snapshots", table, *conn(floe, arn), *args],
                       env=env or clean_env(), capture_output=True, text=True, timeout=60)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def io_tool(floe, arn, table, *args, env=None, ok=True, text=True):
    if not os.path.exists(IO_TOOL):
        pytest.skip("io_tool not built: %s" % IO_TOOL)
    p = subprocess.run([IO_TOOL, *conn(floe, arn), table, *args], env=env or clean_env(),
                       capture_output=True, text=text, timeout=120)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def events(rest_catalog):
    """A table with two PyIceberg appends: (namespace, table name, pyiceberg table)."""
    ns = unique("snap")
    rest_catalog.create_namespace(ns)
    tbl = rest_catalog.create_table("%s.events" % ns, schema=SCHEMA)
    tbl.append(rows(range(0, 5)))
    tbl.append(rows(range(5, 12)))
    return ns, "events", rest_catalog.load_table("%s.events" % ns)


def s3_loc(location):
    assert location.startswith("s3://"), location
    bucket, _, key = location[5:].partition("/")
    return bucket, key


# ------------------------------------------------------------------ floe snapshots

def test_snapshots_json_matches_pyiceberg(floe, table_bucket, events):
    ns, name, tbl = events
    doc = json.loads(snapshots(floe, table_bucket, "%s.%s" % (ns, name), "--output", "json").stdout)
    md = tbl.metadata
    assert doc["table"] == "%s.%s" % (ns, name)
    assert doc["metadata-location"] == tbl.metadata_location
    assert doc["table-uuid"] == str(md.table_uuid)
    assert doc["format-version"] == md.format_version
    assert doc["current-snapshot-id"] == md.current_snapshot_id
    peer = md.snapshots
    assert len(peer) == 2 and len(doc["snapshots"]) == 2
    for mine, theirs in zip(doc["snapshots"], peer):
        assert mine["snapshot-id"] == theirs.snapshot_id
        assert mine["parent-snapshot-id"] == theirs.parent_snapshot_id
        assert mine["sequence-number"] == theirs.sequence_number
        assert mine["timestamp-ms"] == theirs.timestamp_ms
        iso = datetime.datetime.fromtimestamp(theirs.timestamp_ms / 1000, datetime.timezone.utc)
        assert mine["timestamp"] == iso.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (theirs.timestamp_ms % 1000)
        assert mine["manifest-list"] == theirs.manifest_list
        assert mine["schema-id"] == theirs.schema_id
        assert mine["operation"] == theirs.summary.operation.value == "append"
        summary = theirs.summary.additional_properties
        for k in ("added-records", "total-records", "added-data-files", "total-data-files"):
            assert mine["summary"][k] == summary[k], k
        assert mine["current"] == (theirs.snapshot_id == md.current_snapshot_id)
    first, second = doc["snapshots"]
    assert first["parent-snapshot-id"] is None and second["parent-snapshot-id"] == first["snapshot-id"]
    assert (first["summary"]["added-records"], second["summary"]["total-records"]) == ("5", "12")


def test_snapshots_text(floe, table_bucket, events):
    ns, name, tbl = events
    out = snapshots(floe, table_bucket, "%s.%s" % (ns, name)).stdout
    lines = out.splitlines()
    assert lines[0].startswith("table %s.%s: 2 snapshots, current %d" % (ns, name, tbl.metadata.current_snapshot_id))
    assert lines[1] == "metadata " + tbl.metadata_location
    header = next(l for l in lines if "SNAPSHOT-ID" in l)
    for col in ("PARENT", "SEQ", "TIMESTAMP", "OPERATION", "ADDED-RECORDS", "TOTAL-RECORDS", "MANIFEST-LIST"):
        assert col in header
    body = lines[lines.index(header) + 1:]
    assert len(body) == 2
    cur = [l for l in body if l.startswith("*")]
    assert len(cur) == 1 and str(tbl.metadata.current_snapshot_id) in cur[0] and " 12 " in cur[0]
    assert all("append" in l for l in body)


def test_snapshots_aws_env_keys_and_osstables(floe, table_bucket, events):
    ns, name, _ = events
    p = snapshots(floe, table_bucket, "%s.%s" % (ns, name), "--output", "json", "--signing-name",
                  "osstables", env=clean_env(keys="AWS"))
    assert len(json.loads(p.stdout)["snapshots"]) == 2


def test_snapshots_of_an_empty_table(floe, table_bucket, rest_catalog, events):
    ns = events[0]
    rest_catalog.create_table("%s.empty" % ns, schema=SCHEMA)
    doc = json.loads(snapshots(floe, table_bucket, "%s.empty" % ns, "--output", "json").stdout)
    assert doc["snapshots"] == [] and doc["current-snapshot-id"] is None
    assert "no snapshots" in snapshots(floe, table_bucket, "%s.empty" % ns).stdout


def test_snapshots_errors(floe, table_bucket, events):
    ns, name, _ = events
    p = snapshots(floe, table_bucket, "%s.nosuch" % ns, ok=False)
    assert p.returncode == 1 and "HTTP 404" in p.stderr and "NoSuchTable" in p.stderr, p.stderr
    p = snapshots(floe, table_bucket, "nonamespace", ok=False)
    assert p.returncode == 2
    p = snapshots(floe, table_bucket, "a.b", "--output", "yaml", ok=False)
    assert p.returncode == 2
    missing = table_bucket.rsplit("/", 1)[0] + "/nosuchbucket-" + uuid.uuid4().hex[:8]
    p = snapshots(floe, missing, "%s.%s" % (ns, name), ok=False)
    assert p.returncode == 1 and "HTTP 404" in p.stderr, p.stderr


def test_auth_failures_are_clear(floe, table_bucket, events):
    table = "%s.%s" % events[:2]
    wrong = "wrong-secret-" + uuid.uuid4().hex
    p = snapshots(floe, table_bucket, table, env=clean_env(secret=wrong), ok=False)
    assert p.returncode == 1 and "HTTP 403" in p.stderr, p.stderr
    assert wrong not in p.stderr + p.stdout and SECRET_KEY not in p.stderr + p.stdout
    p = snapshots(floe, table_bucket, table, "--auth", "sigv4", env=clean_env(keys=None), ok=False)
    assert p.returncode == 1 and "SigV4 needs keys" in p.stderr, p.stderr
    p = snapshots(floe, table_bucket, table, env=clean_env(keys=None), ok=False)  # unsigned
    assert p.returncode == 1 and ("HTTP 403" in p.stderr or "HTTP 401" in p.stderr), p.stderr
    p = snapshots(floe, table_bucket, table, "--signing-name", "execute-api", ok=False)
    assert p.returncode == 1 and "HTTP 400" in p.stderr and "execute-api" in p.stderr, p.stderr
    p = snapshots(floe, table_bucket, table, "--catalog-uri", "http://127.0.0.1:1/iceberg", ok=False)
    assert p.returncode == 1 and "127.0.0.1:1" in p.stderr, p.stderr


# ------------------------------------------------------------------ catalog operations

def test_list_create_drop_through_the_client(floe, table_bucket, events):
    ns, name, _ = events
    table = "%s.%s" % (ns, name)
    assert [ns] in json.loads(io_tool(floe, table_bucket, table, "list-namespaces").stdout)
    schema = json.dumps({"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "k", "type": "string", "required": False}]})
    loc = io_tool(floe, table_bucket, table, "create-table", "made_by_c", schema).stdout.strip()
    assert loc.startswith("s3://") and loc.endswith(".metadata.json")
    ids = json.loads(io_tool(floe, table_bucket, table, "list-tables").stdout)
    assert {"namespace": [ns], "name": "made_by_c"} in ids and {"namespace": [ns], "name": name} in ids
    p = io_tool(floe, table_bucket, table, "create-table", "made_by_c", schema, ok=False)
    assert p.returncode == 1 and "HTTP 409" in p.stderr and "AlreadyExists" in p.stderr, p.stderr
    io_tool(floe, table_bucket, table, "drop-table", "made_by_c")
    ids = json.loads(io_tool(floe, table_bucket, table, "list-tables").stdout)
    assert {"namespace": [ns], "name": "made_by_c"} not in ids


def test_commit_conflict_and_success(floe, table_bucket, rest_catalog, events):
    ns, name, _ = events
    table = "%s.%s" % (ns, name)
    tbl = rest_catalog.load_table(table)
    stale = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 12345}]
    upd = [{"action": "set-properties", "updates": {"floe.test": "stale"}}]
    p = io_tool(floe, table_bucket, table, "commit", json.dumps(stale), json.dumps(upd), ok=False)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "conflict" in p.stderr and "HTTP 409" in p.stderr, p.stderr
    tbl.refresh()
    assert "floe.test" not in tbl.metadata.properties

    good = [{"type": "assert-table-uuid", "uuid": str(tbl.metadata.table_uuid)},
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": tbl.metadata.current_snapshot_id}]
    upd = [{"action": "set-properties", "updates": {"floe.test": "ok"}}]
    p = io_tool(floe, table_bucket, table, "commit", json.dumps(good), json.dumps(upd))
    tbl.refresh()
    assert tbl.metadata.properties["floe.test"] == "ok"
    assert p.stdout.strip() == tbl.metadata_location

    p = io_tool(floe, table_bucket, table, "commit", "[]", json.dumps([{"action": "no-such-action"}]), ok=False)
    assert p.returncode == 1 and "HTTP 400" in p.stderr, p.stderr


# ------------------------------------------------------------------ table IO

@pytest.fixture(scope="module")
def s3(floe):
    return make_client(floe.endpoint)


def test_io_put_get_range_head_delete(floe, table_bucket, events, s3, tmp_path):
    table = "%s.%s" % events[:2]
    location = io_tool(floe, table_bucket, table, "location").stdout.strip()
    keys = io_tool(floe, table_bucket, table, "config-keys").stdout.split()
    assert "s3.endpoint" in keys and "client.region" in keys
    data = os.urandom(1_500_000)  # over the 1 MiB footer cache
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    rel = "data/io-test/%s.bin" % uuid.uuid4().hex
    io_tool(floe, table_bucket, table, "put", rel, str(src))
    bucket, key = s3_loc(location + "/" + rel)
    got = s3.get_object(Bucket=bucket, Key=key)
    assert got["Body"].read() == data

    out = tmp_path / "out.bin"
    io_tool(floe, table_bucket, table, "get", rel, str(out))
    assert out.read_bytes() == data
    io_tool(floe, table_bucket, table, "range", rel, "1000", "5000", str(out))
    peer = s3.get_object(Bucket=bucket, Key=key, Range="bytes=1000-5999")["Body"].read()
    assert out.read_bytes() == peer == data[1000:6000]

    head = json.loads(io_tool(floe, table_bucket, table, "head", rel).stdout)
    peer = s3.head_object(Bucket=bucket, Key=key)
    assert head["size"] == peer["ContentLength"] == len(data)
    assert head["etag"] == peer["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()

    # the Parquet source: tail cached, the range read remotely once per call
    st = json.loads(io_tool(floe, table_bucket, table, "source", rel, "10", "100", str(out)).stdout)
    assert out.read_bytes() == data[10:110] and st["size"] == len(data) and st["requests"] == 3
    st = json.loads(io_tool(floe, table_bucket, table, "source", rel, str(len(data) - 64), "64",
                            str(out)).stdout)
    assert out.read_bytes() == data[-64:] and st["requests"] == 1

    p = io_tool(floe, table_bucket, table, "range", rel, str(len(data) - 10), "20", str(out), ok=False)
    assert p.returncode == 1

    io_tool(floe, table_bucket, table, "delete", rel)
    with pytest.raises(Exception) as ei:
        s3.head_object(Bucket=bucket, Key=key)
    assert "404" in str(ei.value)
    p = io_tool(floe, table_bucket, table, "get", rel, str(out), ok=False)
    assert p.returncode == 1 and "HTTP 404" in p.stderr and "NoSuchKey" in p.stderr, p.stderr
    io_tool(floe, table_bucket, table, "delete", rel)  # deleting twice is fine


def test_io_reads_metadata_files_and_shares_clients_across_threads(floe, table_bucket, events, tmp_path):
    ns, name, tbl = events
    table = "%s.%s" % (ns, name)
    out = tmp_path / "md.json"
    io_tool(floe, table_bucket, table, "get", tbl.metadata_location, str(out))
    md = json.loads(out.read_text())
    assert md["table-uuid"] == str(tbl.metadata.table_uuid)
    assert [s["snapshot-id"] for s in md["snapshots"]] == [s.snapshot_id for s in tbl.metadata.snapshots]
    p = io_tool(floe, table_bucket, table, "stress", "8")
    assert p.stdout.strip() == "40", p.stderr


def test_io_streaming_and_multipart(floe, table_bucket, events, s3, tmp_path):
    table = "%s.%s" % events[:2]
    location = io_tool(floe, table_bucket, table, "location").stdout.strip()
    data = os.urandom(12 * 1024 * 1024 + 12345)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    mib5 = str(5 * 1024 * 1024)
    rel = "data/io-test/multi-%s.bin" % uuid.uuid4().hex
    io_tool(floe, table_bucket, table, "putfd", rel, str(src), mib5, mib5)
    bucket, key = s3_loc(location + "/" + rel)
    head = s3.head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == len(data) and head["ETag"].endswith('-3"'), head["ETag"]
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []

    rel2 = "data/io-test/single-%s.bin" % uuid.uuid4().hex
    io_tool(floe, table_bucket, table, "putfd", rel2, str(src))  # below the 64 MiB default: one PUT
    bucket, key2 = s3_loc(location + "/" + rel2)
    head = s3.head_object(Bucket=bucket, Key=key2)
    assert head["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    rel3 = "data/io-test/empty-%s.bin" % uuid.uuid4().hex
    io_tool(floe, table_bucket, table, "putfd", rel3, str(empty))
    assert s3.head_object(Bucket=bucket, Key=s3_loc(location + "/" + rel3)[1])["ContentLength"] == 0
    for r in (rel, rel2, rel3):
        io_tool(floe, table_bucket, table, "delete", r)


def test_io_local_paths(floe, table_bucket, events, tmp_path):
    table = "%s.%s" % events[:2]
    src = tmp_path / "in.bin"
    src.write_bytes(b"hello local warehouse")
    dst = tmp_path / "wh" / "t" / "data" / "f.bin"
    io_tool(floe, table_bucket, table, "put", "file://%s" % dst, str(src))
    assert dst.read_bytes() == b"hello local warehouse"
    out = tmp_path / "out.bin"
    io_tool(floe, table_bucket, table, "range", str(dst), "6", "5", str(out))
    assert out.read_bytes() == b"local"
    io_tool(floe, table_bucket, table, "delete", str(dst))
    assert not dst.exists()


def test_io_errors(floe, table_bucket, events, tmp_path):
    table = "%s.%s" % events[:2]
    src = tmp_path / "in.bin"
    src.write_bytes(b"x")
    p = io_tool(floe, table_bucket, table, "put", "gs://bucket/key", str(src), ok=False)
    assert p.returncode == 1 and "unsupported location" in p.stderr
    p = subprocess.run([IO_TOOL, *conn(floe, table_bucket), "--s3-endpoint", "http://127.0.0.1:1", table,
                        "head", "data/x"], env=clean_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "127.0.0.1:1" in p.stderr, p.stderr
    p = subprocess.run([IO_TOOL, *conn(floe, table_bucket), table, "get", "s3://no-such-bucket-%s/k" % uuid.uuid4().hex[:8],
                        str(tmp_path / "o")], env=clean_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "HTTP 404" in p.stderr and "NoSuchBucket" in p.stderr, p.stderr


# ------------------------------------------------------------------ against a scripted catalog
# A tiny in-process REST catalog that records requests and answers as each test scripts:
# bearer and OAuth2 auth, pagination, retries of GETs on 5xx, no retry of commits.

import http.server  # noqa: E402
import threading  # noqa: E402
from urllib.parse import parse_qs, urlsplit  # noqa: E402


class FakeCatalog:
    def __init__(self):
        self.requests = []
        self.token = None          # required bearer token, if set
        self.fail_gets = {}        # path -> list of statuses to answer before succeeding
        self.commit_status = 200
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, doc=None):
                body = json.dumps(doc).encode() if doc is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _err(self, status, typ, msg):
                self._send(status, {"error": {"message": msg, "type": typ, "code": status}})

            def _handle(self):
                u = urlsplit(self.path)
                q = parse_qs(u.query, keep_blank_values=True)
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.requests.append({"method": self.command, "path": u.path, "query": q,
                                       "auth": self.headers.get("Authorization"), "body": body})
                if u.path == "/cat/v1/oauth/tokens":
                    form = parse_qs(body.decode())
                    if form.get("client_id") == ["cid"] and form.get("client_secret") == ["csec"] \
                            and form.get("grant_type") == ["client_credentials"]:
                        return self._send(200, {"access_token": "tok1", "token_type": "bearer",
                                                "expires_in": 3600})
                    return self._send(401, {"error": "invalid_client", "error_description": "bad client"})
                if outer.token and self.headers.get("Authorization") != "Bearer " + outer.token:
                    return self._err(401, "NotAuthorizedException", "Not authorized")
                pending = outer.fail_gets.get(u.path)
                if self.command == "GET" and pending:
                    return self._err(pending.pop(0), "ServiceUnavailableException", "try later")
                if u.path == "/cat/v1/config":
                    return self._send(200, {"defaults": {"prefix": "pfx", "a": "d"},
                                            "overrides": {"a": "o"}})
                if u.path == "/cat/v1/pfx/namespaces" and self.command == "GET":
                    if q.get("pageToken") == ["p2"]:
                        return self._send(200, {"namespaces": [["b"]], "next-page-token": None})
                    return self._send(200, {"namespaces": [["a"]], "next-page-token": "p2"})
                if u.path.endswith("/tables") and self.command == "GET":
                    return self._send(200, {"identifiers": [{"namespace": ["a", "b"], "name": "t"}]})
                if "/tables/" in u.path and self.command == "GET":
                    return self._send(200, {"metadata-location": "file:///tmp/m.json",
                                            "metadata": {"format-version": 2, "location": "file:///tmp/t",
                                                         "table-uuid": "u", "snapshots": []},
                                            "config": {"s3.endpoint": "http://x"}})
                if "/tables/" in u.path and self.command == "POST":
                    if outer.commit_status != 200:
                        return self._err(outer.commit_status, "CommitStateUnknownException", "unknown")
                    return self._send(200, {"metadata-location": "file:///tmp/m2.json",
                                            "metadata": {"format-version": 2, "location": "file:///tmp/t"}})
                return self._err(404, "NoSuchTableException", "no route " + u.path)

            do_GET = do_POST = do_DELETE = do_HEAD = _handle

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.uri = "http://127.0.0.1:%d/cat" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def run(self, *cmd, opts=(), table="a.b.t"):
        if not os.path.exists(IO_TOOL):
            pytest.skip("io_tool not built: %s" % IO_TOOL)
        return subprocess.run([IO_TOOL, "--catalog-uri", self.uri, *opts, table, *cmd],
                              env=clean_env(keys=None), capture_output=True, text=True, timeout=60)


@pytest.fixture
def fake():
    f = FakeCatalog()
    yield f
    f.srv.shutdown()
    f.srv.server_close()


def test_fake_bearer_pagination_and_paths(fake):
    fake.token = "tok"
    p = fake.run("list-namespaces", opts=["--token", "tok"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [["a"], ["b"]]
    lists = [r for r in fake.requests if r["path"] == "/cat/v1/pfx/namespaces"]
    assert [r["query"].get("pageToken") for r in lists] == [None, ["p2"]]
    assert all(r["auth"] == "Bearer tok" for r in fake.requests)
    p = fake.run("list-tables", opts=["--token", "tok"])
    assert p.returncode == 0, p.stderr
    assert fake.requests[-1]["path"] == "/cat/v1/pfx/namespaces/a%1Fb/tables"
    p = fake.run("list-tables", opts=["--token", "wrong"])
    assert p.returncode == 1 and "HTTP 401" in p.stderr and "wrong" not in p.stderr, p.stderr


def test_fake_oauth2_client_credentials(fake):
    fake.token = "tok1"
    p = fake.run("location", opts=["--credential", "cid:csec"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "file:///tmp/t"
    assert fake.requests[0]["path"] == "/cat/v1/oauth/tokens" and fake.requests[0]["auth"] is None
    assert all(r["auth"] == "Bearer tok1" for r in fake.requests[1:])
    p = fake.run("location", opts=["--credential", "cid:nope"])
    assert p.returncode == 1 and "HTTP 401" in p.stderr and "nope" not in p.stderr, p.stderr


def test_fake_get_retries_and_commit_is_not_retried(fake):
    fake.fail_gets["/cat/v1/pfx/namespaces/a%1Fb/tables/t"] = [503, 500]
    p = fake.run("location")
    assert p.returncode == 0, p.stderr
    loads = [r for r in fake.requests if r["path"].endswith("/tables/t") and r["method"] == "GET"]
    assert len(loads) == 3
    fake.requests.clear()
    fake.commit_status = 500
    p = fake.run("commit", "[]", "[]")
    assert p.returncode == 4 and "commit state unknown" in p.stderr and "HTTP 500" in p.stderr, p.stderr
    posts = [r for r in fake.requests if r["method"] == "POST"]
    assert len(posts) == 1
    body = json.loads(posts[0]["body"])
    assert body == {"identifier": {"namespace": ["a", "b"], "name": "t"}, "requirements": [], "updates": []}
    fake.commit_status = 200
    p = fake.run("commit", "[]", "[]")
    assert p.returncode == 0 and p.stdout.strip() == "file:///tmp/m2.json", p.stderr
    fake.fail_gets["/cat/v1/config"] = [502] * 10
    p = fake.run("location")
    assert p.returncode == 1 and "HTTP 502" in p.stderr, p.stderr
    assert fake.fail_gets["/cat/v1/config"] == [502] * 6  # 1 try + 3 retries
