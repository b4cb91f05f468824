"""floe's signature verifier against the clients' own signers, computed at test
time (a live oracle: no signature is stored in the tree). The SDKs sign;
floe's verifier (build/sigcheck, tests/tools/sigcheck.c, the same
fl_sigv4_verify the servers call) must accept exactly what they sign and
refuse every tampered variant with OSS's error codes.

- OSS4-HMAC-SHA256, object flavour: the requests alibabacloud-oss-v2's object
  client builds (captured at its HTTP client, never sent): puts with
  x-oss-meta-*, ranged gets, heads, copies, every multipart call, listings,
  batch deletes, keys with spaces, '+', UTF-8, reserved characters and
  dot-segments, path style and virtual-hosted, a
  security token; the SDK's presigner's URLs.
- OSS4, tables flavour: every operation of the SDK's tables client (the
  canonical resource is the table-bucket ARN's, as signer/tables_v4.py
  builds it), header and presigned forms.
- OSS V1: the requests oss2's Bucket sends (captured at its session) and its
  sign_url, with signed and unsigned sub-resources.
- The signing-key cache: a SigV4 "osstables" key (botocore) and an OSS4 one
  for the same key id, date and region, verified in one process, in turn.
No floe server is started."""
import datetime
import json
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import requests

oss = pytest.importorskip("alibabacloud_oss_v2")
oss2 = pytest.importorskip("oss2")
from alibabacloud_oss_v2 import tables as oss_tables  # noqa: E402
from alibabacloud_oss_v2.signer.tables_v4 import TablesSignerV4  # noqa: E402
from alibabacloud_oss_v2.signer.v4 import SignerV4  # noqa: E402
from alibabacloud_oss_v2.types import Credentials, HttpRequest, SigningContext  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOL = (Path(os.environ["FLOE_BIN"]).parent if os.environ.get("FLOE_BIN") else ROOT / "build") / "sigcheck"
AK, SK = "LTAI5tSigcheckKey01", "sig/check+secret=="
REGION = "us-east-1"
ACCOUNT = "123456789012"
ARN = f"acs:osstables:{REGION}:{ACCOUNT}:bucket/tb-one"
tm = oss_tables.models

KEYS = ["plain.txt", "dir/a b+c.txt", "é/ü ñ 東京.csv", "x/~!*'()$&=;:@,[].bin",
        "a//b/./../c", "%2F literal %25", "tab\there"]


def run(cases):
    """All cases through one sigcheck process; its answers in order."""
    if not TOOL.exists():
        pytest.skip(f"{TOOL} not built")
    p = subprocess.run([str(TOOL)], input="".join(json.dumps(c) + "\n" for c in cases),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(cases), p.stderr
    return out


def case(name, method, url, headers, now=None, **kw):
    u = urlsplit(url)
    c = {"name": name, "method": method, "path": u.path or "/", "query": u.query,
         "headers": [[k, v] for k, v in headers.items()] + [["host", u.netloc]],
         "now": int(now if now is not None else time.time()), "akid": AK, "secret": SK,
         "region": REGION}
    c.update(kw)
    return c


def hdr(c, name):
    for k, v in c["headers"]:
        if k.lower() == name:
            return v
    return None


def with_header(c, name, value):
    d = json.loads(json.dumps(c))
    d["headers"] = [h for h in d["headers"] if h[0].lower() != name] + ([[name, value]] if value is not None else [])
    return d


def changed(c, **kw):
    d = json.loads(json.dumps(c))
    d.update(kw)
    return d


def assert_all_ok(cases, res, dialect):
    bad = [(c["name"], r) for c, r in zip(cases, res) if not r["ok"]]
    assert not bad, bad
    for c, r in zip(cases, res):
        assert r["verified_dialect"] == dialect and r["akid"] == AK, (c["name"], r)


# ---- capturing the SDKs' requests at their HTTP layer ----

class Captured(Exception):
    pass


class Capture(oss.types.HttpClient):
    """An HttpClient for alibabacloud-oss-v2 that keeps the signed request and sends nothing."""

    def __init__(self):
        self.reqs = []

    def send(self, request, **kwargs):
        self.reqs.append((request.method, request.url, dict(request.headers)))
        raise Captured()

    def open(self):
        pass

    def close(self):
        pass


def sdk_config(endpoint, cap, **kw):
    cfg = oss.config.load_default()
    cfg.credentials_provider = oss.credentials.StaticCredentialsProvider(AK, SK, kw.pop("token", None))
    cfg.region = REGION
    cfg.endpoint = endpoint
    cfg.retry_max_attempts = 1
    cfg.http_client = cap
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def capture(client, cap, calls):
    out = []
    for name, fn in calls:
        n = len(cap.reqs)
        try:
            fn(client)
        except Exception as e:  # the capture's, wrapped by the SDK
            assert "Captured" in repr(e) or isinstance(e, Captured) or len(cap.reqs) > n, (name, e)
        assert len(cap.reqs) == n + 1, name
        out.append((name,) + cap.reqs[-1])
    return out


def object_calls(bucket, key):
    M = oss.models
    uid = "0004B9894A22E5B1888A1E29F823+/="
    return [
        ("put", lambda c: c.put_object(M.PutObjectRequest(
            bucket=bucket, key=key, body=b"hello oss", content_type="text/plain; charset=utf-8",
            metadata={"Note": "two  spaces", "Author": "é"}, content_md5="vKNN6h0cDI3k/kE/i+WqKg=="))),
        ("get range", lambda c: c.get_object(M.GetObjectRequest(bucket=bucket, key=key, range_header="bytes=2-6"))),
        ("get overrides", lambda c: c.get_object(M.GetObjectRequest(
            bucket=bucket, key=key, response_content_type="text/csv; charset=utf-8",
            response_content_disposition='attachment; filename="a b.csv"'))),
        ("head", lambda c: c.head_object(M.HeadObjectRequest(bucket=bucket, key=key))),
        ("copy", lambda c: c.copy_object(M.CopyObjectRequest(
            bucket=bucket, key=key + ".copy", source_bucket=bucket, source_key=key,
            metadata_directive="REPLACE", metadata={"Copied": "yes"}))),
        ("initiate", lambda c: c.initiate_multipart_upload(M.InitiateMultipartUploadRequest(
            bucket=bucket, key=key, content_type="application/octet-stream"))),
        ("upload part", lambda c: c.upload_part(M.UploadPartRequest(
            bucket=bucket, key=key, upload_id=uid, part_number=2, body=b"part two"))),
        ("upload part copy", lambda c: c.upload_part_copy(M.UploadPartCopyRequest(
            bucket=bucket, key=key, upload_id=uid, part_number=3, source_bucket=bucket,
            source_key="src key", source_range="bytes=0-9"))),
        ("complete", lambda c: c.complete_multipart_upload(M.CompleteMultipartUploadRequest(
            bucket=bucket, key=key, upload_id=uid, complete_multipart_upload=M.CompleteMultipartUpload(
                parts=[M.UploadPart(part_number=1, etag='"a"'), M.UploadPart(part_number=2, etag='"b"')])))),
        ("abort", lambda c: c.abort_multipart_upload(M.AbortMultipartUploadRequest(
            bucket=bucket, key=key, upload_id=uid))),
        ("list parts", lambda c: c.list_parts(M.ListPartsRequest(
            bucket=bucket, key=key, upload_id=uid, max_parts=5, part_number_marker=1))),
        ("delete", lambda c: c.delete_object(M.DeleteObjectRequest(bucket=bucket, key=key))),
    ]


def bucket_calls(bucket):
    M = oss.models
    return [
        ("list v2", lambda c: c.list_objects_v2(M.ListObjectsV2Request(
            bucket=bucket, prefix="a/b c+é", delimiter="/", max_keys=10, start_after="a/b c",
            continuation_token="tok+/=", encoding_type="url"))),
        ("list v1", lambda c: c.list_objects(M.ListObjectsRequest(
            bucket=bucket, prefix="p/", marker="p/m n", max_keys=3))),
        ("list uploads", lambda c: c.list_multipart_uploads(M.ListMultipartUploadsRequest(
            bucket=bucket, prefix="x", key_marker="k m", upload_id_marker="u"))),
        ("delete multiple", lambda c: c.delete_multiple_objects(M.DeleteMultipleObjectsRequest(
            bucket=bucket, objects=[M.DeleteObject(key="a b"), M.DeleteObject(key="é/c")], quiet=True))),
        ("put bucket", lambda c: c.put_bucket(M.PutBucketRequest(bucket=bucket))),
        ("head bucket", lambda c: c.get_bucket_info(M.GetBucketInfoRequest(bucket=bucket))),
        ("delete bucket", lambda c: c.delete_bucket(M.DeleteBucketRequest(bucket=bucket))),
        ("list buckets", lambda c: c.list_buckets(M.ListBucketsRequest(prefix="b", max_keys=5))),
    ]


def object_cases(endpoint="http://127.0.0.1:9000", vhost=False, **cfgkw):
    cap = Capture()
    client = oss.Client(sdk_config(endpoint, cap, **cfgkw))
    calls = bucket_calls("bkt")
    for k in KEYS:
        calls += [(f"{n} {k!r}", fn) for n, fn in object_calls("bkt", k)]
    cases = []
    for name, method, url, headers in capture(client, cap, calls):
        c = case(name, method, url, headers)
        if vhost:
            host = urlsplit(url).netloc
            if host.startswith("bkt."):
                c["resource"] = "/bkt/" + unquote(urlsplit(url).path[1:])
        cases.append(c)
    return cases


# ---- OSS4, object flavour ----

def test_oss4_object_client_requests_verify():
    cases = object_cases()
    assert len(cases) == 8 + 12 * len(KEYS)
    assert_all_ok(cases, run(cases), "oss4")


def test_oss4_virtual_hosted_and_token():
    cases = object_cases("http://oss-test.example:9000", vhost=True, token="sts-token/+=")
    vh = [c for c in cases if "resource" in c]
    assert len(vh) > len(KEYS) * 10
    assert all(hdr(c, "x-oss-security-token") == "sts-token/+=" for c in cases)
    res = run(cases)
    assert_all_ok(cases, res, "oss4")
    # the resource is what the virtual host names, not the path: another bucket fails
    wrong = [changed(c, resource="/other" + c["resource"][4:]) for c in vh]
    assert not any(r["ok"] for r in run(wrong))
    # the token is signed
    res = run([with_header(c, "x-oss-security-token", "other") for c in cases[:5]])
    assert [r["code"] for r in res] == ["SignatureDoesNotMatch"] * 5


def tamper_variants(c):
    """(what, case) pairs each of which must be refused."""
    az = hdr(c, "authorization")
    sig_end = az[-1]
    out = [
        ("signature", with_header(c, "authorization", az[:-1] + ("0" if sig_end != "0" else "1"))),
        ("method", changed(c, method="POST" if c["method"] != "POST" else "PUT")),
        ("path", changed(c, path=c["path"] + "x")),
        ("query added", changed(c, query=(c["query"] + "&" if c["query"] else "") + "acl")),
        ("x-oss header added", with_header(c, "x-oss-meta-extra", "1")),
        ("wrong secret", changed(c, secret="not-" + SK)),
        ("date", with_header(c, "x-oss-date", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(c["now"] - 60)))),
    ]
    for k, v in c["headers"]:
        lk = k.lower()
        if lk.startswith("x-oss-") and lk not in ("x-oss-date", "x-oss-content-sha256") or \
                lk in ("content-md5", "content-type"):
            out.append((f"{lk} value", with_header(c, lk, v + "x")))
    if "resource" in c:
        out.append(("resource", changed(c, resource=c["resource"] + "x")))
    return out


def test_oss4_tampered_variants_refused():
    cases = object_cases()
    variants = [(c["name"], what, v) for c in cases for what, v in tamper_variants(c)]
    res = run([v for _, _, v in variants])
    accepted = [(n, w) for (n, w, _), r in zip(variants, res) if r["ok"]]
    assert not accepted, accepted
    for (n, w, _), r in zip(variants, res):
        assert r["status"] == 403 and r["code"] == "SignatureDoesNotMatch", (n, w, r)


def test_oss4_time_window_keys_and_unsigned_amz():
    c = object_cases()[0]
    now = c["now"]
    res = run([changed(c, now=now + 16 * 60), changed(c, now=now - 16 * 60), changed(c, now=now + 14 * 60),
               changed(c, akid="LTAI5tOtherKey"), with_header(c, "x-amz-copy-source", "/b/k"),
               changed(c, region="cn-hangzhou"), changed(c, products=["osstables"]), changed(c, products=None),
               changed(c, head=True)])
    assert [r.get("code") for r in res[:5]] == ["RequestTimeTooSkewed", "RequestTimeTooSkewed", None,
                                                "InvalidAccessKeyId", "AccessDenied"]
    assert res[2]["ok"] and res[4]["detail_name"] == "HeadersNotSigned"
    assert not res[5]["ok"] and res[5]["detail_name"] == "Region"
    assert not res[6]["ok"] and not res[7]["ok"]
    assert res[8]["ok"]


def test_oss4_presigned_urls_from_the_sdk():
    M = oss.models
    client = oss.Client(sdk_config("http://127.0.0.1:9000", Capture()))
    reqs = []
    for k in KEYS:
        reqs += [("get", M.GetObjectRequest(bucket="bkt", key=k)),
                 ("get range", M.GetObjectRequest(bucket="bkt", key=k, range_header="bytes=0-1")),
                 ("head", M.HeadObjectRequest(bucket="bkt", key=k)),
                 ("put", M.PutObjectRequest(bucket="bkt", key=k, content_type="text/plain",
                                            metadata={"Note": "presigned"})),
                 ("initiate", M.InitiateMultipartUploadRequest(bucket="bkt", key=k)),
                 ("upload part", M.UploadPartRequest(bucket="bkt", key=k, upload_id="u+1", part_number=1))]
    cases = []
    for name, r in reqs:
        p = client.presign(r, expires=datetime.timedelta(seconds=600))
        hs = dict(p.signed_headers or {})
        cases.append(case(f"presign {name} {r.key!r}", p.method, p.url, hs))
    res = run(cases)
    assert_all_ok(cases, res, "oss4")
    assert all(r["presigned"] for r in res)
    assert any(hdr(c, "content-type") for c in cases)
    # expired, the expiry or the key changed, the signature changed, a signed header changed
    now = cases[0]["now"]
    bad = []
    for c in cases:
        q = c["query"]
        bad += [("expired", "AccessDenied", changed(c, now=now + 601)),
                ("expires", "SignatureDoesNotMatch", changed(c, query=q.replace("x-oss-expires=", "x-oss-expires=1"))),
                ("signature", "SignatureDoesNotMatch", changed(c, query=q[:-1] + ("0" if q[-1] != "0" else "1"))),
                ("path", "SignatureDoesNotMatch", changed(c, path=c["path"] + "x")),
                ("query", "SignatureDoesNotMatch", changed(c, query=q + "&x-oss-process=a"))]
        if hdr(c, "content-type"):
            bad.append(("content-type", "SignatureDoesNotMatch", with_header(c, "content-type", "text/html")))
    res = run([b for _, _, b in bad])
    for (what, code, b), r in zip(bad, res):
        assert not r["ok"] and r["code"] == code, (what, b["name"], r)
        if what == "expired":
            assert r["message"].startswith("Request has expired")


def test_oss4_direct_signer_forms():
    """The signers themselves at a fixed time: both products, header and query form,
    additional headers in the query, a security token in the query."""
    t0 = datetime.datetime(2026, 11, 30, 12, 34, 56, tzinfo=datetime.timezone.utc)
    now = int(t0.timestamp())
    out = []
    for product, signer, bucket, key, url, tables in [
            ("oss", SignerV4(), "bkt", "k y/é", "http://h:1/bkt/k%20y/%C3%A9?acl&x-oss-process=image%2Fresize", False),
            ("osstables", TablesSignerV4(), ARN, "get-table", "http://h:1/get-table?tableBucketARN="
             + "acs%3Aosstables%3Aus-east-1%3A123456789012%3Abucket%2Ftb-one&namespace=ns&name=t1", True)]:
        for query_form in (False, True):
            for token in (None, "tok/en+="):
                req = HttpRequest(method="GET", url=url, headers={"x-custom": "v", "Host": "h:1"})
                ctx = SigningContext(product=product, region=REGION, bucket=bucket, key=key, request=req,
                                     credentials=Credentials(AK, SK, token), signing_time=t0,
                                     additional_headers={"x-custom", "host"})
                if query_form:
                    ctx.auth_method_query = True
                    ctx.expiration_time = t0 + datetime.timedelta(seconds=900)
                signer.sign(ctx)
                hs = {k: v for k, v in req.headers.items() if k.lower() != "host"}
                c = case(f"{product} query={query_form} token={token}", "GET", req.url, hs, now=now + 1,
                         tables=tables)
                out.append(c)
    res = run(out)
    assert_all_ok(out, res, "oss4")
    assert [r["service"] for r in res] == ["oss"] * 4 + ["osstables"] * 4
    assert [r["presigned"] for r in res] == [False, False, True, True] * 2
    # x-custom is an additional header in every form
    assert [r["code"] for r in run([with_header(c, "x-custom", "w") for c in out])] == ["SignatureDoesNotMatch"] * 8
    # query form at and past its expiry
    q = [c for c in out if "x-oss-signature=" in c["query"]]
    assert all(r["ok"] for r in run([changed(c, now=now + 900) for c in q]))
    assert all(r["code"] == "AccessDenied" for r in run([changed(c, now=now + 901) for c in q]))


# ---- OSS4, tables flavour ----

def tables_calls():
    tarn = ARN + "/table/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    ns = "ns_1"
    meta = tm.TableMetadata(iceberg=tm.IcebergMetadata(
        schema=tm.IcebergSchema(fields=[tm.SchemaField(name="id", type="long", required=True)]),
        partition_spec=tm.IcebergPartitionSpec(spec_id=0, fields=[
            tm.IcebergPartitionField(source_id=1, field_id=1000, name="id_b", transform="bucket[4]")]),
        sort_order=tm.IcebergSortOrder(fields=[
            tm.IcebergSortField(source_id=1, direction="asc", null_order="nulls-first", transform="identity")])))
    pol = json.dumps({"Version": "1", "Statement": [{"Effect": "Allow", "Action": ["oss:GetTable"],
                                                     "Principal": ["*"], "Resource": [ARN]}]})
    enc = tm.EncryptionConfiguration(sse_algorithm="AES256")
    T = dict(table_bucket_arn=ARN, namespace=ns, name="t 1")
    calls = [
        ("create bucket", lambda c: c.create_table_bucket(tm.CreateTableBucketRequest(
            name="tb-one", encryption_configuration=enc))),
        ("list buckets", lambda c: c.list_table_buckets(tm.ListTableBucketsRequest(
            prefix="tb", max_buckets=5, continuation_token="tok+/="))),
        ("get bucket", lambda c: c.get_table_bucket(tm.GetTableBucketRequest(table_bucket_arn=ARN))),
        ("delete bucket", lambda c: c.delete_table_bucket(tm.DeleteTableBucketRequest(table_bucket_arn=ARN))),
        ("put bucket encryption", lambda c: c.put_table_bucket_encryption(tm.PutTableBucketEncryptionRequest(
            table_bucket_arn=ARN, encryption_configuration=enc))),
        ("get bucket encryption", lambda c: c.get_table_bucket_encryption(
            tm.GetTableBucketEncryptionRequest(table_bucket_arn=ARN))),
        ("delete bucket encryption", lambda c: c.delete_table_bucket_encryption(
            tm.DeleteTableBucketEncryptionRequest(table_bucket_arn=ARN))),
        ("put bucket policy", lambda c: c.put_table_bucket_policy(tm.PutTableBucketPolicyRequest(
            table_bucket_arn=ARN, resource_policy=pol))),
        ("get bucket policy", lambda c: c.get_table_bucket_policy(tm.GetTableBucketPolicyRequest(table_bucket_arn=ARN))),
        ("delete bucket policy", lambda c: c.delete_table_bucket_policy(
            tm.DeleteTableBucketPolicyRequest(table_bucket_arn=ARN))),
        ("put bucket maintenance", lambda c: c.put_table_bucket_maintenance_configuration(
            tm.PutTableBucketMaintenanceConfigurationRequest(
                table_bucket_arn=ARN, type="icebergUnreferencedFileRemoval",
                value={"status": "enabled", "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 4}}}))),
        ("get bucket maintenance", lambda c: c.get_table_bucket_maintenance_configuration(
            tm.GetTableBucketMaintenanceConfigurationRequest(table_bucket_arn=ARN))),
        ("create namespace", lambda c: c.create_namespace(tm.CreateNamespaceRequest(table_bucket_arn=ARN, namespace=[ns]))),
        ("get namespace", lambda c: c.get_namespace(tm.GetNamespaceRequest(table_bucket_arn=ARN, namespace=ns))),
        ("list namespaces", lambda c: c.list_namespaces(tm.ListNamespacesRequest(
            table_bucket_arn=ARN, prefix="n", max_namespaces=10))),
        ("delete namespace", lambda c: c.delete_namespace(tm.DeleteNamespaceRequest(table_bucket_arn=ARN, namespace=ns))),
        ("create table", lambda c: c.create_table(tm.CreateTableRequest(
            table_bucket_arn=ARN, namespace=ns, name="t 1", format="ICEBERG", metadata=meta,
            encryption_configuration=enc))),
        ("get table", lambda c: c.get_table(tm.GetTableRequest(**T))),
        ("get table by arn", lambda c: c.get_table(tm.GetTableRequest(table_arn=tarn))),
        ("list tables", lambda c: c.list_tables(tm.ListTablesRequest(
            table_bucket_arn=ARN, namespace=ns, prefix="t", max_tables=5))),
        ("rename table", lambda c: c.rename_table(tm.RenameTableRequest(**T, new_name="t2", new_namespace_name="ns_2"))),
        ("delete table", lambda c: c.delete_table(tm.DeleteTableRequest(**T, version_token="v+1"))),
        ("get table encryption", lambda c: c.get_table_encryption(tm.GetTableEncryptionRequest(**T))),
        ("put table policy", lambda c: c.put_table_policy(tm.PutTablePolicyRequest(**T, resource_policy=pol))),
        ("get table policy", lambda c: c.get_table_policy(tm.GetTablePolicyRequest(**T))),
        ("delete table policy", lambda c: c.delete_table_policy(tm.DeleteTablePolicyRequest(**T))),
        ("put table maintenance", lambda c: c.put_table_maintenance_configuration(
            tm.PutTableMaintenanceConfigurationRequest(**T, type="icebergCompaction", value={"status": "enabled"}))),
        ("get table maintenance", lambda c: c.get_table_maintenance_configuration(
            tm.GetTableMaintenanceConfigurationRequest(**T))),
        ("get job status", lambda c: c.get_table_maintenance_job_status(tm.GetTableMaintenanceJobStatusRequest(**T))),
        ("get metadata location", lambda c: c.get_table_metadata_location(tm.GetTableMetadataLocationRequest(**T))),
        ("update metadata location", lambda c: c.update_table_metadata_location(
            tm.UpdateTableMetadataLocationRequest(**T, version_token="v1", metadata_location="oss://b/m.json"))),
    ]
    names = {n.replace(" ", "_") for n in dir(oss_tables.Client) if not n.startswith("_")}
    return calls, names


def tables_cases(**cfgkw):
    cap = Capture()
    client = oss_tables.Client(sdk_config("http://127.0.0.1:9001", cap, **cfgkw))
    calls, _ = tables_calls()
    return [case(n, m, u, h, tables=True, products=["osstables"], services=["s3tables", "osstables"])
            for n, m, u, h in capture(client, cap, calls)]


def test_oss4_every_tables_client_operation_verifies():
    calls, methods = tables_calls()
    called = set()
    for _, fn in calls:
        called |= {n for n in fn.__code__.co_names if n in methods}
    assert called == methods - {"invoke_operation", "list_namespaces_paginator", "list_table_buckets_paginator",
                                "list_tables_paginator"}, methods - called
    cases = tables_cases()
    res = run(cases)
    assert_all_ok(cases, res, "oss4")
    assert all(r["service"] == "osstables" and "resource" in r for r in res)
    by = {c["name"]: r["resource"] for c, r in zip(cases, res)}
    assert by["create bucket"] == f"/acs:osstables:{REGION}::bucket//buckets"
    assert by["get table by arn"] == f"/{ARN}/get-table"
    # tampering: the body's MD5, the path (so the resource), the signature, the time
    variants = []
    for c in cases:
        variants += [t for t in tamper_variants(c)]
    res = run([v for _, v in variants])
    accepted = [(v["name"], w) for (w, v), r in zip(variants, res) if r["ok"]]
    assert not accepted, accepted


def test_oss4_tables_virtual_hosted_and_presigned():
    cases = tables_cases(token="tok")
    assert all(hdr(c, "x-oss-security-token") == "tok" for c in cases)
    assert_all_ok(cases, run(cases), "oss4")
    # presigned tables URLs from the tables signer over what the client builds
    t0 = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    pres = []
    for c in cases:
        if c["method"] != "GET":
            continue
        url = "http://127.0.0.1:9001" + c["path"] + ("?" + c["query"] if c["query"] else "")
        req = HttpRequest(method="GET", url=url, headers={})
        u = urlsplit(url)
        resource = run([c])[0]["resource"]
        bucket, _, key = resource[1:].partition("/") if "::bucket/" not in resource else ("", "", u.path[1:])
        ctx = SigningContext(product="osstables", region=REGION, bucket=bucket or None, key=key, request=req,
                             credentials=Credentials(AK, SK), signing_time=t0)
        ctx.auth_method_query = True
        ctx.expiration_time = t0 + datetime.timedelta(seconds=300)
        TablesSignerV4().sign(ctx)
        pres.append(case("presigned " + c["name"], "GET", req.url, {}, now=t0.timestamp(), tables=True,
                         products=["osstables"]))
    assert len(pres) >= 10
    res = run(pres)
    assert_all_ok(pres, res, "oss4")
    assert all(r["presigned"] for r in res)
    res = run([changed(p, now=p["now"] + 301) for p in pres])
    assert all(r["code"] == "AccessDenied" for r in res)


# ---- OSS V1 (oss2) ----

class V1Capture(oss2.Session):
    def __init__(self):
        super().__init__()
        self.reqs = []

    def do_request(self, req, timeout):
        hs = {k: v for k, v in req.headers.items() if v is not None}
        p = requests.Request(req.method, req.url, params=req.params, headers=hs).prepare()
        self.reqs.append((req.method, p.url, {k: v for k, v in p.headers.items()
                                               if k.lower() not in ("user-agent", "accept-encoding")}))
        raise Captured()


def v1_cases(endpoint="http://127.0.0.1:9000"):
    cap = V1Capture()
    b = oss2.Bucket(oss2.Auth(AK, SK), endpoint, "bkt", session=cap, is_cname=False)
    calls = [("list v2", lambda: b.list_objects_v2(prefix="a/b c+é", delimiter="/", continuation_token="t+/=",
                                                   start_after="s", max_keys=7)),
             ("list v1", lambda: b.list_objects(prefix="p", marker="m n", max_keys=3)),
             ("batch delete", lambda: b.batch_delete_objects(["a b", "é"])),
             ("list uploads", lambda: b.list_multipart_uploads(prefix="x", key_marker="k m")),
             ("bucket info", lambda: b.get_bucket_info()),
             ("bucket acl", lambda: b.get_bucket_acl())]
    for k in KEYS:
        calls += [
            (f"put {k!r}", lambda k=k: b.put_object(k, b"data", headers={
                "Content-Type": "text/plain", "x-oss-meta-note": "v1  two", "Content-MD5": "jXd/OF09/siBXSD3SWAm3A=="})),
            (f"get range {k!r}", lambda k=k: b.get_object(k, byte_range=(0, 3))),
            (f"get overrides {k!r}", lambda k=k: b.get_object(k, params={
                "response-content-type": "text/csv", "response-cache-control": "no-cache"})),
            (f"head {k!r}", lambda k=k: b.head_object(k)),
            (f"copy {k!r}", lambda k=k: b.copy_object("bkt", "src key é", k)),
            (f"initiate {k!r}", lambda k=k: b.init_multipart_upload(k)),
            (f"upload part {k!r}", lambda k=k: b.upload_part(k, "u+1/=", 2, b"part")),
            (f"complete {k!r}", lambda k=k: b.complete_multipart_upload(k, "u+1/=", [oss2.models.PartInfo(1, '"e"')])),
            (f"abort {k!r}", lambda k=k: b.abort_multipart_upload(k, "u+1/=")),
            (f"list parts {k!r}", lambda k=k: b.list_parts(k, "u+1/=", marker=1, max_parts=4)),
            (f"object acl {k!r}", lambda k=k: b.get_object_acl(k)),
            (f"delete {k!r}", lambda k=k: b.delete_object(k)),
        ]
    out = []
    for name, fn in calls:
        n = len(cap.reqs)
        try:
            fn()
        except Captured:
            pass
        except oss2.exceptions.RequestError:
            pass
        assert len(cap.reqs) == n + 1, name
        m, url, h = cap.reqs[-1]
        out.append(case(name, m, url, {k: v for k, v in h.items() if k.lower() != "host"},
                        products=["oss"], services=["s3"]))
        if urlsplit(url).netloc.startswith("bkt."):
            out[-1]["resource"] = "/bkt/" + unquote(urlsplit(url).path[1:])
    # presigned URLs
    for k in KEYS:
        for method, hs, params in [("GET", None, None), ("PUT", {"Content-Type": "text/plain"}, None),
                                   ("GET", None, {"response-content-type": "text/csv"}),
                                   ("HEAD", None, None)]:
            url = b.sign_url(method, k, 600, headers=hs, params=params)
            out.append(case(f"presigned {method} {k!r}", method, url, dict(hs or {}), products=["oss"],
                            services=["s3"]))
            if urlsplit(url).netloc.startswith("bkt."):
                out[-1]["resource"] = "/bkt/" + unquote(urlsplit(url).path[1:])
    return out


def test_oss1_requests_verify():
    cases = v1_cases()
    res = run(cases)
    assert_all_ok(cases, res, "oss1")
    assert sum(r["presigned"] for r in res) == 4 * len(KEYS)


def test_oss1_tampered_and_time():
    cases = v1_cases()
    bad = []
    for c in cases:
        if "Signature=" in c["query"]:
            q = c["query"]
            exp = int(q.split("Expires=")[1].split("&")[0])
            bad += [("expired", "AccessDenied", changed(c, now=exp + 1)),
                    ("expires", "SignatureDoesNotMatch", changed(c, query=q.replace(f"Expires={exp}", f"Expires={exp + 1}"))),
                    ("path", "SignatureDoesNotMatch", changed(c, path=c["path"] + "x")),
                    ("method", "SignatureDoesNotMatch", changed(c, method="DELETE")),
                    ("sub-resource", "SignatureDoesNotMatch", changed(c, query=q + "&acl"))]
            continue
        az = hdr(c, "authorization")
        bad += [("signature", "SignatureDoesNotMatch", with_header(c, "authorization", az[:-2] + ("AA=" if az[-3] != "A" else "BA="))),
                ("wrong secret", "SignatureDoesNotMatch", changed(c, secret="x" + SK)),
                ("path", "SignatureDoesNotMatch", changed(c, path=c["path"] + "x")),
                ("method", "SignatureDoesNotMatch", changed(c, method="PATCH")),
                ("sub-resource", "SignatureDoesNotMatch",
                 changed(c, query=(c["query"] + "&" if c["query"] else "") +
                         ("tagging" if "acl" in c["query"] else "acl"))),
                ("x-oss header", "SignatureDoesNotMatch", with_header(c, "x-oss-meta-extra", "1")),
                ("skew", "RequestTimeTooSkewed", changed(c, now=c["now"] + 16 * 60)),
                ("unsigned amz", "AccessDenied", with_header(c, "x-amz-copy-source", "/b/k")),
                ("unknown key", "InvalidAccessKeyId", changed(c, akid="other"))]
        for h in ("content-md5", "content-type", "date", "x-oss-meta-note", "x-oss-copy-source"):
            if hdr(c, h):
                bad.append((h, "SignatureDoesNotMatch", with_header(c, h, hdr(c, h) + "x")))
    res = run([b for _, _, b in bad])
    wrong = [(w, b["name"], r) for (w, code, b), r in zip(bad, res) if r["ok"] or r["code"] != code]
    assert not wrong, wrong[:5]
    # unsigned query parameters may change; V1 is not accepted where "oss" is not served
    plain = [c for c in cases if "Signature=" not in c["query"] and c["method"] == "GET"][:3]
    res = run([changed(c, query=(c["query"] + "&" if c["query"] else "") + "unsigned=1") for c in plain] +
              [changed(c, products=["osstables"]) for c in plain])
    assert [r["ok"] for r in res] == [True] * 3 + [False] * 3


# ---- the key cache: SigV4 and OSS4 keys for one (akid, date, region, name) ----

def test_sigv4_and_oss4_keys_do_not_share_a_cache_slot():
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials
    oss4 = tables_cases()[:4]
    aws = []
    for c in oss4:
        url = "http://127.0.0.1:9001" + c["path"] + ("?" + c["query"] if c["query"] else "")
        r = AWSRequest(method=c["method"], url=url, data=b"", headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        SigV4Auth(BotoCredentials(AK, SK), "osstables", REGION).add_auth(r)
        aws.append(case("sigv4 " + c["name"], c["method"], url, {k: v for k, v in r.headers.items()
                                                                  if k.lower() != "host"}))
    inter = [x for pair in zip(aws, oss4) for x in pair] + oss4 + aws
    res = run(inter)
    assert [r.get("verified_dialect") for r in res] == ["aws4", "oss4"] * 4 + ["oss4"] * 4 + ["aws4"] * 4


def test_oss1_virtual_hosted():
    cases = v1_cases("http://oss-test.example:9000")
    vh = [c for c in cases if "resource" in c]
    assert len(vh) > len(KEYS) * 12
    assert_all_ok(cases, run(cases), "oss1")
    res = run([changed(c, resource="/other" + c["resource"][4:]) for c in vh] +
              [changed(c, resource=None) for c in vh if c["path"] != "/"])
    assert not any(r["ok"] for r in res)


def test_oss1_sub_resources_dates_and_forms():
    cases = {c["name"]: c for c in v1_cases()}
    part, get, put = cases["upload part 'plain.txt'"], cases["get overrides 'plain.txt'"], cases["put 'plain.txt'"]
    pre = cases["presigned GET 'plain.txt'"]
    q = part["query"]
    assert "partNumber=2" in q and "uploadId=" in q
    exp = int(pre["query"].split("Expires=")[1].split("&")[0])
    checks = [
        # a signed sub-resource changed, dropped, repeated
        (False, changed(part, query=q.replace("partNumber=2", "partNumber=3"))),
        (False, changed(part, query="&".join(p for p in q.split("&") if not p.startswith("uploadId")))),
        (False, changed(part, query=q + "&partNumber=2")),
        # a signed response override changed; an unsigned parameter added
        (False, changed(get, query=get["query"].replace("text%2Fcsv", "text%2Fhtml"))),
        (True, changed(get, query=get["query"] + "&other=x")),
        # an unsigned header; x-oss-date takes the Date slot when present
        (True, with_header(put, "x-custom", "other")),
        (False, with_header(put, "x-oss-date", hdr(put, "date"))),
        # Expires more than a week ahead, whatever it signs
        (False, changed(pre, now=exp - 8 * 86400)),
        (True, changed(pre, now=exp - 600)),
        # both forms at once; the presigned form incomplete
        (False, changed(put, query="OSSAccessKeyId=" + AK)),
        (False, changed(pre, query=pre["query"].split("&Signature=")[0])),
        # no usable Date
        (False, with_header(put, "date", "yesterday")),
    ]
    for bad in ("OSS ", "OSS :abc", "OSS " + AK, "OSS " + AK + ":", "OSS " + AK + ":!!!!", "OSS " + AK + ":AAAA"):
        checks.append((False, with_header(put, "authorization", bad)))
    res = run([c for _, c in checks])
    assert [r["ok"] for r in res] == [ok for ok, _ in checks], [(r.get("code"), r.get("message")) for r in res]
    # the head alone: a wrong signature passes the head checks, skew and expiry do not
    res = run([changed(put, secret="x", head=True), changed(put, now=put["now"] + 16 * 60, head=True),
               changed(pre, now=exp + 1, head=True), changed(put, akid="nope", head=True)])
    assert [r.get("code") for r in res] == [None, "RequestTimeTooSkewed", "AccessDenied", "InvalidAccessKeyId"]


def test_oss4_forms_and_payload_modes():
    c = object_cases()[0]
    pre = tables_cases()[0]
    checks = [
        (False, changed(c, query=c["query"] + "&x-oss-signature=00")),          # both forms
        (False, with_header(c, "x-oss-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER")),
        (False, with_header(c, "x-oss-content-sha256", None)),
        (False, with_header(c, "x-oss-date", None)),
        (False, changed(pre, tables=False)),                                   # the path is not the resource
        (False, changed(pre, products=["oss"])),
    ]
    res = run([x for _, x in checks])
    assert [r["ok"] for r in res] == [ok for ok, _ in checks], res
