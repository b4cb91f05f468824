"""Three floe sink members of one group while a producer writes N records routed to two
tables (so that most commits are one multi-table transaction): every few seconds one member is
SIGKILLed and a new one added, so that partitions keep moving (the killed member's only after
its session times out) and transactions are cut at random points. Some of the new members
carry the fault point FLOE_SINK_FAULT=after-table-commit:K and die by themselves right after a
commit and before the group offsets. Then: exactly the N produced ids, split between the two
tables, no duplicates, no gaps.

FLOE_SINK_CHURN_ROUNDS (5 here, under a minute; `make soak-sink` runs 40), FLOE_SINK_SEED."""
import json
import os
import random
import threading
import time
import uuid

from kafka_fixtures import Sink, kafka  # noqa: F401
from rest_fixtures import rest_catalog, s3tables, table_bucket  # noqa: F401
from test_sink import connector, make_events_table, rows, write_config

ROUNDS = int(os.environ.get("FLOE_SINK_CHURN_ROUNDS", "5"))
SEED = int(os.environ.get("FLOE_SINK_SEED", "11"))


def test_three_members_added_and_killed_exactly_n(tmp_path, floe, table_bucket, rest_catalog, kafka):  # noqa: F811
    rnd = random.Random(SEED)
    print("FLOE_SINK_SEED=%d FLOE_SINK_CHURN_ROUNDS=%d" % (SEED, ROUNDS))
    ns, topic = "churn_%s" % uuid.uuid4().hex[:6], "churn-" + uuid.uuid4().hex[:6]
    for t in ("even", "odd"):
        make_events_table(rest_catalog, ns, t)
    kafka.create_topic(topic, 6)
    n = 1000 + 500 * ROUNDS
    doc = connector(floe, table_bucket, "churn-" + topic, topics=topic, **{
        "iceberg.tables": "%s.even,%s.odd" % (ns, ns), "iceberg.tables.route-field": "tbl",
        "iceberg.table.%s.even.route-regex" % ns: "^even$", "iceberg.table.%s.odd.route-regex" % ns: "^odd$",
        "iceberg.control.commit.interval-ms": "300",
        "consumer.override.session.timeout.ms": "6000", "consumer.override.heartbeat.interval.ms": "500"})
    cfg = write_config(tmp_path, doc)
    args = ["--bootstrap-servers", kafka.bootstrap]
    done = threading.Event()

    def producer():
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        for i in range(n):
            p.produce(topic, json.dumps({"id": i, "name": "n%d" % i, "tbl": "odd" if i % 2 else "even"}).encode(),
                      key=str(i).encode())
            if i % 100 == 0:
                p.poll(0)
                time.sleep(0.1)
        p.flush(30)
        done.set()

    th = threading.Thread(target=producer)
    members, gone = [Sink(cfg, args=args).start() for _ in range(3)], []
    th.start()
    try:
        for k in range(ROUNDS):
            time.sleep(rnd.uniform(1.0, 3.0))
            for m in list(members):   # a member that died by its fault point is replaced too
                if m.proc.poll() is not None:
                    assert m.proc.returncode == 137, m.log()[-3000:]
                    members.remove(m)
                    gone.append(m)
            victim = members.pop(rnd.randrange(len(members)))
            victim.kill()
            gone.append(victim)
            while len(members) < 3:
                env = {"FLOE_SINK_FAULT": "after-table-commit:%d" % rnd.randint(1, 6)} if rnd.random() < 0.3 else None
                members.append(Sink(cfg, env=env, args=args).start())
        th.join(120)
        assert done.is_set()
        for m in list(members):       # the survivors finish the job, without fault points
            if m.env.get("FLOE_SINK_FAULT"):
                m.kill()
                members.remove(m)
                gone.append(m)
        while len(members) < 2:
            members.append(Sink(cfg, args=args).start())
        end, got = time.time() + 90, 0
        while time.time() < end:
            got = sum(rows(rest_catalog, "%s.%s" % (ns, t)).num_rows for t in ("even", "odd"))
            if got >= n:
                break
            time.sleep(0.5)
        time.sleep(1.5)   # a duplicate commit would show up here
        even, odd = (rows(rest_catalog, "%s.%s" % (ns, t)).column("id").to_pylist() for t in ("even", "odd"))
    finally:
        th.join(5)
        rcs = [m.stop() for m in members]
    logs = "".join(m.log()[-1500:] for m in members)
    assert rcs == [0] * len(rcs), logs
    assert len(even) + len(odd) == n and sorted(even) == list(range(0, n, 2)) and sorted(odd) == list(range(1, n, 2)), \
        (len(even), len(set(even)), len(odd), len(set(odd)), n)
    assert any("one transaction" in m.log() for m in members + gone)
