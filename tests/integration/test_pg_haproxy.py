"""Three floe serve nodes on one PostgreSQL catalog behind HAProxy (Debian),
which checks GET /health: writers creating namespaces through the balancer
see no error while one node is stopped with SIGTERM and --drain-seconds (its
/health turns 503, HAProxy takes it out, requests in flight finish), and every
acknowledged namespace is listed once afterwards.

HAProxy is set not to retry (retries 0), like a balancer that cannot: without
the drain, requests sent to the stopping node fail (checked by hand: 503s
from HAProxy).

Control plane only (each node keeps objects in its own data dir until the
shared object store exists, docs/deployment.md). Skips where haproxy or the
PostgreSQL server binaries are absent."""
import shutil
import signal
import subprocess
import threading
import time

import pytest
from botocore.exceptions import ClientError

import pgserver
from conftest import free_port
from tables_fixtures import make_s3tables_client, unique_tb_name

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def start_haproxy(tmp_path, nodes):
    port = free_port()
    servers = "\n".join("    server n%d 127.0.0.1:%d check inter 300ms fall 1 rise 2" % (i, n.catalog_port)
                        for i, n in enumerate(nodes))
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text("""global
    maxconn 256
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    retries 0
frontend catalog
    bind 127.0.0.1:%d
    default_backend nodes
backend nodes
    balance roundrobin
    option httpchk GET /health
%s
""" % (port, servers))
    proc = subprocess.Popen([HAPROXY, "-f", str(cfg), "-db"], stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "haproxy.log", "wb"))
    end = time.time() + 10
    while time.time() < end:
        try:
            make_s3tables_client(port).list_table_buckets()
            return proc, port
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.1)
    proc.kill()
    pytest.fail("haproxy did not start: %s" % (tmp_path / "haproxy.log").read_text())


def test_drain_behind_haproxy(floe_factory, tmp_path):
    if not shutil.which("haproxy") and not shutil.os.path.exists(HAPROXY):
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    db = pgserver.fresh_database()
    nodes = [floe_factory(extra_args=["--catalog-db", db, "--drain-seconds", "3"]) for _ in range(3)]
    proc, port = start_haproxy(tmp_path, nodes)
    try:
        lb = make_s3tables_client(port)
        arn = lb.create_table_bucket(name=unique_tb_name("lb"))["arn"]
        acked, errors, stop = [], [], threading.Event()

        def writer(w):
            c = make_s3tables_client(port)
            i = 0
            while not stop.is_set():
                ns = "w%d_%d" % (w, i)
                i += 1
                try:
                    c.create_namespace(tableBucketARN=arn, namespace=[ns])
                    acked.append(ns)
                except ClientError as e:
                    errors.append((ns, e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]))
                except Exception as e:  # noqa: BLE001 - recorded, asserted below
                    errors.append((ns, repr(e)))

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        nodes[0].proc.send_signal(signal.SIGTERM)
        rc = nodes[0].proc.wait(30)
        nodes[0]._mark_stopped()
        time.sleep(1.0)                      # and a while on the two left
        stop.set()
        for t in threads:
            t.join(60)
        assert rc == 0
        assert not errors, errors[:5]
        listed, token = [], None
        while True:
            r = lb.list_namespaces(tableBucketARN=arn, maxNamespaces=100, **({"continuationToken": token} if token else {}))
            listed += [n["namespace"][0] for n in r["namespaces"]]
            token = r.get("continuationToken")
            if not token:
                break
        assert sorted(listed) == sorted(acked)
        assert len(acked) > 20, len(acked)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
