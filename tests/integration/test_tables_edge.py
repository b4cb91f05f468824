"""S3 Tables control plane: hostile and unusual input, and the richer CreateTable metadata shapes.
Every malformed request must get a 4xx in S3 Tables' error shape, never a crash or a 5xx."""
import json
import random
from urllib.parse import quote

import pytest

from conftest import make_client
from tables_fixtures import *  # noqa: F401,F403 - fixtures
from tables_fixtures import client_error, signed_request


def _err(r):
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    return r.status_code, r.headers.get("x-amzn-ErrorType"), r.json().get("message")


def _metadata(floe, s3t, arn, ns, name):
    loc = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name)["metadataLocation"]
    bucket, key = loc[5:].split("/", 1)
    return json.loads(make_client(floe.endpoint).get_object(Bucket=bucket, Key=key)["Body"].read())


def test_nul_in_path_segment(floe):
    status, code, msg = _err(signed_request(floe.catalog_port, "GET", "/buckets/abc%00def"))
    assert (status, code) == (400, "BadRequestException") and msg


@pytest.mark.parametrize("path", ["/buckets/%ZZ", "/buckets/%", "/tag/%G1"])
def test_bad_percent_escapes(floe, path):
    # the front door's SigV4 check may refuse these first (botocore cannot sign a broken escape the
    # way the server canonicalises it); either way: a 4xx in the S3 Tables error shape
    status, code, msg = _err(signed_request(floe.catalog_port, "GET", path))
    assert status in (400, 403) and code.endswith("Exception") and msg


@pytest.mark.parametrize("path", ["/buckets//policy", "/tables/", "/namespaces//x", "/buckets/x/unknown",
                                  "/tables/a/b/c/d/e/f/g"])
def test_unknown_paths(floe, path):
    status, code, _ = _err(signed_request(floe.catalog_port, "GET", path))
    assert status in (404, 405) and code in ("UnknownOperationException", "MethodNotAllowedException")


def test_non_utf8_echoed_in_message(floe, tbucket):
    path = "/buckets/%s/maintenance/%%FF%%FEbad" % quote(tbucket, safe="")
    body = b'{"value": {"status": "enabled"}}'
    status, code, msg = _err(signed_request(floe.catalog_port, "PUT", path, body=body))
    assert (status, code) == (400, "BadRequestException") and msg


def test_bad_query_escape(floe):
    status, code, _ = _err(signed_request(floe.catalog_port, "GET", "/buckets", query="prefix=%zz"))
    assert status in (400, 403) and code.endswith("Exception")


@pytest.mark.parametrize("value", ["1e30", "9223372036854775808", "256.0", "\"256\"", "-1", "true"])
def test_maintenance_integer_edges(floe, ttable, value):
    arn, ns, name, _ = ttable
    body = ('{"value": {"status": "enabled", "settings": {"icebergCompaction": {"targetFileSizeMB": %s}}}}'
            % value).encode()
    path = "/tables/%s/%s/%s/maintenance/icebergCompaction" % (quote(arn, safe=""), ns, name)
    status, code, _ = _err(signed_request(floe.catalog_port, "PUT", path, body=body))
    assert (status, code) == (400, "BadRequestException")


def test_deeply_nested_json(floe):
    body = b"[" * 5000 + b"]" * 5000
    status, code, _ = _err(signed_request(floe.catalog_port, "PUT", "/buckets", body=body))
    assert (status, code) == (400, "BadRequestException")


def test_wrong_member_types(floe, tbucket):
    b = quote(tbucket, safe="")
    cases = [("PUT", "/namespaces/" + b, {"namespace": "not-a-list"}),
             ("PUT", "/namespaces/" + b, {"namespace": ["a", "b"]}),
             ("PUT", "/namespaces/" + b, {"namespace": [5]}),
             ("PUT", "/namespaces/" + b, {}),
             ("PUT", "/buckets/%s/policy" % b, {"resourcePolicy": {"Version": "2012-10-17"}}),
             ("PUT", "/buckets/%s/encryption" % b, {"encryptionConfiguration": "AES256"}),
             ("PUT", "/buckets/%s/maintenance/icebergUnreferencedFileRemoval" % b, {"value": []}),
             ("POST", "/tag/" + b, {"tags": {"k": 5}}),
             ("POST", "/tag/" + b, {"tags": ["k"]}),
             ("PUT", "/buckets", {"name": None})]
    for method, path, body in cases:
        status, code, msg = _err(signed_request(floe.catalog_port, method, path, body=json.dumps(body).encode()))
        assert (status, code) == (400, "BadRequestException"), (method, path, body, msg)


def test_create_table_bad_metadata_shapes(floe, s3t_nv, tbucket, tns):
    bad = [{"iceberg": {}},
           {"iceberg": {"schema": {"fields": []}, "schemaV2": {"type": "struct", "fields": []}}},
           {"iceberg": {"schema": {"fields": [{"name": "a", "type": "string"}]}, "properties": {"k": 1}}},
           {"iceberg": {"schemaV2": {"type": "list", "fields": []}}},
           {"iceberg": {"schema": {"fields": [{"name": "a", "type": "string"}]},
                        "partitionSpec": {"fields": [{"sourceId": 99, "transform": "identity", "name": "p"}]}}}]
    for i, md in enumerate(bad):
        code, status, _ = client_error(s3t_nv.create_table, tableBucketARN=tbucket, namespace=tns,
                                       name="bad_%d" % i, format="ICEBERG", metadata=md)
        assert (code, status) == ("BadRequestException", 400), md
    code, status, _ = client_error(s3t_nv.create_table, tableBucketARN=tbucket, namespace=tns, name="delta_t",
                                   format="DELTA")
    assert (code, status) == ("BadRequestException", 400)
    path = "/tables/%s/%s" % (quote(tbucket, safe=""), tns)
    body = json.dumps({"name": "delta_md", "format": "ICEBERG", "metadata": {"delta": {}}}).encode()
    status, code, _ = _err(signed_request(floe.catalog_port, "PUT", path, body=body))
    assert (status, code) == (400, "BadRequestException")
    assert s3t_nv.list_tables(tableBucketARN=tbucket)["tables"] == []


def test_create_table_schema_v2_and_write_order(floe, s3t, tbucket, tns):
    md = {"iceberg": {
        "schemaV2": {"type": "struct", "schemaId": 0, "identifierFieldIds": [1], "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True},
            {"id": 2, "name": "point", "required": False, "type": {
                "type": "struct", "fields": [
                    {"id": 3, "name": "x", "type": "double", "required": True},
                    {"id": 4, "name": "y", "type": "double", "required": True}]}},
            {"id": 5, "name": "tags", "required": False, "type": {
                "type": "list", "element-id": 6, "element": "string", "element-required": False}}]},
        "writeOrder": {"orderId": 1, "fields": [
            {"sourceId": 1, "transform": "identity", "direction": "asc", "nullOrder": "nulls-first"}]}}}
    s3t.create_table(tableBucketARN=tbucket, namespace=tns, name="nested", format="ICEBERG", metadata=md)
    meta = _metadata(floe, s3t, tbucket, tns, "nested")
    schema = [s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"]][0]
    names = [f["name"] for f in schema["fields"]]
    assert names == ["id", "point", "tags"]
    point = schema["fields"][1]["type"]
    assert point["type"] == "struct" and [f["name"] for f in point["fields"]] == ["x", "y"]
    order = [o for o in meta["sort-orders"] if o["order-id"] == meta["default-sort-order-id"]][0]
    assert order["fields"][0]["direction"] == "asc" and order["fields"][0]["null-order"] == "nulls-first"
    id_field = schema["fields"][0]["id"]
    assert order["fields"][0]["source-id"] == id_field


def test_random_bodies_never_5xx(floe, ttable):
    """A small deterministic fuzz of every body-taking route: 4xx or success, never 5xx or a hang."""
    arn, ns, name, _ = ttable
    b = quote(arn, safe="")
    t = "/tables/%s/%s/%s" % (b, ns, name)
    routes = [("PUT", "/buckets"), ("PUT", "/namespaces/" + b), ("PUT", "/tables/%s/%s" % (b, ns)),
              ("PUT", t + "/rename"), ("PUT", t + "/metadata-location"), ("PUT", t + "/policy"),
              ("PUT", t + "/maintenance/icebergCompaction"), ("PUT", "/buckets/%s/encryption" % b),
              ("PUT", "/buckets/%s/storage-class" % b), ("PUT", "/buckets/%s/logging" % b),
              ("POST", "/tag/" + b)]
    rnd = random.Random(1234)
    atoms = ['null', 'true', '1', '-7', '1.5', '""', '"x"', '"ICEBERG"', '[]', '{}', '"aws:kms"', '"enabled"',
             '9999999999999999999', '"\\u00e9"', '"' + "a" * 300 + '"']
    keys = ["name", "format", "metadata", "namespace", "newName", "newNamespaceName", "versionToken",
            "metadataLocation", "resourcePolicy", "value", "status", "settings", "encryptionConfiguration",
            "storageClassConfiguration", "tableBucketLoggingStatus", "tags", "iceberg", "schema", "fields"]

    def value(depth):
        if depth > 3 or rnd.random() < 0.4:
            return rnd.choice(atoms)
        if rnd.random() < 0.3:
            return "[" + ",".join(value(depth + 1) for _ in range(rnd.randint(0, 3))) + "]"
        return "{" + ",".join('"%s":%s' % (rnd.choice(keys), value(depth + 1))
                              for _ in range(rnd.randint(0, 4))) + "}"

    for i in range(300):
        method, path = routes[i % len(routes)]
        body = value(0).encode()
        if rnd.random() < 0.1:
            body = body[: rnd.randint(0, len(body))]
        r = signed_request(floe.catalog_port, method, path, body=body)
        assert r.status_code < 500, (method, path, body, r.status_code, r.text)
        if r.status_code >= 400:
            assert r.headers.get("x-amzn-ErrorType") and "message" in r.json()
    # still serving
    assert signed_request(floe.catalog_port, "GET", "/buckets/" + b).status_code == 200
