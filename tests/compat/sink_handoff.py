"""tests/compat/sink_handoff.py: a table first filled by the Apache Iceberg Kafka Connect sink,
then continued by floe sink from the same consumer group (connect-<name>): no duplicates, no gaps.

One floe serve, one KRaft broker, a 3-partition topic. The connector signs as an IAM user of
floe allowed everything. N1 events are produced and the JVM sink (Kafka Connect distributed
worker, ICEBERG_VERSION) drains them into the table. Then the user is denied
s3tables:UpdateTableMetadataLocation, so that the Java coordinator's table commits fail, and NP
more events are produced: the Java sink's workers write their files and announce them on the
control topic (DATA_WRITTEN), in the Kafka transaction that also moves the group's offsets past
them, while the table stays at N1 rows (checked). The worker is stopped there, the deny lifted,
N2 more events produced, and `floe sink` starts with the same connector JSON (same name, so the
same group): it commits the NP events' files the control topic names and the table's last Java
commit does not (sink/handoff.h), then resumes from the group's offsets. The table must end
with exactly the N1 + NP + N2 produced event ids (without the takeover, the NP would be
missing).

Env: N1 (20000), NP (5000), N2 (20000), ICEBERG_VERSION (1.10.1), KAFKA_VERSION, FLOE_BIN (build/floe).
Run by `make compat-sink-handoff`; logs in bench/out/sink-<stamp>/."""
import os
import subprocess
import sys
import time
import urllib.request
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import sink as B  # noqa: E402  (bench/sink.py: broker, Connect and table helpers)

N1 = int(os.environ.get("N1", "20000"))
N2 = int(os.environ.get("N2", "20000"))
NP = int(os.environ.get("NP", "5000"))
ALL = ["s3tables:*", "s3:*"]


def produce(topic, lo, hi):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": B.BROKER.bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for i in range(lo, hi):
        while True:
            try:
                p.produce(topic, value=B.event(i, "x" * 64).encode(), key=str(i).encode())
                break
            except BufferError:
                p.poll(0.05)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def group_position(group, topic, parts):
    """The records the group's committed offsets are past, summed over the topic's partitions."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": B.BROKER.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(parts)], timeout=30)
        return sum(max(tp.offset, 0) for tp in got)
    finally:
        c.close()


def dump_control(topic="control-iceberg"):
    """Keeps the control topic's records (OUT/control/P-OFFSET.bin): what floe sink read."""
    from confluent_kafka import Consumer
    out = B.OUT / "control"
    out.mkdir(exist_ok=True)
    c = Consumer({"bootstrap.servers": B.BROKER.bootstrap, "group.id": "dump", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed", "enable.partition.eof": True})
    c.subscribe([topic])
    end = time.time() + 20
    while time.time() < end:
        m = c.poll(1)
        if m is None:
            continue
        if m.error():
            break
        (out / ("%d-%d.bin" % (m.partition(), m.offset()))).write_bytes(m.value() or b"")
    c.close()


def wait_rows(cat, ident, n, alive, timeout):
    end = time.time() + timeout
    while time.time() < end:
        got = B.total_records(cat, ident)
        if got >= n:
            return got
        if not alive():
            raise SystemExit("the sink died (see %s)" % B.OUT)
        time.sleep(0.5)
    raise SystemExit("timeout: %s has %d of %d rows (see %s)" % (ident, B.total_records(cat, ident), n, B.OUT))


def main():
    B.T0 = time.time()
    B.OUT.mkdir(parents=True, exist_ok=True)
    if not B.KLIB.is_dir():
        subprocess.run(["bash", str(REPO / "tests/compat/fetch.sh"), "kafka"], check=True,
                       env=dict(os.environ, KAFKA_VERSION=B.KAFKA_VERSION))
    floe = B.FloeServer(B.OUT / "floe-data")
    floe.start()
    sink = None
    try:
        (B.OUT / "kafka").mkdir()
        B.BROKER = B.Broker(B.OUT / "kafka").start()
        arn = B.s3tables_client(floe).create_table_bucket(name="sink-handoff")["arn"]
        cat = B.load_rest_catalog(floe, arn, signing_name="osstables")
        ns, topic, ident = "handoff", "events", "handoff.events"
        B.make_table(cat, ns, "events")
        B.BROKER.create_topic(topic, 3)
        doc = B.connector(floe, arn, "handoff", topics=topic, **{
            "iceberg.tables": ident, "iceberg.control.commit.interval-ms": "1000", "tasks.max": "2"})
        from iam_fixtures import User, iam_client
        user = User(floe, iam_client(floe))
        user.put(ALL)
        for k in ("rest", "s3"):
            doc["config"]["iceberg.catalog.%s.access-key-id" % k] = user.ak
            doc["config"]["iceberg.catalog.%s.secret-access-key" % k] = user.sk
        B.log("producing %d events, then the JVM sink %s drains them" % (N1, B.ICEBERG_VERSION))
        produce(topic, 0, N1)
        p, rest, logf = B.start_connect()
        try:
            req = urllib.request.Request(rest + "/connectors", data=json.dumps(doc).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=30).read()
            n = wait_rows(cat, ident, N1, lambda: p.poll() is None, 900)
            B.log("JVM sink: table holds %d rows; its commits are now refused, %d more events" % (n, NP))
            user.iam.put_user_policy(UserName=user.name, PolicyName="p", PolicyDocument=json.dumps({
                "Version": "2012-10-17", "Statement": [
                    {"Effect": "Allow", "Action": ALL, "Resource": "*"},
                    {"Effect": "Deny", "Action": "s3tables:UpdateTableMetadataLocation", "Resource": "*"}]}))
            produce(topic, N1, N1 + NP)
            end = time.time() + 300
            while group_position("connect-handoff", topic, 3) < N1 + NP:
                if time.time() > end or p.poll() is not None:
                    raise SystemExit("the Java sink's workers never announced the last %d events (see %s)" % (NP, B.OUT))
                time.sleep(1)
            time.sleep(3)   # a commit that got through would show here
            held = B.total_records(cat, ident)
            B.log("group offsets past %d events, table at %d rows: stopping Connect" % (N1 + NP, held))
            if held != N1:
                raise SystemExit("the table moved to %d rows although its commits were refused" % held)
        finally:
            B.stop_connect(p, logf)
        dump_control()
        user.put(ALL)
        B.log("producing %d more, then floe sink continues with the same connector JSON" % N2)
        produce(topic, N1 + NP, N1 + NP + N2)
        cfg = B.OUT / "floe-sink.json"
        cfg.write_text(json.dumps(doc, indent=2))
        slog = open(B.OUT / "floe-sink.log", "w")
        sink = subprocess.Popen([B.FLOE_BIN, "sink", "--config", str(cfg), "--bootstrap-servers", B.BROKER.bootstrap],
                                stdout=slog, stderr=subprocess.STDOUT)
        total = N1 + NP + N2
        try:
            wait_rows(cat, ident, total, lambda: sink.poll() is None, 300)
        except SystemExit as e:
            B.log(str(e))
        time.sleep(3)
        ids = cat.load_table(ident).scan(selected_fields=("event_id",)).to_arrow().column("event_id").to_pylist()
        want = {json.loads(B.event(i, ""))["event_id"] for i in range(total)}
        dup, missing = len(ids) - len(set(ids)), len(want - set(ids))
        B.log("table holds %d rows: %d duplicates, %d missing of %d produced" % (len(ids), dup, missing, total))
        ok = len(ids) == total and not dup and not missing
    finally:
        if sink and sink.poll() is None:
            sink.terminate()
            sink.wait(60)
        if B.BROKER and B.BROKER.proc:
            B.BROKER.stop()
        floe.stop()
    print("sink handoff (JVM %s -> floe sink, group connect-handoff): %s" % (B.ICEBERG_VERSION, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
