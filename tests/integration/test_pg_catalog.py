"""floe serve on PostgreSQL (--catalog-db postgresql://...): /health reports the
database; PostgreSQL restarted under commit load costs no acknowledged commit,
no "outcome unknown" answer and no floe restart; a database that is down turns
commits into "nothing was committed" (500 ServiceFailureException, never
CommitStateUnknownException) and /health into 503; --drain-seconds keeps
serving after SIGTERM while /health says 503.

Needs Debian's PostgreSQL server binaries (skips otherwise). Uses the session's
test PostgreSQL (pgserver.py), which it stops and starts: other servers on it
see a short outage."""
import signal
import time

import pytest
import requests

import pgserver
from conftest import make_client
from rest_fixtures import RestRaw, s3tables_client, unique

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}


def pg_floe(floe_factory, *extra):
    return floe_factory(extra_args=["--catalog-db", pgserver.fresh_database(), *extra])


def health(srv, port=None):
    return requests.get("http://127.0.0.1:%d/health" % (port or srv.catalog_port), timeout=10)


def make_table(srv):
    tb = s3tables_client(srv)
    arn = tb.create_table_bucket(name="pg-" + unique("b").replace("_", "-"))["arn"]
    rest = RestRaw(srv, arn)
    assert rest.request("POST", rest.p("namespaces"), {"namespace": ["ns"]}).status_code == 200
    assert rest.request("POST", rest.p("namespaces/ns/tables"), {"name": "t", "schema": SCHEMA}).status_code == 200
    return rest


def commit(rest, key):
    return rest.request("POST", rest.p("namespaces/ns/tables/t"), {
        "requirements": [], "updates": [{"action": "set-properties", "updates": {key: "1"}}]})


def test_health_reports_the_database(floe_factory):
    srv = pg_floe(floe_factory)
    for port in (srv.catalog_port, srv.s3_port):
        r = health(srv, port)
        assert r.status_code == 200 and r.text == "ok"
        assert r.headers["X-Floe-Health"] == "catalog postgresql: ok,store: ok"


def test_restart_under_load_loses_nothing(floe_factory):
    srv = pg_floe(floe_factory)
    rest = make_table(srv)
    acked, answers = [], []

    def writer(w, stop):
        me = RestRaw(srv, rest.arn)
        i = 0
        while not stop.is_set():
            key = "w%d_%d" % (w, i)
            i += 1
            r = commit(me, key)
            answers.append((r.status_code, r.json().get("error", {}).get("type") if r.status_code != 200 else None))
            if r.status_code == 200:
                acked.append(key)
            time.sleep(0.01)

    pgserver.restart_under(writer, 3)
    # floe recovered by itself: commits land again, and every acknowledged one is there
    assert commit(rest, "after").status_code == 200
    props = rest.load_table("ns", "t").json()["metadata"]["properties"]
    missing = [k for k in acked if k not in props]
    assert not missing, missing[:10]
    kinds = {a for a in answers if a[0] != 200}
    assert all(a[0] in (409, 500) for a in kinds), kinds
    log = [ln for ln in srv.log_text().splitlines() if " warn " in ln or " error " in ln]
    assert not [a for a in answers if a[1] == "CommitStateUnknownException"], (kinds, log[-30:])
    assert len(acked) > 20, len(acked)


def test_database_down_is_nothing_committed(floe_factory):
    srv = pg_floe(floe_factory)
    rest = make_table(srv)
    assert commit(rest, "before").status_code == 200
    pgserver.halt()
    try:
        time.sleep(1.1)                      # /health caches its check for a second
        r = health(srv)
        assert r.status_code == 503 and "catalog postgresql: unreachable" in r.text, (r.status_code, r.text)
        r = commit(rest, "during")
        assert r.status_code >= 500
        assert r.json()["error"]["type"] != "CommitStateUnknownException", r.text
    finally:
        pgserver.resume()
    time.sleep(1.1)
    assert health(srv).status_code == 200
    assert commit(rest, "after").status_code == 200
    props = rest.load_table("ns", "t").json()["metadata"]["properties"]
    assert "before" in props and "after" in props and "during" not in props


def test_sigterm_drains(floe_factory):
    srv = floe_factory(extra_args=["--drain-seconds", "2"])
    s3 = make_client(srv.endpoint)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    r = health(srv)
    assert r.status_code == 503 and "node: draining" in r.text, (r.status_code, r.text)
    s3.list_buckets()                        # still serving while the balancer notices
    rc = srv.proc.wait(20)
    srv._mark_stopped()
    assert rc == 0
    assert time.time() - t0 >= 1.9
