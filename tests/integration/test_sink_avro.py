"""floe sink with Confluent's AvroConverter: records in the schema registry's wire format
(magic 0, 4-byte schema id, Avro binary), encoded by fastavro (a real Avro library).

The main path runs against a REAL registry: Apicurio Registry 2.4.2.Final, built from Maven
Central's io.apicurio:apicurio-registry-app by `tests/compat/fetch.sh registry`
(tests/compat/apicurio/pom.xml) and started by registry_fixtures.py; the test registers its
schemas through the registry's Confluent-compatible API (/apis/ccompat/v7) with BACKWARD
compatibility on the subject, so the second version (an added optional field) is one the
registry accepted as an evolution, and it refuses an incompatible one. floe sink's
value.converter.schema.registry.url points at that API. (Confluent's own registry is not on
Maven Central and Karapace is not on PyPI.)

Shown there: auto-create infers the table from the Avro schema (nested records, arrays, maps,
nullable unions, logical types date / time-millis / timestamp-millis / timestamp-micros /
local-timestamp-micros / decimal / uuid, enums, bytes); values land exactly; the second
schema id adds a column (evolution); each id is fetched once (the registry's access log); a
record that is not in the wire format and one naming an id the registry does not have go to
the dead-letter topic.

A STAND-IN registry (a small HTTP server in this test with the Confluent REST shape: GET
/schemas/ids/<id> -> {"schema": "..."}, 404 with error_code 40403, basic auth) covers what the
real one cannot show: basic auth accepted and refused (Apicurio's auth needs an OIDC server),
and the exact request count of a flood of unknown ids (the negative cache)."""
import base64
import datetime
import decimal
import io
import json
import struct
import uuid
from http.server import BaseHTTPRequestHandler

import fastavro

from kafka_fixtures import LocalHttp, Sink, kafka  # noqa: F401
from registry_fixtures import apicurio  # noqa: F401
from rest_fixtures import rest_catalog, s3tables, table_bucket  # noqa: F401
from test_sink import connector, wait_rows, write_config

USER, PASSWORD = "sr-user", "sr-secret"

SCHEMA_V1 = {
    "type": "record", "name": "Event", "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "inner", "type": {"type": "record", "name": "Inner",
                                   "fields": [{"name": "a", "type": "int"},
                                              {"name": "b", "type": ["null", "string"], "default": None}]}},
        {"name": "opt", "type": ["null", "double"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CLICK", "VIEW"]}},
        {"name": "blob", "type": "bytes"},
    ]}
SCHEMA_V2 = json.loads(json.dumps(SCHEMA_V1))
SCHEMA_V2["fields"].append({"name": "extra", "type": ["null", "string"], "default": None})


class Registry(LocalHttp):
    """The stand-in registry: schemas by id, basic auth, a count of fetches per id."""

    def __init__(self, schemas):
        self.schemas = schemas
        self.fetches = {}
        reg = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, doc):
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                want = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
                if self.headers.get("Authorization") != want:
                    return self._send(401, {"error_code": 401, "message": "Unauthorized"})
                parts = self.path.split("/")
                if len(parts) == 4 and parts[1] == "schemas" and parts[2] == "ids" and parts[3].isdigit():
                    sid = int(parts[3])
                    reg.fetches[sid] = reg.fetches.get(sid, 0) + 1
                    if sid in reg.schemas:
                        return self._send(200, {"schema": json.dumps(reg.schemas[sid])})
                    return self._send(404, {"error_code": 40403, "message": "Schema %d not found" % sid})
                return self._send(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

        self.serve(H)


def wire(schema_id, schema, rec):
    buf = io.BytesIO()
    buf.write(b"\x00" + struct.pack(">I", schema_id))
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), rec)
    return buf.getvalue()


def event(i):
    return {
        "id": i, "name": "n%d" % i, "amount": decimal.Decimal("%d.%02d" % (i, i % 100)) * (-1 if i % 3 == 0 else 1),
        "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=i),
        "at_ms": datetime.datetime(2024, 5, 1, 12, 0, 0, (i % 1000) * 1000, tzinfo=datetime.timezone.utc),
        "at_us": datetime.datetime(2024, 5, 1, 12, 0, 0, 123456 + i, tzinfo=datetime.timezone.utc),
        "local_us": datetime.datetime(2024, 5, 1, 8, 30, 0, 654321),
        "t_ms": datetime.time(1, 2, 3, 4000),
        "uid": uuid.UUID(int=i + 1),
        "tags": ["t%d" % j for j in range(i % 3)],
        "attrs": {"k%d" % j: j * i for j in range(2)},
        "inner": {"a": i * 2, "b": None if i % 2 else "b%d" % i},
        "opt": None if i % 4 == 0 else i / 4,
        "kind": "CLICK" if i % 2 else "VIEW",
        "blob": bytes([i % 256, 0, 255]),
    }


def avro_connector(floe, arn, name, topic, ns, reg, dlq, auth=True, **extra):
    """AvroConverter with registry reg (basic auth when auth) into an auto-created ns.events;
    bad records to dlq."""
    if auth:
        extra = {"value.converter.basic.auth.credentials.source": "USER_INFO",
                 "value.converter.basic.auth.user.info": "%s:%s" % (USER, PASSWORD), **extra}
    doc = connector(floe, arn, name, topics=topic, **{
        "iceberg.tables": ns + ".events", "iceberg.tables.auto-create-enabled": "true",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": reg.url,
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq, **extra})
    doc["config"].pop("value.converter.schemas.enable")
    return doc


def test_avro_registry_autocreate_evolve_dlq(tmp_path, floe, table_bucket, rest_catalog, kafka, apicurio):  # noqa: F811
    ns, topic, dlq = "avro_%s" % uuid.uuid4().hex[:6], "av-" + uuid.uuid4().hex[:6], "avdlq-" + uuid.uuid4().hex[:6]
    kafka.create_topic(topic, 2)
    kafka.create_topic(dlq, 1)
    reg, subject = apicurio, topic + "-value"                        # TopicNameStrategy's subject
    assert reg.request("PUT", "/config/" + subject, {"compatibility": "BACKWARD"}) == \
        (200, {"compatibility": "BACKWARD"})
    id1 = reg.register(subject, SCHEMA_V1)
    id2 = reg.register(subject, SCHEMA_V2)                          # an added optional field: compatible
    assert id1 != id2 and reg.request("GET", "/subjects/%s/versions" % subject) == (200, [1, 2])
    bad = json.loads(json.dumps(SCHEMA_V2))
    bad["fields"].append({"name": "must", "type": "string"})        # required, no default: refused
    assert reg.request("POST", "/subjects/%s/versions" % subject, {"schema": json.dumps(bad)})[0] == 409
    unknown = max(id1, id2) + 1000
    assert reg.request("GET", "/schemas/ids/%d" % unknown)[0] == 404
    n1, n2 = 40, 10
    vals = [wire(id1, SCHEMA_V1, event(i)) for i in range(n1)]
    vals.insert(5, b'{"id": 1}')                                    # JSON, not the wire format
    vals.insert(9, b"\x00" + struct.pack(">I", unknown) + vals[0][5:])  # an id the registry does not have
    vals += [wire(id2, SCHEMA_V2, dict(event(1000 + i), extra="x%d" % i)) for i in range(n2)]
    kafka.produce(topic, vals, partition=0)
    before = reg.fetches()
    doc = avro_connector(floe, table_bucket, "avro-" + topic, topic, ns, reg, dlq, auth=False,
                         **{"iceberg.tables.evolve-schema-enabled": "true"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        t = wait_rows(rest_catalog, ns + ".events", n1 + n2, sink)
    finally:
        rc = sink.stop()
    assert rc == 0, sink.log()[-3000:]
    assert t.num_rows == n1 + n2

    tbl = rest_catalog.load_table(ns + ".events")
    types = {f.name: str(f.field_type) for f in tbl.schema().fields}
    assert types["id"] == "long" and types["name"] == "string"
    assert types["amount"] == "decimal(38, 2)"            # as the Java sink: precision 38
    assert types["day"] == "date" and types["t_ms"] == "time"
    assert types["at_ms"] == "timestamptz" and types["at_us"] == "timestamptz"
    assert types["local_us"] == "timestamp"
    assert types["uid"] == "uuid" and types["kind"] == "string" and types["blob"] == "binary"
    assert types["tags"] == "list<string>" and types["attrs"] == "map<string, long>"
    assert types["inner"].startswith("struct<") and types["opt"] == "double"
    assert types["extra"] == "string"                    # added by the second schema id
    assert tbl.schema().find_field("id").required and not tbl.schema().find_field("opt").required

    got = {r["id"]: r for r in t.to_pylist()}
    assert sorted(got) == list(range(n1)) + list(range(1000, 1000 + n2))
    for i in list(range(n1)) + [1000, 1009]:
        want, row = event(i), got[i]
        assert row["name"] == want["name"] and row["amount"] == want["amount"]
        assert row["day"] == want["day"] and row["t_ms"] == want["t_ms"]
        assert row["at_ms"] == want["at_ms"] and row["at_us"] == want["at_us"]   # micros kept
        assert row["local_us"] == want["local_us"]
        assert row["uid"] == want["uid"].bytes or str(row["uid"]) == str(want["uid"])
        assert row["tags"] == want["tags"] and dict(row["attrs"]) == want["attrs"]
        assert row["inner"] == want["inner"] and row["opt"] == want["opt"]
        assert row["kind"] == want["kind"] and row["blob"] == want["blob"]
        assert row["extra"] == (None if i < 1000 else "x%d" % (i - 1000))

    after = reg.fetches()
    fetched = {i: after.get(i, 0) - before.get(i, 0) for i in (id1, id2, unknown)}
    assert fetched == {id1: 1, id2: 1, unknown: 1}, fetched          # once per id, from the registry
    msgs = kafka.consume_all(dlq, 2)
    assert len(msgs) == 2
    reasons = sorted(dict(m.headers())["__connect.errors.exception.message"].decode() for m in msgs)
    assert "wire format" in reasons[0] and "schema id %d" % unknown in reasons[1], reasons
    offs = json.loads(tbl.current_snapshot().summary["floe.offsets.connect-avro-" + topic])
    assert offs[topic]["0"] == n1 + n2 + 2


def test_avro_registry_refuses_wrong_credentials(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """A registry that refuses the credentials is the registry's fault, not the record's:
    the sink stops (nothing to the dead-letter topic), naming the registry's answer."""
    ns, topic = "avro_%s" % uuid.uuid4().hex[:6], "av-" + uuid.uuid4().hex[:6]
    kafka.create_topic(topic, 1)
    reg = Registry({1: SCHEMA_V1})
    kafka.produce(topic, [wire(1, SCHEMA_V1, event(i)) for i in range(3)])
    doc = connector(floe, table_bucket, "avro-" + topic, topics=topic, **{
        "iceberg.tables": ns + ".events", "iceberg.tables.auto-create-enabled": "true",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": reg.url,
        "value.converter.basic.auth.credentials.source": "USER_INFO",
        "value.converter.basic.auth.user.info": "%s:wrong" % USER, "errors.tolerance": "all"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        rc = sink.wait(60)
    finally:
        reg.close()
    assert rc == 1, sink.log()[-3000:]
    assert "HTTP 401" in sink.log() and "%s-0@0" % topic in sink.log(), sink.log()[-3000:]
    assert "wrong" not in sink.log()


SCHEMA_NULL_ITEMS = {
    "type": "record", "name": "Tagged", "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": ["null", "string"]}},
        {"name": "nums", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
    ]}


def test_avro_null_items_and_unknown_id_flood(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """Arrays whose items are ["null", T] land with their nulls in place (the list element is
    optional); a flood of records naming a schema id the registry does not have goes to the
    dead-letter topic with one registry request for that id, not one per record (the id is
    remembered for FL_SINK_UNKNOWN_SCHEMA_TTL_MS)."""
    ns, topic, dlq = "avn_%s" % uuid.uuid4().hex[:6], "avn-" + uuid.uuid4().hex[:6], "avndlq-" + uuid.uuid4().hex[:6]
    kafka.create_topic(topic, 1)
    kafka.create_topic(dlq, 1)
    reg = Registry({5: SCHEMA_NULL_ITEMS})
    recs = [{"id": i, "tags": [None, "t%d" % i, None][: 1 + i % 3], "nums": None if i % 4 == 0 else [i, None]}
            for i in range(20)]
    good = [wire(5, SCHEMA_NULL_ITEMS, r) for r in recs]
    bogus, flood = b"\x00\x00\x00\x00\x4d" + good[1][5:], 300           # schema id 77
    vals = good[:10] + [bogus] * flood + good[10:]
    kafka.produce(topic, vals, partition=0)
    doc = avro_connector(floe, table_bucket, "avn-" + topic, topic, ns, reg, dlq)
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        t = wait_rows(rest_catalog, ns + ".events", len(recs), sink)
    finally:
        rc = sink.stop()
        reg.close()
    assert rc == 0, sink.log()[-3000:]
    got = {r["id"]: r for r in t.to_pylist()}
    assert sorted(got) == list(range(20))
    for r in recs:
        assert got[r["id"]]["tags"] == r["tags"] and got[r["id"]]["nums"] == r["nums"], (got[r["id"]], r)
    tags = rest_catalog.load_table(ns + ".events").schema().find_field("tags").field_type
    assert str(tags) == "list<string>" and not tags.element_required
    assert reg.fetches == {5: 1, 77: 1}, reg.fetches
    msgs = kafka.consume_all(dlq, flood)
    assert len(msgs) == flood
    assert all(b"schema id 77" in dict(m.headers())["__connect.errors.exception.message"] for m in msgs)
