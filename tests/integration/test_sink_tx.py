"""floe sink commits a batch that touches several tables in one multi-table transaction
(POST {p}/transactions/commit) where the catalog has it, and table by table where it answers
that it has not (404 for the route, 405, 406, 501).

- A batch routed to 3 tables whose transaction is refused (the fault point
  FLOE_SINK_FAULT=tx-refused:1 adds a requirement to the third table's change that cannot
  hold, and the process exits once the catalog has refused it): none of the 3 tables changed;
  the restarted sink lands every record in all 3, exactly once, each commit one transaction.
- The same routing through a proxy that answers 501 to transactions/commit: one attempt,
  then per-table commits, every record exactly once; and through one whose /v1/config
  endpoints leave transactions/commit out: never asked."""
import http.client
import json
import time
import uuid
from http.server import BaseHTTPRequestHandler

import pytest

from kafka_fixtures import LocalHttp, Sink, kafka  # noqa: F401
from rest_fixtures import catalog_url, rest_catalog, s3tables, table_bucket  # noqa: F401
from test_sink import connector, make_events_table, rows, wait_rows, write_config

TABLES = ("a", "b", "c")


def routed_config(tmp_path, floe, arn, ns, topic, **extra):
    cfg = {"iceberg.tables": ",".join("%s.%s" % (ns, t) for t in TABLES),
           "iceberg.tables.route-field": "tbl", "iceberg.control.commit.interval-ms": "1000"}
    for t in TABLES:
        cfg["iceberg.table.%s.%s.route-regex" % (ns, t)] = "^%s$" % t
    cfg.update(extra)
    return write_config(tmp_path, connector(floe, arn, "tx-" + topic, topics=topic, **cfg))


def produce_routed(kafka, topic, first, n):
    kafka.produce(topic, [json.dumps({"id": i, "name": "n%d" % i, "tbl": TABLES[i % 3]})
                          for i in range(first, first + n)], partition=0)


def routed_setup(cat, kafka, prefix):
    """The 3 tables made, a topic of one partition holding the first n records: (ns, topic, n)."""
    ns, topic, n = "%s_%s" % (prefix, uuid.uuid4().hex[:6]), "%s-%s" % (prefix, uuid.uuid4().hex[:6]), 300
    for t in TABLES:
        make_events_table(cat, ns, t)
    kafka.create_topic(topic, 1)
    produce_routed(kafka, topic, 0, n)
    return ns, topic, n


def check_exactly(cat, ns, topic, group, n):
    for k, t in enumerate(TABLES):
        got = rows(cat, "%s.%s" % (ns, t))
        assert sorted(got.column("id").to_pylist()) == list(range(k, n, 3)), (t, got.num_rows)
        summ = cat.load_table("%s.%s" % (ns, t)).current_snapshot().summary
        assert json.loads(summ["floe.offsets." + group]) == {topic: {"0": n}}, summ


def test_refused_transaction_changes_no_table_and_retry_lands_all_once(tmp_path, floe, table_bucket,  # noqa: F811
                                                                       rest_catalog, kafka):  # noqa: F811
    ns, topic, n = routed_setup(rest_catalog, kafka, "tx")
    cfg = routed_config(tmp_path, floe, table_bucket, ns, topic)
    sink = Sink(cfg, env={"FLOE_SINK_FAULT": "tx-refused:1"}, args=["--bootstrap-servers", kafka.bootstrap]).start()
    assert sink.wait(60) == 137, sink.log()[-3000:]
    assert "the transaction was refused (HTTP 409" in sink.log(), sink.log()[-3000:]
    for t in TABLES:   # all or nothing: the two tables whose changes held did not move either
        tbl = rest_catalog.load_table("%s.%s" % (ns, t))
        assert tbl.current_snapshot() is None, (t, tbl.current_snapshot())
        assert rows(rest_catalog, "%s.%s" % (ns, t)).num_rows == 0
    # the retry: the restarted member re-reads the batch, more records arrive while it runs
    sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        wait_rows(rest_catalog, "%s.c" % ns, n // 3, sink)
        produce_routed(kafka, topic, n, n)
        for t in TABLES:
            wait_rows(rest_catalog, "%s.%s" % (ns, t), 2 * n // 3, sink)
        time.sleep(1.5)   # a duplicate commit would show up here
    finally:
        assert sink.stop() == 0, sink.log()[-3000:]
    check_exactly(rest_catalog, ns, topic, "connect-tx-" + topic, 2 * n)
    log = sink.log()
    assert "one transaction" in log and "committing table by table" not in log, log[-3000:]
    # every commit of the batch was one transaction: the tables moved in step
    counts = {t: len(rest_catalog.load_table("%s.%s" % (ns, t)).metadata.snapshots) for t in TABLES}
    assert len(set(counts.values())) == 1, counts


class NoTxProxy(LocalHttp):
    """Forwards the catalog's requests unchanged (the SigV4 signature covers the Host header,
    passed through as it came) and answers 501 to POST .../transactions/commit, as a catalog
    without multi-table transactions does; with unlist, /v1/config's endpoints also leave it
    out, as such a catalog says."""

    def __init__(self, port, unlist=False):
        self.tx_posts = 0
        proxy = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and self.path.split("?")[0].endswith("/transactions/commit"):
                    proxy.tx_posts += 1
                    out = json.dumps({"error": {"message": "not implemented", "type": "NotImplementedException",
                                                "code": 501}}).encode()
                    self.send_response(501)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                c.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in self.headers.items():
                    c.putheader(k, v)
                c.endheaders(body)
                r = c.getresponse()
                data = r.read()
                if unlist and self.path.split("?")[0].endswith("/v1/config") and r.status == 200:
                    doc = json.loads(data)
                    doc["endpoints"] = [e for e in doc["endpoints"] if not e.endswith("/transactions/commit")]
                    data = json.dumps(doc).encode()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                c.close()

            do_GET = do_POST = do_HEAD = do_DELETE = _forward

        self.serve(H)


@pytest.mark.parametrize("unlisted", [False, True], ids=["answers-501", "not-in-endpoints"])
def test_catalog_without_transactions_commits_table_by_table(tmp_path, floe, table_bucket,  # noqa: F811
                                                             rest_catalog, kafka, unlisted):  # noqa: F811
    ns, topic, n = routed_setup(rest_catalog, kafka, "notx")
    proxy = NoTxProxy(floe.catalog_port, unlist=unlisted)
    cfg = routed_config(tmp_path, floe, table_bucket, ns, topic, **{"iceberg.catalog.uri": proxy.url + "/iceberg"})
    sink = Sink(cfg, args=["--bootstrap-servers", kafka.bootstrap]).start()
    try:
        for t in TABLES:
            wait_rows(rest_catalog, "%s.%s" % (ns, t), n // 3, sink)
        produce_routed(kafka, topic, n, n)
        for t in TABLES:
            wait_rows(rest_catalog, "%s.%s" % (ns, t), 2 * n // 3, sink)
        time.sleep(1.5)
    finally:
        rc = sink.stop()
        proxy.close()
    assert rc == 0, sink.log()[-3000:]
    check_exactly(rest_catalog, ns, topic, "connect-tx-" + topic, 2 * n)
    if unlisted:   # not asked at all
        assert proxy.tx_posts == 0, proxy.tx_posts
    else:          # asked once, then table by table
        assert proxy.tx_posts == 1, proxy.tx_posts
        assert "no multi-table transactions (HTTP 501" in sink.log(), sink.log()[-3000:]
    assert "one transaction" not in sink.log()
