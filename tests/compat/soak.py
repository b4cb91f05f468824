"""The streaming soak of issue 10 (`make soak`; a short variant runs in tests/compat/ci.sh).

One `floe serve` with automatic maintenance on (--maintenance-interval MAINT_INTERVAL) takes, for
SOAK_SECONDS, the source document's pipeline (KRaft broker + Kafka Connect with the Apache Iceberg
sink, iceberg.control.commit.interval-ms=1000, 2 tasks, a 3-partition topic) into the partitioned
table soak.events, plus `floe append` writers appending small batches in a loop: writer c into
soak.events beside Connect, writers a and b into soak.metrics (both partitioned). Meanwhile a
sampler records, per table: data files per partition, manifests, snapshots, metadata.json bytes,
objects under the table's location; the server log gives every commit's latency (op=updateTable
ms=), the writers their own (wall time of each `floe append`).

Snapshot expiry within minutes: floe applies S3 Tables' snapshot management as the service
does: maxSnapshotAgeHours is at least 1, and the table's history.expire.* properties never
shorten it (S3 Tables ignores them). So a 10-minute run has no snapshot old enough to expire by
the real clock. The soak sets icebergSnapshotManagement to its minimum (1 snapshot, 1 hour) and
runs the expiry job with `floe maintenance run --job snapshots --as-of T` (the operator's
what-if clock, documented in docs/catalog.md) every EXPIRE_EVERY seconds with T = now + 1 h -
RETAIN_S: a snapshot is treated as an hour old RETAIN_S seconds after its commit, i.e. the run
is what an hour-retention table reaches after an hour, compressed. Compaction and manifest
merge are the server's own scheduler, unaided.

At the end (producer and writers stopped, Connect drained) it checks:
  - bounded: the last third's maximum of files per partition, manifests and metadata.json bytes
    is within the stated bounds and no more than PLATEAU x the middle third's (a plateau, not a
    line growing with the commits), and the table keeps at most half its commits' snapshots;
  - commit latency: server-side p50 of the last window within LATENCY_FACTOR of the first
    window (window = min(60 s, SOAK_SECONDS/3)), the same for the writers' own;
  - every row exactly once: PyIceberg and Spark (iceberg-spark-runtime, as
    tests/integration/test_spark_sql.py) read the same count and the same distinct keys, equal to
    what was produced and appended;
  - no failed commit: every floe append exited 0, the connector and its tasks never FAILED,
    no commit failure in the Connect log; every expiry run exited 0.
Prints the numbers and ends with 'soak: N passed, M failed'.

Env: SOAK_SECONDS (600)  RATE_EPS (100 events/s)  MAINT_INTERVAL (5)  EXPIRE_EVERY (10)
     RETAIN_S (30)  BATCH_ROWS (40)  WRITER_PAUSE (0.5 s)  ICEBERG_VERSION (1.10.1)
     KAFKA_VERSION (3.9.2)  FLOE_BIN (build/floe)  KEEP (1: keep the run dir)  SPARK (1)
Logs: tests/compat/.cache/runs/<run>-soak/{floe,kafka,connect}.log, samples.jsonl, report.json"""
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = Path(os.environ.get("COMPAT_CACHE", HERE / ".cache"))
SOAK_SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
RATE_EPS = float(os.environ.get("RATE_EPS", "100"))
MAINT_INTERVAL = int(os.environ.get("MAINT_INTERVAL", "5"))
EXPIRE_EVERY = float(os.environ.get("EXPIRE_EVERY", "10"))
RETAIN_S = int(os.environ.get("RETAIN_S", "30"))
BATCH_ROWS = int(os.environ.get("BATCH_ROWS", "40"))
WRITER_PAUSE = float(os.environ.get("WRITER_PAUSE", "0.5"))
SAMPLE_EVERY = float(os.environ.get("SAMPLE_EVERY", "10"))
ICEBERG_VERSION = os.environ.get("ICEBERG_VERSION", "1.10.1")
KAFKA_VERSION = os.environ.get("KAFKA_VERSION", "3.9.2")
SPARK_ICEBERG_VERSION = os.environ.get("SPARK_ICEBERG_VERSION", "1.10.1")
FLOE_BIN = os.environ.get("FLOE_BIN", str(REPO / "build/floe"))
KEEP = os.environ.get("KEEP", "1") == "1"
USE_SPARK = os.environ.get("SPARK", "1") == "1"
# Bounds (stated, generous for a loaded 2-core machine; the soak's output shows the real numbers).
FILES_PER_PARTITION_MAX = int(os.environ.get("FILES_PER_PARTITION_MAX", "100"))
MANIFESTS_MAX = int(os.environ.get("MANIFESTS_MAX", "64"))
METADATA_BYTES_MAX = int(os.environ.get("METADATA_BYTES_MAX", str(2 << 20)))
PLATEAU = float(os.environ.get("PLATEAU", "1.3"))
LATENCY_FACTOR = float(os.environ.get("LATENCY_FACTOR", "2.0"))
LATENCY_SLACK_MS = float(os.environ.get("LATENCY_SLACK_MS", "25"))

REGION = "us-east-1"
AK = os.environ.setdefault("FLOE_ROOT_ACCESS_KEY_ID", "FLOESOAKKEY000000001")
SK = os.environ.setdefault("FLOE_ROOT_SECRET_ACCESS_KEY", "floeSoakSecret/0123456789abcdefghijklmn")
os.environ.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION=REGION,
                  AWS_EC2_METADATA_DISABLED="true", COMPAT_REGION=REGION)
NS = "soak"
TYPES = ("click", "view", "purchase", "signup")
CATS = ("a", "b", "c")
T0 = time.time()
STOP = threading.Event()


def log(msg):
    print("[%4ds] %s" % (time.time() - T0, msg), flush=True)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from free_port import free_port  # noqa: E402 - one picker for every test server


def wait_for(secs, what, fn):
    end = time.time() + secs
    while True:
        try:
            if fn():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if time.time() > end:
            raise SystemExit("soak: timeout after %ds waiting for %s" % (secs, what))
        time.sleep(0.5)


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


class Soak:
    def __init__(self):
        self.run = CACHE / "runs" / (time.strftime("%Y%m%d-%H%M%S") + "-soak")
        self.run.mkdir(parents=True)
        self.procs = []
        self.s3p, self.catp, self.bp, self.cp, self.rp = (free_port() for _ in range(5))
        self.s3 = "http://127.0.0.1:%d" % self.s3p
        self.cat = "http://127.0.0.1:%d" % self.catp
        self.rest = "http://127.0.0.1:%d" % self.rp
        self.boot = "127.0.0.1:%d" % self.bp
        self.lock = threading.Lock()
        self.produced = 0
        self.writer_ok = {}        # writer -> list of (t_end, seconds, first, n)
        self.writer_fail = []      # (writer, t, rc, stderr tail)
        self.expiry_runs = []      # (t, table, rc, output)
        self.connect_failed = []
        self.samples = []
        self.errors = []
        self.checks = []
        self.stream_t0 = self.stream_t1 = None
        self.spark = None
        self.spark_error = "not started"
        self.spark_thread = threading.Thread(target=self.start_spark, daemon=True)

    # ------------------------------------------------------------------ processes
    def spawn(self, name, argv, **kw):
        f = open(self.run / (name + ".log"), "ab")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, **kw)
        self.procs.append((name, p))
        return p

    def stop_all(self):
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def start_floe(self):
        self.floe = self.spawn("floe", [FLOE_BIN, "serve", "--data-dir", str(self.run / "floe-data"),
                                        "--s3-listen", "127.0.0.1:%d" % self.s3p,
                                        "--catalog-listen", "127.0.0.1:%d" % self.catp, "--region", REGION,
                                        "--maintenance-interval", str(MAINT_INTERVAL)])
        wait_for(20, "floe /health", lambda: urllib.request.urlopen(self.s3 + "/health", timeout=2).status == 200)
        log("floe up (s3 %s, catalog %s, --maintenance-interval %d)" % (self.s3, self.cat, MAINT_INTERVAL))

    def start_kafka(self):
        klib = CACHE / ("kafka-%s/lib" % KAFKA_VERSION)
        cp = str(klib) + "/*"
        (self.run / "log4j.properties").write_text("\n".join([
            "log4j.rootLogger=INFO, stdout", "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.logger.org.apache.kafka.clients=WARN", "log4j.logger.org.reflections=ERROR",
            "log4j.logger.kafka.log=WARN", "log4j.logger.org.apache.iceberg=INFO", ""]))
        (self.run / "server.properties").write_text("\n".join([
            "process.roles=broker,controller", "node.id=1", "controller.quorum.voters=1@127.0.0.1:%d" % self.cp,
            "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.bp, self.cp),
            "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.bp, "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs=%s" % (self.run / "kafka-logs"), "num.partitions=1", "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=3", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "transaction.state.log.num.partitions=3",
            "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=true", ""]))
        self.java = ["-Dlog4j.configuration=file:%s" % (self.run / "log4j.properties"), "-Djava.awt.headless=true"]
        cid = subprocess.run(["java", "-cp", cp, *self.java, "kafka.tools.StorageTool", "random-uuid"],
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        subprocess.run(["java", "-cp", cp, *self.java, "kafka.tools.StorageTool", "format", "-t", cid,
                        "-c", str(self.run / "server.properties")], capture_output=True, check=True)
        self.spawn("kafka", ["java", "-Xms256m", "-Xmx768m", "-cp", cp, *self.java, "kafka.Kafka",
                             str(self.run / "server.properties")])
        from confluent_kafka.admin import AdminClient, NewTopic

        def listening():
            with socket.create_connection(("127.0.0.1", self.bp), timeout=2):
                return True
        wait_for(90, "kafka broker port", listening)
        admin = AdminClient({"bootstrap.servers": self.boot})
        wait_for(90, "kafka broker", lambda: admin.list_topics(timeout=2).brokers)
        for f in admin.create_topics([NewTopic("events", 3, 1), NewTopic("control-iceberg", 1, 1)]).values():
            f.result(30)
        log("kafka up (%s); topics events(3 partitions), control-iceberg" % self.boot)

    def start_connect(self):
        klib = CACHE / ("kafka-%s/lib" % KAFKA_VERSION)
        (self.run / "connect-distributed.properties").write_text("\n".join([
            "bootstrap.servers=%s" % self.boot, "group.id=soak-connect",
            "key.converter=org.apache.kafka.connect.json.JsonConverter",
            "value.converter=org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable=false", "value.converter.schemas.enable=false",
            "config.storage.topic=soak-connect-configs", "offset.storage.topic=soak-connect-offsets",
            "status.storage.topic=soak-connect-status", "config.storage.replication.factor=1",
            "offset.storage.replication.factor=1", "offset.storage.partitions=3",
            "status.storage.replication.factor=1", "status.storage.partitions=3", "offset.flush.interval.ms=5000",
            "listeners=http://127.0.0.1:%d" % self.rp, "rest.advertised.host.name=127.0.0.1",
            "rest.advertised.port=%d" % self.rp, "plugin.path=%s" % (CACHE / "plugins" / ("iceberg-" + ICEBERG_VERSION)),
            "plugin.discovery=hybrid_warn", ""]))
        self.spawn("connect", ["java", "-Xms256m", "-Xmx1500m", *self.java, "-cp", str(klib) + "/*",
                               "org.apache.kafka.connect.cli.ConnectDistributed",
                               str(self.run / "connect-distributed.properties")])
        wait_for(180, "Connect REST", lambda: urllib.request.urlopen(self.rest + "/connectors", timeout=2).status == 200)
        log("connect up (%s)" % self.rest)

    # ------------------------------------------------------------------ tables and connector
    def make_tables(self):
        import boto3
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.schema import Schema
        from pyiceberg.transforms import DayTransform, IdentityTransform
        from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType
        s3t = boto3.client("s3tables", endpoint_url=self.cat, region_name=REGION)
        self.s3t = s3t
        self.arn = s3t.create_table_bucket(name="soak-bucket")["arn"]
        sys.path.insert(0, str(HERE))
        from check import catalog
        self.catalog = catalog(self.cat + "/iceberg", self.s3, self.arn)
        self.catalog.create_namespace(NS)
        self.catalog.create_table("%s.events" % NS, schema=Schema(
            NestedField(1, "event_id", StringType(), required=True),
            NestedField(2, "event_time", StringType(), required=False),
            NestedField(3, "event_type", StringType(), required=False)),
            partition_spec=PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "event_type")))
        self.catalog.create_table("%s.metrics" % NS, schema=Schema(
            NestedField(1, "key", StringType(), required=True),
            NestedField(2, "ts", TimestamptzType(), required=False),
            NestedField(3, "cat", StringType(), required=False),
            NestedField(4, "v", LongType(), required=False)),
            partition_spec=PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"),
                                         PartitionField(3, 1001, IdentityTransform(), "cat")),
            # metrics: previous metadata.json files are deleted once they fall off the metadata-log
            # (by the expiry job); events keeps Iceberg's default (they wait for unreferenced-file removal)
            properties={"write.metadata.delete-after-commit.enabled": "true"})
        for name in ("events", "metrics"):
            s3t.put_table_maintenance_configuration(
                tableBucketARN=self.arn, namespace=NS, name=name, type="icebergCompaction",
                value={"status": "enabled", "settings": {"icebergCompaction": {"targetFileSizeMB": 64}}})
            s3t.put_table_maintenance_configuration(
                tableBucketARN=self.arn, namespace=NS, name=name, type="icebergSnapshotManagement",
                value={"status": "enabled",
                       "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 1}}})
        log("table bucket %s; tables %s.events (identity(event_type)) and %s.metrics (day(ts), identity(cat)); "
            "maintenance: compaction 64 MB, snapshots 1 / 1 h; metrics: write.metadata.delete-after-commit.enabled"
            % (self.arn, NS, NS))

    def start_connector(self):
        cfg = {
            "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector", "tasks.max": "2",
            "topics": "events", "iceberg.tables": "%s.events" % NS,
            "iceberg.control.commit.interval-ms": "1000",
            "iceberg.catalog.type": "rest", "iceberg.catalog.uri": self.cat + "/iceberg",
            "iceberg.catalog.rest.sigv4-enabled": "true", "iceberg.catalog.rest.signing-region": REGION,
            "iceberg.catalog.warehouse": self.arn, "iceberg.catalog.rest.signing-name": "osstables",
            "iceberg.catalog.rest.access-key-id": AK, "iceberg.catalog.rest.secret-access-key": SK,
            "iceberg.catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO", "iceberg.catalog.s3.endpoint": self.s3,
            "iceberg.catalog.s3.access-key-id": AK, "iceberg.catalog.s3.secret-access-key": SK,
            "iceberg.catalog.s3.path-style-access": "true", "iceberg.catalog.client.region": REGION,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        }
        req = urllib.request.Request(self.rest + "/connectors", method="POST",
                                     data=json.dumps({"name": "iceberg-sink", "config": cfg}).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()

        def running():
            s = self.connector_status()
            return s["connector"]["state"] == "RUNNING" and s["tasks"] and all(
                t["state"] == "RUNNING" for t in s["tasks"])
        wait_for(90, "connector and tasks RUNNING", running)
        log("connector iceberg-sink RUNNING (2 tasks, iceberg.control.commit.interval-ms=1000, Iceberg %s)"
            % ICEBERG_VERSION)

    def connector_status(self):
        with urllib.request.urlopen(self.rest + "/connectors/iceberg-sink/status", timeout=10) as r:
            return json.loads(r.read())

    # ------------------------------------------------------------------ load
    def guarded(self, fn, *args):
        """A load thread's body: an exception is an error of the run, never a silent stop."""
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001
            self.errors.append("%s: %r" % (fn.__name__, e))
            log("%s died: %r" % (fn.__name__, e))

    def producer(self):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.boot, "enable.idempotence": True, "linger.ms": 20})
        failed = []

        def cb(err, _msg):
            if err is not None:
                failed.append(err)
        i = 0
        t0 = time.time()
        while not STOP.is_set():
            due = int((time.time() - t0) * RATE_EPS)
            while i < due:
                e = {"event_id": "e%08d" % i,
                     "event_time": "2026-01-%02dT%02d:%02d:%02dZ" % (1 + i % 28, i % 24, i % 60, (i * 7) % 60),
                     "event_type": TYPES[i % len(TYPES)]}
                p.produce("events", key=json.dumps(e["event_id"]).encode(), value=json.dumps(e).encode(),
                          partition=i % 3, on_delivery=cb)
                i += 1
            p.poll(0)
            time.sleep(0.05)
        left = p.flush(60)
        if left or failed:
            self.errors.append("producer: %d undelivered, %d failed (%s)" % (left, len(failed), failed[:1]))
        self.produced = i
        log("producer: %d events sent" % i)

    def floe_cli(self, *args, stdin=None, timeout=300):
        env = dict(os.environ, FLOE_ACCESS_KEY_ID=AK, FLOE_SECRET_ACCESS_KEY=SK)
        return subprocess.run([FLOE_BIN, *args, "--catalog-uri", self.cat + "/iceberg", "--warehouse", self.arn,
                               "--region", REGION, "--signing-name", "osstables"],
                              env=env, input=stdin, capture_output=True, text=True, timeout=timeout)

    def writer(self, name, table):
        n = 0
        ok = self.writer_ok.setdefault(name, [])
        while not STOP.is_set():
            if table == "events":
                rows = [{"event_id": "%s%08d" % (name, n + k), "event_time": "2026-02-01T00:00:%02dZ" % (k % 60),
                         "event_type": TYPES[(n + k) % len(TYPES)]} for k in range(BATCH_ROWS)]
            else:
                rows = [{"key": "%s%08d" % (name, n + k),
                         "ts": "2026-03-0%dT%02d:00:00+00:00" % (1 + (n + k) % 2, (n + k) % 24),
                         "cat": CATS[(n + k) % len(CATS)], "v": n + k} for k in range(BATCH_ROWS)]
            data = "".join(json.dumps(r) + "\n" for r in rows)
            t = time.time()
            try:
                p = self.floe_cli("append", "%s.%s" % (NS, table), "--file", "-", "--output", "json", stdin=data)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = -1, "timeout"
            dt = time.time() - t
            if rc == 0:
                ok.append((time.time(), dt, n, BATCH_ROWS))
                n += BATCH_ROWS
            else:
                self.writer_fail.append((name, time.time() - T0, rc, err[-500:]))
                log("writer %s: floe append FAILED (rc %d): %s" % (name, rc, err.strip()[-300:]))
                n += BATCH_ROWS  # the batch's outcome is unknown: its keys are not expected, never reused
            STOP.wait(WRITER_PAUSE)

    def expirer(self):
        while not STOP.wait(EXPIRE_EVERY):
            as_of = int((time.time() + 3600 - RETAIN_S) * 1000)
            for table in ("events", "metrics"):
                p = self.floe_cli("maintenance", "run", "%s.%s" % (NS, table), "--job", "snapshots",
                                  "--as-of", str(as_of), "--min-snapshots-to-keep", "1",
                                  "--max-snapshot-age-hours", "1", "--output", "json")
                self.expiry_runs.append((time.time() - T0, table, p.returncode, p.stdout[-2000:], p.stderr[-600:]))
                if p.returncode:
                    log("expiry %s: rc %d: %s" % (table, p.returncode, (p.stdout + p.stderr).strip()[-300:]))

    def sample_table(self, table):
        from pyiceberg.manifest import DataFileContent, ManifestContent
        t = self.catalog.load_table((NS, table))
        loc = t.metadata_location
        bucket, key = loc.split("://", 1)[1].split("/", 1)
        md_bytes = self.s3c.head_object(Bucket=bucket, Key=key)["ContentLength"]
        snap = t.current_snapshot()
        parts, deletes, manifests = {}, 0, 0
        if snap:
            for m in snap.manifests(t.io):
                manifests += 1
                for e in m.fetch_manifest_entry(t.io, discard_deleted=True):
                    if m.content == ManifestContent.DATA and e.data_file.content == DataFileContent.DATA:
                        k = (e.data_file.spec_id, repr(tuple(e.data_file.partition)))
                        parts[k] = parts.get(k, 0) + 1
                    else:
                        deletes += 1
        lb, _, prefix = t.metadata.location.split("://", 1)[1].partition("/")
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        objects = md_files = 0
        for page in self.s3c.get_paginator("list_objects_v2").paginate(Bucket=lb, Prefix=prefix):
            objects += page.get("KeyCount", 0)
            md_files += sum(1 for o in page.get("Contents", []) if o["Key"].endswith(".metadata.json"))
        return {"metadata_bytes": md_bytes, "snapshots": len(t.metadata.snapshots),
                "snapshot_log": len(t.metadata.snapshot_log), "metadata_log": len(t.metadata.metadata_log),
                "manifests": manifests, "partitions": len(parts),
                "files_per_partition_max": max(parts.values()) if parts else 0,
                "data_files": sum(parts.values()), "delete_files": deletes, "objects": objects,
                "metadata_files": md_files, "objects_other": objects - md_files,
                "rows": int(snap.summary.additional_properties.get("total-records", 0)) if snap else 0,
                "sequence": t.metadata.last_sequence_number}

    def sample(self):
        row = {"t": round(time.time() - T0, 1)}
        for table in ("events", "metrics"):
            try:
                row[table] = self.sample_table(table)
            except Exception as e:  # noqa: BLE001 - a sample is best effort; the end checks are strict
                row[table] = {"error": repr(e)[:300]}
        try:
            st = self.connector_status()
            bad = [x for x in [st["connector"]] + st["tasks"] if x["state"] == "FAILED"]
            if bad:
                self.connect_failed.append((time.time() - T0, [x.get("trace", "")[:1500] for x in bad]))
            row["connect"] = [st["connector"]["state"]] + [x["state"] for x in st["tasks"]]
        except Exception as e:  # noqa: BLE001
            row["connect"] = repr(e)[:200]
        self.samples.append(row)
        with open(self.run / "samples.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        ev, me = row.get("events", {}), row.get("metrics", {})
        log("sample: events files/part %s manifests %s snaps %s md %s B objs %s (%s metadata.json) rows %s | "
            "metrics files/part %s manifests %s snaps %s md %s B objs %s (%s metadata.json) rows %s | connect %s" % (
                ev.get("files_per_partition_max"), ev.get("manifests"), ev.get("snapshots"), ev.get("metadata_bytes"),
                ev.get("objects"), ev.get("metadata_files"), ev.get("rows"),
                me.get("files_per_partition_max"), me.get("manifests"), me.get("snapshots"), me.get("metadata_bytes"),
                me.get("objects"), me.get("metadata_files"), me.get("rows"), row.get("connect")))

    def sampler(self):
        while not STOP.is_set():
            self.sample()
            STOP.wait(SAMPLE_EVERY)

    # ------------------------------------------------------------------ checks
    def check(self, ok, what):
        self.checks.append((bool(ok), what))
        log(("ok    " if ok else "FAIL  ") + what)

    def server_commits(self):
        """(unix time, table, ms, status) of every commit (op=updateTable) in floe's log."""
        out = []
        pat = re.compile(r"^(\S+)Z info http \S+ \S+ POST \S*/tables/(\w+) (\d+) op=updateTable .* ms=([\d.]+)")
        import calendar
        for line in open(self.run / "floe.log", errors="replace"):
            m = pat.match(line)
            if m:
                ts, frac = m.group(1).split(".")
                t = calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%S")) + int(frac) / 1000.0
                out.append((t, m.group(2), float(m.group(4)), int(m.group(3))))
        return out

    def maint_metrics(self):
        with urllib.request.urlopen(self.cat + "/metrics", timeout=10) as r:
            text = r.read().decode()
        runs = {}
        for ln in text.splitlines():
            m = re.match(r'floe_maintenance_runs_total\{type="(\w+)",status="(\w+)"\} (\d+)', ln)
            if m and int(m.group(3)):
                runs["%s/%s" % (m.group(1), m.group(2))] = int(m.group(3))
        return runs

    def read_keys_pyiceberg(self, table, col):
        t = self.catalog.load_table((NS, table))
        return t.scan(selected_fields=(col,)).to_arrow().column(col).to_pylist()

    def start_spark(self):
        """The SparkSession is started beside the streaming (its JVM start-up is ~half a minute on a
        busy 2-core machine); the catalog's warehouse is set once the table bucket exists (catalogs
        read their settings on first use)."""
        try:
            from pyspark.sql import SparkSession
            jars = sorted(str(p) for p in (CACHE / ("spark-iceberg-" + SPARK_ICEBERG_VERSION)).glob("*.jar"))
            c = "spark.sql.catalog.floe"
            b = (SparkSession.builder.master("local[2]").appName("floe-soak")
                 .config("spark.jars", ",".join(jars))
                 .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
                 .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "1g")
                 .config("spark.driver.extraJavaOptions", "-Daws.region=%s" % REGION)
                 .config("spark.local.dir", str(self.run / "spark-local")))
            for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": self.cat + "/iceberg",
                         ".rest.sigv4-enabled": "true", ".rest.signing-name": "osstables",
                         ".rest.signing-region": REGION, ".rest.access-key-id": AK, ".rest.secret-access-key": SK,
                         ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO", ".s3.endpoint": self.s3,
                         ".s3.path-style-access": "true", ".s3.access-key-id": AK, ".s3.secret-access-key": SK,
                         ".client.region": REGION, ".cache-enabled": "false"}.items():
                b = b.config(c + k, v)
            self.spark = b.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")
        except Exception as e:  # noqa: BLE001 - reported by the check that needs it
            self.spark_error = repr(e)[:500]

    def read_keys_spark(self):
        self.spark_thread.join(600)
        if self.spark is None:
            raise SystemExit("soak: Spark did not start: %s" % self.spark_error)
        spark = self.spark
        spark.conf.set("spark.sql.catalog.floe.warehouse", self.arn)
        try:
            out = {}
            for table, col in (("events", "event_id"), ("metrics", "key")):
                n, d = spark.sql("SELECT count(*), count(DISTINCT %s) FROM floe.%s.%s" % (col, NS, table)).collect()[0]
                keys = [r[0] for r in spark.sql("SELECT %s FROM floe.%s.%s" % (col, NS, table)).collect()]
                out[table] = (n, d, keys)
            return out
        finally:
            spark.stop()

    def thirds(self, table, field):
        xs = [(s["t"], s[table][field]) for s in self.samples
              if s["t"] >= self.stream_t0 - T0 and s["t"] <= self.stream_t1 - T0 and field in s.get(table, {})]
        n = len(xs)
        if n < 3:
            return None
        a, b, c = xs[:n // 3], xs[n // 3:2 * n // 3], xs[2 * n // 3:]
        return max(v for _, v in a), max(v for _, v in b), max(v for _, v in c)

    def verify(self):
        rep = {"soak_seconds": SOAK_SECONDS, "rate_eps": RATE_EPS, "maintenance_interval": MAINT_INTERVAL,
               "expire_every": EXPIRE_EVERY, "retain_s": RETAIN_S}
        # ---- bounded
        for table in ("events", "metrics"):
            # (field, absolute bound or None = reported only, slack of the plateau comparison: the
            # counts saw-tooth between compactions, so the last third may top the middle one a little)
            for field, bound, slack in (("files_per_partition_max", FILES_PER_PARTITION_MAX, 16),
                                        ("manifests", MANIFESTS_MAX, 16),
                                        ("metadata_bytes", METADATA_BYTES_MAX, 16384),
                                        ("objects_other", 1 << 30, 64),
                                        ("objects" if table == "metrics" else "metadata_files",
                                         1 << 30 if table == "metrics" else None, 64),
                                        ("snapshots", None, 0), ("data_files", None, 0)):
                th = self.thirds(table, field)
                rep["%s.%s thirds(max)" % (table, field)] = th
                if th is None:
                    self.check(False, "%s %s: too few samples" % (table, field))
                    continue
                if bound is None:
                    log("      %s %s: max per third %s" % (table, field, th))
                    continue
                self.check(th[2] <= bound and th[2] <= PLATEAU * th[1] + slack,
                           "%s %s bounded: max per third %s (last <= %d and <= %.1f x middle + %d)"
                           % (table, field, th, bound, PLATEAU, slack))
        # ---- commit latency, first window vs last
        win = min(60.0, (self.stream_t1 - self.stream_t0) / 3)
        commits = self.server_commits()
        for table in ("events", "metrics"):
            ms = [(t, m) for t, tb, m, st in commits if tb == table and st == 200]
            first = [m for t, m in ms if self.stream_t0 <= t < self.stream_t0 + win]
            last = [m for t, m in ms if self.stream_t1 - win <= t < self.stream_t1]
            f50, l50, f95, l95 = pct(first, 50), pct(last, 50), pct(first, 95), pct(last, 95)
            rep["%s server commit ms" % table] = {"first_p50": f50, "first_p95": f95, "last_p50": l50, "last_p95": l95,
                                                  "first_n": len(first), "last_n": len(last), "total": len(ms)}
            self.check(first and last and l50 <= LATENCY_FACTOR * f50 + LATENCY_SLACK_MS,
                       "%s server-side commit latency (op=updateTable): first %ds p50 %.1f p95 %.1f ms (%d commits), "
                       "last %ds p50 %.1f p95 %.1f ms (%d commits); %d commits in all"
                       % (table, win, f50, f95, len(first), win, l50, l95, len(last), len(ms)))
            snaps = self.thirds(table, "snapshots")
            self.check(snaps and snaps[2] <= len(ms) / 2,
                       "%s snapshots expire within the run: at most %s kept (last third) of %d commits"
                       % (table, snaps and snaps[2], len(ms)))
            non200 = sorted({st for _, tb, _, st in commits if tb == table and st != 200})
            rep["%s commit statuses other than 200" % table] = non200
            if non200:
                log("      %s: commits answered %s (conflicts are retried by the clients)" % (table, non200))
        for name, ok in sorted(self.writer_ok.items()):
            first = [d * 1000 for t, d, _, _ in ok if self.stream_t0 <= t < self.stream_t0 + win]
            last = [d * 1000 for t, d, _, _ in ok if self.stream_t1 - win <= t <= self.stream_t1 + 30]
            f50, l50, f95, l95 = pct(first, 50), pct(last, 50), pct(first, 95), pct(last, 95)
            rep["writer %s append ms" % name] = {"first_p50": f50, "first_p95": f95, "last_p50": l50,
                                                 "last_p95": l95, "appends": len(ok)}
            self.check(first and last and l50 <= LATENCY_FACTOR * f50 + 4 * LATENCY_SLACK_MS,
                       "writer %s: floe append wall time first p50 %.0f p95 %.0f ms, last p50 %.0f p95 %.0f ms; "
                       "%d appends of %d rows" % (name, f50, f95, l50, l95, len(ok), BATCH_ROWS))
        # ---- no failed commit
        self.check(not self.errors, "load threads: %d events produced, errors %s" % (self.produced, self.errors))
        self.check(not self.writer_fail, "writers: %d failed floe append (%s)" % (
            len(self.writer_fail), self.writer_fail[:2]))
        self.check(not self.connect_failed, "Connect: connector/tasks never FAILED (%s)" % (self.connect_failed[:1],))
        clog = (self.run / "connect.log").read_text(errors="replace").splitlines()
        # The sink's coordinator logs a commit it gave up on as "Commit failed, will try again next cycle";
        # "Retrying task after failure ... CommitFailedException" is Iceberg's own retry of a 409 (counted).
        cfail = [ln for ln in clog if re.search(r"Commit failed, will try again|Task threw an uncaught|"
                                                r"\] ERROR .*(iceberg|WorkerSinkTask)", ln)]
        retries = sum(1 for ln in clog if "Retrying task after failure" in ln)
        timeouts = sum(1 for ln in clog if "Commit timeout reached" in ln)
        rep["connect"] = {"commit_failures": len(cfail), "conflict_retries": retries, "commit_timeouts": timeouts}
        self.check(not cfail, "Connect log: %d commit failures (%d 409s retried by Iceberg, %d commit timeouts) %s"
                   % (len(cfail), retries, timeouts, [ln[:300] for ln in cfail[:2]]))
        exp_bad = [r for r in self.expiry_runs if r[2]]
        removed = 0
        for r in self.expiry_runs:
            try:
                removed += int(json.loads(r[3]).get("snapshotsRemoved", 0) or 0)
            except Exception:  # noqa: BLE001 - the count is informative
                pass
        rep["expiry runs"] = {"runs": len(self.expiry_runs), "failed": len(exp_bad), "snapshots_removed": removed}
        self.check(self.expiry_runs and not exp_bad and removed > 0, "expiry (floe maintenance run --job snapshots --as-of now+1h-%ds): "
                   "%d runs, %d snapshots removed, %d failed %s" % (RETAIN_S, len(self.expiry_runs), removed, len(exp_bad),
                                                     exp_bad[:1]))
        runs = self.maint_metrics()
        rep["server maintenance runs"] = runs
        ncomp = sum(v for k, v in runs.items() if k.startswith("icebergCompaction/Successful"))
        self.check(ncomp > 0 and not any("Failed" in k for k in runs),
                   "server maintenance runs (floe_maintenance_runs_total): %s" % runs)
        # ---- every row exactly once: PyIceberg and Spark
        want_events = {"e%08d" % i for i in range(self.produced)}
        want_metrics = set()
        for name, ok in self.writer_ok.items():
            keys = {"%s%08d" % (name, first + k) for _, _, first, n in ok for k in range(n)}
            (want_events if name == "c" else want_metrics).update(keys)
        py = {"events": self.read_keys_pyiceberg("events", "event_id"),
              "metrics": self.read_keys_pyiceberg("metrics", "key")}
        for table, want in (("events", want_events), ("metrics", want_metrics)):
            got = py[table]
            rep["%s rows" % table] = {"expected": len(want), "pyiceberg": len(got), "pyiceberg_distinct": len(set(got))}
            self.check(len(got) == len(want) and set(got) == want,
                       "PyIceberg %s: %d rows, %d distinct keys; expected %d (missing %d, unexpected %d)"
                       % (table, len(got), len(set(got)), len(want), len(want - set(got)), len(set(got) - want)))
        if USE_SPARK:
            sp = self.read_keys_spark()
            for table in ("events", "metrics"):
                n, d, keys = sp[table]
                rep["%s rows" % table].update(spark=n, spark_distinct=d)
                self.check(n == len(py[table]) == d and set(keys) == set(py[table]),
                           "Spark %s: count %d, distinct %d, same keys as PyIceberg: %s"
                           % (table, n, d, set(keys) == set(py[table])))
        rep["samples"] = len(self.samples)
        (self.run / "report.json").write_text(json.dumps(rep, indent=1, default=str))
        return rep

    # ------------------------------------------------------------------ main
    def main(self):
        import boto3
        from botocore.config import Config
        log("soak: %d s, %g events/s, writers a b (metrics) c (events) x %d rows, maintenance every %d s, "
            "expiry every %g s retaining %d s; run dir %s" % (SOAK_SECONDS, RATE_EPS, BATCH_ROWS, MAINT_INTERVAL,
                                                             EXPIRE_EVERY, RETAIN_S, self.run))
        subprocess.run(["bash", str(HERE / "fetch.sh"), "kafka", "sink"] + (["spark"] if USE_SPARK else []),
                       env=dict(os.environ, ICEBERG_VERSIONS=ICEBERG_VERSION), check=True, stdout=subprocess.DEVNULL)
        self.start_floe()
        self.s3c = boto3.client("s3", endpoint_url=self.s3, region_name=REGION,
                                config=Config(s3={"addressing_style": "path"}))
        if USE_SPARK:
            self.spark_thread.start()
        self.start_kafka()
        self.start_connect()
        self.make_tables()
        self.start_connector()
        threads = [threading.Thread(target=self.guarded, args=a, daemon=True) for a in (
            (self.producer,), (self.writer, "a", "metrics"), (self.writer, "b", "metrics"),
            (self.writer, "c", "events"), (self.expirer,), (self.sampler,))]
        self.stream_t0 = time.time()
        for th in threads:
            th.start()
        STOP.wait(SOAK_SECONDS)
        STOP.set()
        self.stream_t1 = time.time()
        for th in threads:
            th.join(300)
        log("streaming stopped after %d s; waiting for Connect to commit the %d produced events"
            % (self.stream_t1 - self.stream_t0, self.produced))
        want = self.produced + sum(n for _, _, _, n in self.writer_ok.get("c", []))

        def drained():
            return self.sample_table("events")["rows"] >= want
        wait_for(180, "Connect to commit every produced event", drained)
        time.sleep(5)  # two more commit intervals: a late duplicate would show here
        self.sample()
        log("drained: events table holds %d rows" % self.samples[-1]["events"]["rows"])
        rep = self.verify()
        log("numbers: %s" % json.dumps({k: v for k, v in rep.items() if not k.endswith("thirds(max)")}, default=str))
        failed = [w for ok, w in self.checks if not ok]
        print("soak: %d passed, %d failed" % (len(self.checks) - len(failed), len(failed)), flush=True)
        return 1 if failed else 0


def main():
    s = Soak()
    rc = 1
    try:
        rc = s.main()
    except SystemExit as e:
        log(str(e))
        print("soak: 0 passed, 1 failed", flush=True)
    except Exception:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        print("soak: 0 passed, 1 failed", flush=True)
    finally:
        STOP.set()
        s.stop_all()
        log("stopped; logs in %s" % s.run)
        if not KEEP and rc == 0:
            shutil.rmtree(s.run, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
