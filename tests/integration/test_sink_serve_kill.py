"""floe sink and floe serve both SIGKILLed in many rounds while a producer writes N
records: each round kills either the sink (restarted at once) or, just after the sink logged
a commit so that the next one is in flight, floe serve (the catalog and S3; restarted on the
same ports and data after a pause). The records are routed to two tables by the parity of
their id, so that most commits are one multi-table transaction and floe serve dies in the middle
of some. The sink must ride out the catalog's absence (retrying, not exiting) and the two
tables must end with exactly the N produced ids, each with its half.

FLOE_SINK_KILL_ROUNDS (4 here; `make soak` runs 50), FLOE_SINK_KILL_N (records),
FLOE_SINK_SEED."""
import json
import os
import random
import threading
import time
import uuid

from conftest import FloeServer, free_port
from kafka_fixtures import Sink, kafka  # noqa: F401
from rest_fixtures import load_rest_catalog, s3tables_client
from test_sink import connector, make_events_table, rows, write_config

ROUNDS = int(os.environ.get("FLOE_SINK_KILL_ROUNDS", "4"))
SEED = int(os.environ.get("FLOE_SINK_SEED", "11"))


def test_sink_and_serve_sigkilled_in_rounds_exactly_n(tmp_path, kafka):  # noqa: F811
    rnd = random.Random(SEED)
    print("FLOE_SINK_SEED=%d FLOE_SINK_KILL_ROUNDS=%d" % (SEED, ROUNDS))
    srv = FloeServer(tmp_path / "data", name="serve-killed", s3_port=free_port(), catalog_port=free_port())
    srv.start()
    sink = None
    th = None
    try:
        arn = s3tables_client(srv).create_table_bucket(name="sk-%s" % uuid.uuid4().hex[:8])["arn"]
        cat = load_rest_catalog(srv, arn)
        ns, topic = "sk_%s" % uuid.uuid4().hex[:6], "sk-" + uuid.uuid4().hex[:6]
        for t in ("even", "odd"):
            make_events_table(cat, ns, t)
        kafka.create_topic(topic, 3)
        n = int(os.environ.get("FLOE_SINK_KILL_N", str(1000 + 1200 * ROUNDS)))
        # the producer's records are {"id": i, "name": "n<i>", ...}: routed by the last digit
        cfg = write_config(tmp_path, connector(srv, arn, "sk-" + topic, topics=topic, **{
            "iceberg.tables": "%s.even,%s.odd" % (ns, ns), "iceberg.tables.route-field": "name",
            "iceberg.table.%s.even.route-regex" % ns: "^n[0-9]*[02468]$",
            "iceberg.table.%s.odd.route-regex" % ns: "^n[0-9]*[13579]$",
            "iceberg.control.commit.interval-ms": "200",
            "consumer.override.session.timeout.ms": "6000", "consumer.override.heartbeat.interval.ms": "500"}))
        th, done = kafka.produce_events_in_background(topic, n, 50, 0.1)
        sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
        serve_kills, saw_tx = 0, False
        for k in range(ROUNDS):
            if k % 2 == 1:   # floe serve, just after a commit, while the next batch fills and commits
                before = sink.log().count("sink: committed")
                end = time.time() + 10
                while sink.log().count("sink: committed") == before and time.time() < end:
                    time.sleep(0.02)
                time.sleep(rnd.uniform(0.0, 0.3))
                srv.kill()
                serve_kills += 1
                time.sleep(rnd.uniform(0.3, 2.0))
                srv.start()
                time.sleep(rnd.uniform(0.5, 1.5))
                assert sink.proc.poll() is None, "floe sink exited while floe serve was down:\n" + sink.log()[-3000:]
            else:            # the sink itself
                time.sleep(rnd.uniform(0.3, 1.5))
                assert sink.proc.poll() is None, sink.log()[-3000:]
                sink.kill()
                saw_tx = saw_tx or "one transaction" in sink.log()
                sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
        th.join(180)
        assert done.is_set()
        end = time.time() + 120
        while time.time() < end and sum(rows(cat, "%s.%s" % (ns, t)).num_rows for t in ("even", "odd")) < n:
            assert sink.proc.poll() is None, sink.log()[-3000:]
            time.sleep(0.5)
        time.sleep(1.5)   # a duplicate commit would show up here
        even, odd = (rows(cat, "%s.%s" % (ns, t)).column("id").to_pylist() for t in ("even", "odd"))
        log = sink.log()
        assert sink.stop() == 0, log[-3000:]
        sink = None
        assert sorted(even) == list(range(0, n, 2)) and sorted(odd) == list(range(1, n, 2)), \
            (serve_kills, len(even), len(set(even)), len(odd), len(set(odd)), n)
        assert saw_tx or "one transaction" in log   # the members committed both tables at once
    finally:
        if th:
            th.join(5)
        if sink:
            sink.kill()
        srv.stop()
