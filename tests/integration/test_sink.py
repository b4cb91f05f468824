"""floe sink against a real KRaft broker and floe serve: the Iceberg sink's connector
configuration (Connect REST JSON or .properties), records into tables exactly once
(SIGKILL at random points while producing), routing, auto-create and add-column,
the Connect schema envelope, errors.tolerance and the dead-letter topic."""
import json
import os
import random
import signal
import threading
import time
import uuid

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

from conftest import ACCESS_KEY, REGION, SECRET_KEY, FLOE_BIN
from kafka_fixtures import Sink, kafka  # noqa: F401
from rest_fixtures import catalog_url, load_rest_catalog, rest_catalog, s3tables, table_bucket  # noqa: F401

import subprocess


def connector(floe, arn, name, **extra):
    cfg = {
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "tasks.max": "2",
        "iceberg.control.commit.interval-ms": "500",
        "iceberg.catalog.type": "rest",
        "iceberg.catalog.uri": catalog_url(floe) + "/iceberg",
        "iceberg.catalog.rest.sigv4-enabled": "true",
        "iceberg.catalog.rest.signing-region": REGION,
        "iceberg.catalog.warehouse": arn,
        "iceberg.catalog.rest.signing-name": "osstables",
        "iceberg.catalog.rest.access-key-id": ACCESS_KEY,
        "iceberg.catalog.rest.secret-access-key": SECRET_KEY,
        "iceberg.catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "iceberg.catalog.s3.endpoint": floe.endpoint,
        "iceberg.catalog.s3.access-key-id": ACCESS_KEY,
        "iceberg.catalog.s3.secret-access-key": SECRET_KEY,
        "iceberg.catalog.s3.path-style-access": "true",
        "iceberg.catalog.client.region": REGION,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    cfg.update(extra)
    return {"name": name, "config": cfg}


def write_config(tmp_path, doc):
    p = tmp_path / ("sink-%s.json" % uuid.uuid4().hex[:6])
    p.write_text(json.dumps(doc, indent=2))
    return p


def rows(cat, ident):
    try:
        return cat.load_table(ident).scan().to_arrow()
    except Exception as e:  # noqa: BLE001 - not there yet
        if "NoSuchTable" in type(e).__name__:
            return None
        raise


def wait_rows(cat, ident, n, sink, timeout=60):
    end = time.time() + timeout
    t = None
    while time.time() < end:
        t = rows(cat, ident)
        if t is not None and t.num_rows >= n:
            return t
        assert sink.proc.poll() is None, "floe sink exited %s:\n%s" % (sink.proc.returncode, sink.log()[-3000:])
        time.sleep(0.3)
    raise AssertionError("%s has %s rows, want %d\n%s" % (ident, None if t is None else t.num_rows, n, sink.log()[-3000:]))


def kill_config(tmp_path, floe, arn, name, topic, ns, commit_ms):
    """The config file of a sink of topic into ns.events that commits every commit_ms and
    whose killed members' partitions move soon (their sessions time out after 6 s)."""
    doc = connector(floe, arn, name, topics=topic,
                    **{"iceberg.tables": ns + ".events", "iceberg.control.commit.interval-ms": str(commit_ms),
                       "consumer.override.session.timeout.ms": "6000",
                       "consumer.override.heartbeat.interval.ms": "500"})
    return write_config(tmp_path, doc)


def make_events_table(cat, ns, name):
    cat.create_namespace_if_not_exists(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "ts", TimestamptzType(), required=False))
    return cat.create_table("%s.%s" % (ns, name), schema=schema)


def test_config_errors_name_the_key(tmp_path, floe, table_bucket):  # noqa: F811
    doc = connector(floe, table_bucket, "bad", topics="t", **{"iceberg.tables": "a.b"})
    doc["config"]["iceberg.tables.upsert-mode-enabled"] = "true"
    r = subprocess.run([FLOE_BIN, "sink", "--config", str(write_config(tmp_path, doc)),
                        "--bootstrap-servers", "127.0.0.1:1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "iceberg.tables.upsert-mode-enabled" in r.stderr, r.stderr
    doc["config"].pop("iceberg.tables.upsert-mode-enabled")
    doc["config"]["iceberg.catalog.frobnicate"] = "1"
    r = subprocess.run([FLOE_BIN, "sink", "--config", str(write_config(tmp_path, doc)),
                        "--bootstrap-servers", "127.0.0.1:1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "iceberg.catalog.frobnicate: unknown key" in r.stderr, r.stderr
    # a .properties file reads the same
    doc["config"].pop("iceberg.catalog.frobnicate")
    props = tmp_path / "sink.properties"
    props.write_text("name=bad\n" + "".join("%s=%s\n" % kv for kv in doc["config"].items()) + "consumer.bogus.key=1\n")
    r = subprocess.run([FLOE_BIN, "sink", "--config", str(props), "--bootstrap-servers", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "bogus.key" in r.stderr, r.stderr


def test_static_table_exactly_n(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    ns, topic = "sink_%s" % uuid.uuid4().hex[:6], "ev-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 3)
    n = 300
    kafka.produce(topic, [json.dumps({"id": i, "name": "n%d" % i, "ts": 1700000000000 + i, "extra": [1]})
                          for i in range(n)])
    doc = connector(floe, table_bucket, "static-" + topic, topics=topic, **{"iceberg.tables": ns + ".events"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        t = wait_rows(rest_catalog, ns + ".events", n, sink)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    ids = sorted(t.column("id").to_pylist())
    assert ids == list(range(n))
    assert t.column("ts").to_pylist()[0].year == 2023
    tbl = rest_catalog.load_table(ns + ".events")
    summ = tbl.current_snapshot().summary
    offs = json.loads(summ["floe.offsets.connect-static-" + topic])
    assert sum(offs[topic].values()) == n, offs


def test_sigkill_while_producing_exactly_n(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """SIGKILL floe sink at random points while a producer writes N records; restart it
    each time; the table ends with exactly N rows, no duplicates. Every fifth round the
    process instead dies right after a table commit and before the group offsets (the fault
    point FLOE_SINK_FAULT=after-table-commit:K, K random), the window a random kill rarely
    hits (FLOE_SINK_KILLS rounds: 6 here, 50 in `make soak-sink`)."""
    ns, topic = "kill_%s" % uuid.uuid4().hex[:6], "kill-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 3)
    n, kills = int(os.environ.get("FLOE_SINK_KILL_N", "3000")), int(os.environ.get("FLOE_SINK_KILLS", "6"))
    cfg = kill_config(tmp_path, floe, table_bucket, "kill-" + topic, topic, ns, 300)
    th, done = kafka.produce_events_in_background(topic, n, 100, 0.3)
    rnd = random.Random(int(os.environ.get("FLOE_SINK_SEED", "11")))
    try:
        for k in range(kills):
            if k % 5 == 4:   # between the table commit and the group offsets
                sink = Sink(cfg, env={"FLOE_SINK_FAULT": "after-table-commit:%d" % rnd.randint(1, 3)},
                            args=["--bootstrap-servers", kafka.bootstrap]).start()
                try:
                    assert sink.wait(15) == 137, sink.log()[-3000:]
                except subprocess.TimeoutExpired:   # nothing left to commit: an ordinary kill
                    sink.kill()
                continue
            sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
            time.sleep(rnd.uniform(0.5, 2.5))
            assert sink.proc.poll() is None, sink.log()[-3000:]
            sink.kill()
        th.join(120)
        assert done.is_set()
        sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
        t = wait_rows(rest_catalog, ns + ".events", n, sink, timeout=90)
        time.sleep(1.5)   # a duplicate commit would show up here
        t = rows(rest_catalog, ns + ".events")
        assert sink.stop() == 0, sink.log()[-3000:]
    finally:
        th.join(5)
    ids = t.column("id").to_pylist()
    assert len(ids) == n and sorted(ids) == list(range(n)), (len(ids), len(set(ids)))


def test_members_share_partitions_exactly_n(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """Two members of one group share the partitions (cooperative rebalancing); one is
    SIGKILLed mid-stream and a third joins: partitions move between members and the table
    still ends with exactly the produced rows."""
    ns, topic = "grp_%s" % uuid.uuid4().hex[:6], "grp-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 4)
    n = 2000
    doc = connector(floe, table_bucket, "grp-" + topic, topics=topic,
                    **{"iceberg.tables": ns + ".events", "iceberg.control.commit.interval-ms": "300",
                       "consumer.override.session.timeout.ms": "6000",
                       "consumer.override.heartbeat.interval.ms": "500"})
    cfg = write_config(tmp_path, doc)
    args = ["--bootstrap-servers", kafka.bootstrap]
    a, b = Sink(cfg, args=args).start(), Sink(cfg, args=args).start()
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    c = None
    try:
        for i in range(n):
            p.produce(topic, json.dumps({"id": i}).encode(), key=str(i).encode())
            if i % 100 == 0:
                p.poll(0)
                time.sleep(0.25)
            if i == n // 3:
                a.kill()
            if i == n // 2:
                c = Sink(cfg, args=args).start()
        assert p.flush(30) == 0
        t = wait_rows(rest_catalog, ns + ".events", n, b, timeout=90)
        time.sleep(1.0)
        t = rows(rest_catalog, ns + ".events")
    finally:
        rc_b, rc_c = b.stop(), c.stop() if c else 0
    assert rc_b == 0 and rc_c == 0, b.log()[-2000:] + (c.log()[-2000:] if c else "")
    ids = t.column("id").to_pylist()
    assert len(ids) == n and sorted(ids) == list(range(n)), (len(ids), len(set(ids)))
    assert "assigned" in c.log() and "revoked" in b.log()


def test_crash_between_table_commit_and_group_offsets(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """The process dies right after a table commit and before the Kafka group offsets
    (the fault point FLOE_SINK_FAULT=after-table-commit:N): the restarted sink resumes from
    the table's offsets, not the group's, so nothing lands twice."""
    ns, topic = "crash_%s" % uuid.uuid4().hex[:6], "crash-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 2)
    n = 400
    doc = connector(floe, table_bucket, "crash-" + topic, topics=topic,
                    **{"iceberg.tables": ns + ".events", "iceberg.control.commit.interval-ms": "200",
                       "consumer.override.session.timeout.ms": "6000"})
    cfg = write_config(tmp_path, doc)
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(n // 2)])
    sink = Sink(cfg, env={"FLOE_SINK_FAULT": "after-table-commit:1"},
                args=["--bootstrap-servers", kafka.bootstrap]).start()
    assert sink.wait(60) == 137, sink.log()[-3000:]
    first = rows(rest_catalog, ns + ".events").num_rows
    assert 0 < first <= n // 2, first
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(n // 2, n)])
    sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        wait_rows(rest_catalog, ns + ".events", n, sink)
        time.sleep(1.0)
        t = rows(rest_catalog, ns + ".events")
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    assert sorted(t.column("id").to_pylist()) == list(range(n))
    assert "the tables hold it" in sink.log()


def test_compaction_and_expiry_keep_the_resume_point(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """The sink's offsets survive floe's compaction and snapshot expiry: the replace
    snapshot carries the parent's floe.offsets.<group>, so after every snapshot the sink
    wrote is expired, a sink that crashed between its table commit and its group offsets
    (FLOE_SINK_FAULT) still resumes from the table: exactly the produced rows. Without the
    carried key it resumes from the lagging group offsets and writes a half twice."""
    from test_append_scan import floe_cli
    ns, topic = "cmp_%s" % uuid.uuid4().hex[:6], "cmp-" + uuid.uuid4().hex[:6]
    ident = ns + ".events"
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 2)
    n, m = 400, 50
    doc = connector(floe, table_bucket, "cmp-" + topic, topics=topic,
                    **{"iceberg.tables": ident, "iceberg.control.commit.interval-ms": "200",
                       "consumer.override.session.timeout.ms": "6000"})
    cfg = write_config(tmp_path, doc)
    key = "floe.offsets.connect-cmp-" + topic
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(n // 2)])
    sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        wait_rows(rest_catalog, ident, n // 2, sink)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]     # group offsets: n/2
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(n // 2, n)])
    sink = Sink(cfg, env={"FLOE_SINK_FAULT": "after-table-commit:1"},
                args=["--bootstrap-servers", kafka.bootstrap]).start()
    assert sink.wait(60) == 137, sink.log()[-3000:]       # the table is ahead of the group offsets
    landed = rows(rest_catalog, ident).num_rows
    assert n // 2 < landed <= n, landed

    as_of = str(int((time.time() + 2 * 86400) * 1000))
    p = floe_cli(floe, table_bucket, "maintenance", "run", ident, "--job", "all", "--as-of", as_of,
                 "--min-snapshots-to-keep", "1", "--max-snapshot-age-hours", "1", "--output", "json")
    assert '"icebergCompaction"' in p.stdout and '"Failed"' not in p.stdout, p.stdout
    tbl = rest_catalog.load_table(ident)
    snaps = tbl.snapshots()
    assert len(snaps) == 1 and tbl.current_snapshot().summary.operation.value == "replace", snaps
    offs = json.loads(tbl.current_snapshot().summary[key])
    assert sum(offs[topic].values()) == landed, offs

    kafka.produce(topic, [json.dumps({"id": i}) for i in range(n, n + m)])
    sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        wait_rows(rest_catalog, ident, n + m, sink)
        time.sleep(1.0)
        t = rows(rest_catalog, ident)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    assert sorted(t.column("id").to_pylist()) == list(range(n + m))


def test_kafka_metadata_columns_and_commit_by_records(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """The Iceberg sink's KafkaMetadataTransform (transforms=kafka) adds _kafka_metadata_topic,
    _partition, _offset, _timestamp (and the external_field constant) to each row, inferred at
    auto-create; floe.commit.max-records commits every 100 records although the interval
    is 10 minutes: snapshots of exactly 100 rows, the rest at the clean stop."""
    ns, topic = "meta_%s" % uuid.uuid4().hex[:6], "meta-" + uuid.uuid4().hex[:6]
    kafka.create_topic(topic, 1)
    n = 350
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(n)])
    doc = connector(floe, table_bucket, "meta-" + topic, topics=topic, **{
        "iceberg.tables": ns + ".events", "iceberg.tables.auto-create-enabled": "true",
        "iceberg.control.commit.interval-ms": "600000", "floe.commit.max-records": "100",
        "transforms": "kafka", "transforms.kafka.type": "org.apache.iceberg.connect.transforms.KafkaMetadataTransform",
        "transforms.kafka.external_field": "cluster,east"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        wait_rows(rest_catalog, ns + ".events", 300, sink)
        time.sleep(1.0)
        assert rows(rest_catalog, ns + ".events").num_rows == 300    # the last 50 wait for the interval
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    tbl = rest_catalog.load_table(ns + ".events")
    added = [int(s.summary["added-records"]) for s in tbl.snapshots()]
    assert added == [100, 100, 100, 50], added
    types = {f.name: str(f.field_type) for f in tbl.schema().fields}
    assert types == {"id": "long", "_kafka_metadata_topic": "string", "_kafka_metadata_partition": "long",
                     "_kafka_metadata_offset": "long", "_kafka_metadata_timestamp": "long",
                     "_kafka_metadata_cluster": "string"}, types
    t = tbl.scan().to_arrow().sort_by("id").to_pylist()
    assert [r["id"] for r in t] == list(range(n))
    assert all(r["_kafka_metadata_topic"] == topic and r["_kafka_metadata_partition"] == 0 and
               r["_kafka_metadata_offset"] == r["id"] and r["_kafka_metadata_cluster"] == "east" for r in t)
    now_ms = time.time() * 1000
    assert all(now_ms - 600000 < r["_kafka_metadata_timestamp"] <= now_ms for r in t)


def test_zombie_member_is_fenced(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """A member frozen (SIGSTOP) with an uncommitted batch loses its partition to another
    member, which commits the same records; when the zombie wakes up its commit is refused
    by the table's offsets (or it learns it lost the partition first): no duplicates."""
    ns, topic = "zomb_%s" % uuid.uuid4().hex[:6], "zomb-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 1)
    doc = connector(floe, table_bucket, "zomb-" + topic, topics=topic,
                    **{"iceberg.tables": ns + ".events", "iceberg.control.commit.interval-ms": "4000",
                       "consumer.override.session.timeout.ms": "6000",
                       "consumer.override.heartbeat.interval.ms": "500"})
    cfg = write_config(tmp_path, doc)
    args = ["--bootstrap-servers", kafka.bootstrap]
    a = Sink(cfg, args=args).start()
    b = None
    try:
        kafka.produce(topic, [json.dumps({"id": i}) for i in range(100)])
        wait_rows(rest_catalog, ns + ".events", 100, a)
        kafka.produce(topic, [json.dumps({"id": i}) for i in range(100, 200)])
        time.sleep(1.0)                       # a holds 100..199 in its batch
        a.proc.send_signal(signal.SIGSTOP)
        b = Sink(cfg, args=args).start()      # gets the partition once a's session expires
        wait_rows(rest_catalog, ns + ".events", 200, b, timeout=60)
        a.proc.send_signal(signal.SIGCONT)    # the zombie's interval has long passed
        time.sleep(4.0)
        t = rows(rest_catalog, ns + ".events")
    finally:
        a.proc.send_signal(signal.SIGCONT)
        rc_a = a.stop()
        rc_b = b.stop() if b else 0
    assert sorted(t.column("id").to_pylist()) == list(range(200)), t.num_rows
    assert rc_a == 0 and rc_b == 0, a.log()[-2000:]
    assert "fenced" in a.log() or "partitions lost" in a.log(), a.log()[-3000:]


def test_dynamic_autocreate_envelope_dlq(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """Dynamic routing with auto-create from Connect-envelope JSON; a new field adds a
    column (evolve-schema-enabled); a poison record goes to the dead-letter topic with
    its coordinates and the reason while the rest lands."""
    ns, topic, dlq = "dyn_%s" % uuid.uuid4().hex[:6], "dyn-" + uuid.uuid4().hex[:6], "dlq-" + uuid.uuid4().hex[:6]
    kafka.create_topic(topic, 1)
    kafka.create_topic(dlq, 1)

    def env(i, tbl, extra=None):
        fields = [{"field": "id", "type": "int64", "optional": False},
                  {"field": "tbl", "type": "string", "optional": False},
                  {"field": "at", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp"},
                  {"field": "small", "type": "int32", "optional": False}]
        payload = {"id": i, "tbl": tbl, "at": 1700000000000 + i, "small": i}
        if extra:   # a new column, and small widened to int64 and made optional
            fields.append({"field": "note", "type": "string", "optional": True})
            fields[3] = {"field": "small", "type": "int64", "optional": True}
            payload["note"] = extra
            payload["small"] = 2 ** 40 + i
        return json.dumps({"schema": {"type": "struct", "fields": fields, "optional": False}, "payload": payload})

    vals = [env(i, "%s.A" % ns if i % 2 else "%s.b" % ns) for i in range(20)]
    vals.insert(7, "{not json")
    vals += [env(100 + i, "%s.b" % ns, extra="x%d" % i) for i in range(5)]
    kafka.produce(topic, vals)
    doc = connector(floe, table_bucket, "dyn-" + topic, topics=topic, **{
        "iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "tbl",
        "iceberg.tables.auto-create-enabled": "true", "iceberg.tables.evolve-schema-enabled": "true",
        "iceberg.tables.default-partition-by": "day(at)", "iceberg.table.%s.a.partition-by" % ns: "bucket(id, 4)",
        "value.converter.schemas.enable": "true", "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.context.headers.enable": "true"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        a = wait_rows(rest_catalog, ns + ".a", 10, sink)   # routed values are lower-cased
        b = wait_rows(rest_catalog, ns + ".b", 15, sink)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    assert sorted(a.column("id").to_pylist()) == list(range(1, 20, 2))
    assert sorted(b.column("id").to_pylist()) == list(range(0, 20, 2)) + list(range(100, 105))
    assert sorted(x for x in b.column("note").to_pylist() if x) == ["x%d" % i for i in range(5)]
    tb = rest_catalog.load_table(ns + ".b")
    assert str(tb.schema().find_field("at").field_type) == "timestamptz"
    assert [(f.name, str(f.transform)) for f in tb.spec().fields] == [("at_day", "day")]
    small = tb.schema().find_field("small")
    assert str(small.field_type) == "long" and not small.required
    assert sorted(x for x in b.column("small").to_pylist() if x >= 2 ** 40) == [2 ** 40 + 100 + i for i in range(5)]
    ta = rest_catalog.load_table(ns + ".a")
    assert [(f.name, str(f.transform)) for f in ta.spec().fields] == [("id_bucket", "bucket[4]")]
    msgs = kafka.consume_all(dlq, 1)
    assert len(msgs) == 1 and msgs[0].value() == b"{not json"
    h = dict(msgs[0].headers())
    assert h["__connect.errors.topic"] == topic.encode() and h["__connect.errors.offset"] == b"7"
    assert b"not JSON" in h["__connect.errors.exception.message"]


def test_tolerance_none_stops_and_commits_nothing_of_the_batch(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    ns, topic = "none_%s" % uuid.uuid4().hex[:6], "none-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(5)] + [json.dumps({"id": "seven"})] +
                  [json.dumps({"id": i}) for i in range(6, 9)])
    doc = connector(floe, table_bucket, "none-" + topic, topics=topic,
                    **{"iceberg.tables": ns + ".events", "iceberg.control.commit.interval-ms": "60000"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    rc = sink.wait(60)
    assert rc == 1, sink.log()[-3000:]
    assert "%s-0@5" % topic in sink.log() and "id" in sink.log()
    t = rows(rest_catalog, ns + ".events")
    assert t.num_rows == 0


def test_null_items_in_arrays(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """Arrays whose items are null: schemaless JSON (auto-created, the element type inferred
    from the first item that is not null), the Connect envelope with optional items, and a
    table made beforehand with an optional list element: every null item lands as null, in
    its place."""
    ns, topic = "nulls_%s" % uuid.uuid4().hex[:6], "nulls-" + uuid.uuid4().hex[:6]
    kafka.create_topic(topic, 1)
    from pyiceberg.types import ListType
    rest_catalog.create_namespace_if_not_exists(ns)
    rest_catalog.create_table("%s.made" % ns, schema=Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "tags", ListType(3, StringType(), element_required=False), required=False)))
    plain = [{"id": 0, "tbl": "auto", "tags": [None, "a", None], "nums": [1, None, 3]},
             {"id": 1, "tbl": "auto", "tags": [None], "nums": [None, None]},
             {"id": 2, "tbl": "auto", "tags": ["b"], "nums": []},
             {"id": 3, "tbl": "made", "tags": ["x", None, "y"]},
             {"id": 4, "tbl": "made", "tags": [None]}]
    vals = [json.dumps(dict(v, tbl="%s.%s" % (ns, v["tbl"]))) for v in plain]
    env_fields = [{"field": "id", "type": "int64", "optional": False},
                  {"field": "tbl", "type": "string", "optional": False},
                  {"field": "tags", "type": "array", "optional": True,
                   "items": {"type": "string", "optional": True}}]
    for i, tags in ((5, [None, "e", None]), (6, [None])):
        vals.append(json.dumps({"schema": {"type": "struct", "fields": env_fields, "optional": False},
                                "payload": {"id": i, "tbl": "%s.env" % ns, "tags": tags}}))
    kafka.produce(topic, vals[:5])
    doc = connector(floe, table_bucket, "nulls-" + topic, topics=topic, **{
        "iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "tbl",
        "iceberg.tables.auto-create-enabled": "true", "iceberg.control.commit.interval-ms": "300"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        auto = wait_rows(rest_catalog, ns + ".auto", 3, sink)
        made = wait_rows(rest_catalog, ns + ".made", 2, sink)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    # the envelope: a second sink with schemas.enable, on a topic of its own
    kafka.create_topic(topic + "-env", 1)
    kafka.produce(topic + "-env", vals[5:])
    doc["config"]["value.converter.schemas.enable"] = "true"
    doc["config"]["topics"] = topic + "-env"
    doc["name"] = doc["name"] + "-env"
    ns_env = json.loads(vals[5])["payload"]["tbl"]
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        env = wait_rows(rest_catalog, ns_env, 2, sink)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    got = {r["id"]: r for r in auto.to_pylist()}
    assert got[0]["tags"] == [None, "a", None] and got[0]["nums"] == [1, None, 3]
    assert got[1]["tags"] == [None] and got[1]["nums"] == [None, None]
    assert got[2]["tags"] == ["b"] and got[2]["nums"] == []
    t = rest_catalog.load_table(ns + ".auto").schema()
    assert str(t.find_field("tags").field_type) == "list<string>" and not t.find_field("tags").field_type.element_required
    assert str(t.find_field("nums").field_type) == "list<long>"
    assert {r["id"]: r["tags"] for r in made.to_pylist()} == {3: ["x", None, "y"], 4: [None]}
    assert {r["id"]: r["tags"] for r in env.to_pylist()} == {5: [None, "e", None], 6: [None]}
    assert not rest_catalog.load_table(ns_env).schema().find_field("tags").field_type.element_required


def scrape(port):
    """floe sink's /metrics as {name{labels}: value}."""
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def test_metrics_count_records_commits_and_lag(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """--metrics-listen serves Prometheus /metrics: records and bytes in, a bad record, the
    committed rows, files and bytes (equal to the table's own figures), batch commits with
    their latency, and per partition the lag behind the high watermark, which reaches 0 once
    everything is in the table; the same counters move with the next records."""
    from conftest import free_port
    ns, topic = "mx_%s" % uuid.uuid4().hex[:6], "mx-" + uuid.uuid4().hex[:6]
    make_events_table(rest_catalog, ns, "events")
    kafka.create_topic(topic, 3)
    n = 240
    vals = [json.dumps({"id": i, "name": "n%d" % i}) for i in range(n)]
    kafka.produce(topic, vals[:120] + ["not json"] + vals[120:], partition=None)
    port = free_port()
    doc = connector(floe, table_bucket, "mx-" + topic, topics=topic,
                    **{"iceberg.tables": ns + ".events", "errors.tolerance": "all"})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap,
                                                   "--metrics-listen", "127.0.0.1:%d" % port]).start()
    try:
        wait_rows(rest_catalog, ns + ".events", n, sink)
        end, m = time.time() + 30, {}
        while time.time() < end:
            m = scrape(port)
            lags = {k: v for k, v in m.items() if k.startswith("floe_sink_partition_lag{")}
            if len(lags) == 3 and not any(lags.values()) and m["floe_sink_records_total"] == n + 1:
                break
            time.sleep(0.3)
        assert m["floe_sink_partitions_assigned"] == 3, m
        assert lags and not any(lags.values()), m
        assert m["floe_sink_records_total"] == n + 1
        assert m["floe_sink_record_bytes_total"] == sum(len(v) for v in vals) + len("not json")
        assert m["floe_sink_bad_records_total"] == 1
        assert m["floe_sink_rows_committed_total"] == n
        tbl = rest_catalog.load_table(ns + ".events")
        files = list(tbl.inspect.files().column("file_size_in_bytes").to_pylist())
        assert m["floe_sink_files_written_total"] == len(files)
        assert m["floe_sink_file_bytes_written_total"] == sum(files)
        assert m["floe_sink_snapshots_total"] == len(list(tbl.snapshots()))
        assert m['floe_sink_batches_total{result="ok"}'] >= 1
        assert m["floe_sink_batch_commit_seconds_count"] >= m['floe_sink_batches_total{result="ok"}']
        assert m['floe_sink_batch_commit_seconds_bucket{le="+Inf"}'] == m["floe_sink_batch_commit_seconds_count"]
        assert m["floe_sink_last_commit_timestamp_seconds"] > time.time() - 120
        offs = {k: v for k, v in m.items() if k.startswith("floe_sink_partition_committed_offset{")}
        assert sum(offs.values()) == n + 1, offs   # the bad record's offset is passed too
        # more records: the counters follow
        kafka.produce(topic, [json.dumps({"id": n + i}) for i in range(30)])
        wait_rows(rest_catalog, ns + ".events", n + 30, sink)
        end = time.time() + 30
        while time.time() < end:
            m = scrape(port)
            if m["floe_sink_rows_committed_total"] == n + 30:
                break
            time.sleep(0.3)
        assert m["floe_sink_rows_committed_total"] == n + 30 and m["floe_sink_records_total"] == n + 31
        import urllib.error
        with pytest.raises(urllib.error.HTTPError) as ei:
            import urllib.request
            urllib.request.urlopen("http://127.0.0.1:%d/other" % port, timeout=10)
        assert ei.value.code == 404
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]


def test_memory_cap_cuts_batches_and_pauses(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """floe.memory.max-bytes bounds what the sink holds (rows and Parquet row groups not yet
    committed), whatever the input: 24,000 poorly compressible records into 40 partitions land
    exactly once, in batches cut at the cap (long before the 15 s commit interval, which only
    commits the tail) while the partitions are paused for the commit in flight; the peak stays
    near the 1 MiB cap where, uncapped, the sink would hold the run's 7 MB until the interval."""
    from conftest import free_port
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    ns, topic = "mem_%s" % uuid.uuid4().hex[:6], "mem-" + uuid.uuid4().hex[:6]
    rest_catalog.create_namespace_if_not_exists(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "cat", StringType(), required=False),
                    NestedField(3, "pad", StringType(), required=False))
    rest_catalog.create_table("%s.events" % ns, schema=schema, partition_spec=PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat")))
    kafka.create_topic(topic, 3)
    n, cap = 24000, 1 << 20
    rnd = random.Random(7)
    kafka.produce(topic, [json.dumps({"id": i, "cat": "c%02d" % (i % 40), "pad": "%064x" % rnd.getrandbits(256) * 4})
                          for i in range(n)])
    port = free_port()
    doc = connector(floe, table_bucket, "mem-" + topic, topics=topic,
                    **{"iceberg.tables": ns + ".events", "iceberg.control.commit.interval-ms": "15000",
                       "floe.memory.max-bytes": str(cap)})
    sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap,
                                                   "--metrics-listen", "127.0.0.1:%d" % port]).start()
    try:
        t = wait_rows(rest_catalog, ns + ".events", n, sink, timeout=120)
        m = scrape(port)
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    assert sorted(t.column("id").to_pylist()) == list(range(n))
    assert m["floe_sink_memory_cuts_total"] >= 3, m
    assert m["floe_sink_pauses_total"] >= 1, m
    assert m["floe_sink_memory_peak_bytes"] <= 2 * cap, m
    assert m["floe_sink_rows_committed_total"] == n


def test_takeover_stops_on_what_it_cannot_carry_on(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    """A table the Java sink committed to (its kafka.connect.offsets.<control-topic>.<group> key)
    whose control topic holds, past that key's offsets, first a record that is no Iceberg control
    event, then (another control topic) a DATA_WRITTEN event the Java sink 1.10.1 wrote for a table
    of that name in another warehouse (tests/fuzz/corpus/handoff): floe sink stops each time with
    the reason, even with errors.tolerance=all (a takeover failure is no record's fault: nothing
    goes to the dead-letter topic), and commits nothing."""
    import pyarrow as pa
    ns, topic, dlq = "handoff", "ho-" + uuid.uuid4().hex[:6], "hodlq-" + uuid.uuid4().hex[:6]
    tbl = make_events_table(rest_catalog, ns, "events")
    for t in (topic, dlq):
        kafka.create_topic(t, 1)
    seed = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus", "handoff", "java-1.10.1-0-2.bin")
    cases = [("ctl-" + uuid.uuid4().hex[:6], b"not an Iceberg control event", "not an Iceberg control event"),
             ("ctl-" + uuid.uuid4().hex[:6], open(seed, "rb").read(), "outside the table's location")]
    kafka.produce(topic, [json.dumps({"id": i}) for i in range(3)])
    for k, (ctl, event, why) in enumerate(cases):
        kafka.create_topic(ctl, 1)
        kafka.produce(ctl, [event])
        tbl.append(pa.table({"id": pa.array([k], pa.int64()), "name": pa.array([None], pa.string()),
                             "ts": pa.array([None], pa.timestamp("us", tz="UTC"))}),
                   snapshot_properties={"kafka.connect.offsets.%s.connect-handoff" % ctl: '{"0":0}'})
        doc = connector(floe, table_bucket, "handoff", topics=topic,
                        **{"iceberg.tables": ns + ".events", "iceberg.control.topic": ctl,
                           "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq})
        sink = Sink(write_config(tmp_path, doc), args=["--bootstrap-servers", kafka.bootstrap]).start()
        rc = sink.wait(60)
        assert rc == 1 and why in sink.log() and "taking table handoff.events over" in sink.log(), sink.log()[-3000:]
        assert rows(rest_catalog, ns + ".events").num_rows == k + 1
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "w-" + uuid.uuid4().hex[:6]})
    lo, hi = c.get_watermark_offsets(TopicPartition(dlq, 0), timeout=30)
    c.close()
    assert hi == 0, "records went to the dead-letter topic"
