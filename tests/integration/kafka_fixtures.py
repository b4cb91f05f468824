"""A real single-node KRaft Kafka broker for the floe sink tests, started from the jars
tests/compat/fetch.sh puts in tests/compat/.cache/kafka-<version>/lib (fetched on first
use, as tests/compat/run.sh does), listening on 127.0.0.1 only; plus small helpers to
create topics, produce and consume with confluent-kafka, and to run `floe sink`."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import FLOE_BIN, REPO, free_port, terminate

KAFKA_VERSION = os.environ.get("KAFKA_VERSION", "3.9.2")
KLIB = REPO / "tests/compat/.cache" / ("kafka-" + KAFKA_VERSION) / "lib"


class LocalHttp:
    """A test peer's HTTP server on 127.0.0.1 (a free port), serving handler on a
    daemon thread: url, close(). Subclasses build their handler class and call
    serve(handler)."""

    def serve(self, handler):
        from http.server import ThreadingHTTPServer
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Broker:
    def __init__(self, workdir):
        self.dir = Path(workdir)
        self.port = free_port()
        self.cport = free_port()
        self.bootstrap = "127.0.0.1:%d" % self.port
        self.proc = None

    def start(self):
        (self.dir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        (self.dir / "server.properties").write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            "controller.quorum.voters=1@127.0.0.1:%d" % self.cport,
            "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, self.cport),
            "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs=%s" % (self.dir / "logs"), "num.partitions=1",
            "offsets.topic.replication.factor=1", "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=false", ""]))
        jopts = ["-Dlog4j.configuration=file:%s" % (self.dir / "log4j.properties"), "-Djava.awt.headless=true"]
        cp = str(KLIB) + "/*"
        r = subprocess.run(["java", "-cp", cp, *jopts, "kafka.tools.StorageTool", "format", "-t",
                            uuid.uuid4().hex[:22], "-c", str(self.dir / "server.properties")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        self.log = open(self.dir / "kafka.log", "w")
        self.proc = subprocess.Popen(["java", "-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-cp", cp, *jopts,
                                      "kafka.Kafka", str(self.dir / "server.properties")],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        from confluent_kafka.admin import AdminClient
        end = time.time() + 90
        while time.time() < end:
            assert self.proc.poll() is None, (self.dir / "kafka.log").read_text()[-3000:]
            try:
                md = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=2)
                if md.brokers:
                    return self
            except Exception:
                pass
            time.sleep(0.5)
        raise AssertionError("broker did not start:\n" + (self.dir / "kafka.log").read_text()[-3000:])

    def stop(self):
        terminate(self.proc)
        self.log.close()

    def create_topic(self, name, partitions=1):
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.bootstrap})   # kept alive until the futures resolve
        for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            f.result(30)

    def produce(self, topic, values, partition=None, key=None):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        for i, v in enumerate(values):
            kw = {} if partition is None else {"partition": partition}
            while True:
                try:
                    p.produce(topic, value=v if isinstance(v, (bytes, type(None))) else v.encode(),
                              key=key or str(i).encode(), **kw)
                    break
                except BufferError:
                    p.poll(0.1)
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(30) == 0

    def produce_events_in_background(self, topic, n, every, pause):
        """Starts a thread that writes the n events {"id": i, "name": "n<i>", "ts": ...}
        (i = 0..n-1) to topic, sleeping `pause` seconds after each `every` records, so that a
        test can kill things while it runs. Returns (thread, done): done is set once all n
        are flushed; join the thread before the test ends."""
        done = threading.Event()

        def producer():
            from confluent_kafka import Producer
            p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
            for i in range(n):
                p.produce(topic, json.dumps({"id": i, "name": "n%d" % i, "ts": 1700000000000 + i}).encode())
                if i % every == 0:
                    p.poll(0)
                    time.sleep(pause)
            p.flush(30)
            done.set()

        th = threading.Thread(target=producer)
        th.start()
        return th, done

    def consume_all(self, topic, expect, timeout=30):
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "t-" + uuid.uuid4().hex,
                      "auto.offset.reset": "earliest"})
        c.subscribe([topic])
        out, end = [], time.time() + timeout
        while len(out) < expect and time.time() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                out.append(m)
        c.close()
        return out


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    if not shutil.which("java"):
        pytest.fail("java is not installed (scripts/install-deps.sh installs it)")
    if not KLIB.is_dir():
        r = subprocess.run(["bash", str(REPO / "tests/compat/fetch.sh"), "kafka"], capture_output=True, text=True,
                           env=dict(os.environ, KAFKA_VERSION=KAFKA_VERSION), timeout=1200)
        assert r.returncode == 0, r.stderr[-3000:]
    b = Broker(tmp_path_factory.mktemp("kafka")).start()
    yield b
    b.stop()


class Sink:
    """One `floe sink` process with its log file."""

    def __init__(self, config_path, env=None, args=()):
        self.config_path = str(config_path)
        self.env = dict(os.environ, **(env or {}))
        self.args = list(args)
        fd, self.log_path = tempfile.mkstemp(prefix="floe-sink-", suffix=".log",
                                             dir=os.path.dirname(self.config_path))
        os.close(fd)
        self.proc = None

    def start(self):
        self.logf = open(self.log_path, "a")
        self.proc = subprocess.Popen([FLOE_BIN, "sink", "--config", self.config_path, *self.args],
                                     stdout=self.logf, stderr=subprocess.STDOUT, env=self.env)
        return self

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.logf.close()

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        return self.proc.returncode

    def wait(self, timeout=60):
        rc = self.proc.wait(timeout)
        self.logf.close()
        return rc

    def log(self):
        return Path(self.log_path).read_text(errors="replace")
