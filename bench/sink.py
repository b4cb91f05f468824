"""bench/sink.py: floe sink beside the Kafka Connect Iceberg sink (the JVM pipeline of
tests/compat/run.sh), on the same topic in the same run.

One floe serve (the REST catalog and S3 for both), one KRaft broker, one topic of
PARTITIONS partitions filled with N JSON events of about EVENT_BYTES bytes before either
sink starts. Then, in turn, each sink drains the whole topic into its own table (same
schema, same connector configuration apart from name and table; commits every
COMMIT_MS): floe sink as one process, then a Kafka Connect distributed worker with the
Apache Iceberg sink (ICEBERG_VERSION, TASKS_MAX tasks). Measured for each, from its start
(floe sink: the process; Connect: the connector's POST, the worker already up) until the
table's total-records reaches N: wall time, CPU seconds of the sink's process (utime +
stime from /proc; the worker's only inside the window), peak RSS (VmHWM). Printed:
records/s and MiB/s (wall), and MiB/s and records/s per CPU-second. floe serve's CPU in
each window is shown too (it serves both).

Then floe sink alone: peak RSS draining WIDE_N events from a topic of WIDE_PARTITIONS
partitions, and event-to-queryable latency at each commit interval of LAT_COMMIT_MS: LAT_RATE
events/s for LAT_SECONDS into a fresh topic while the sink runs, each event's produce time
against the first time (the table polled every LAT_POLL_MS) a snapshot's floe.offsets map
covers its offset; p50/p99/max printed.

The events carry a base64 payload of random bytes (incompressible: the worst case for
the Parquet codec). floe sink also drains a second topic of REAL_N events of a realistic
shape (the source document's events: ids, ISO timestamps, enums, plus a user id, a URL
and a short text of common words instead of the random payload, ~250 B), printed as its
own table ("realistic events"). Env: REAL_N (N; 0 skips) N (300000)  PARTITIONS (6)  EVENT_BYTES (500)  COMMIT_MS (1000)  TASKS_MAX (2)
     ICEBERG_VERSION (1.10.1)  KAFKA_VERSION (3.9.2)  FLOE_BIN (build/floe)  SKIP_JVM=1
     SINK_PERF=1 (perf record of floe sink into OUT/perf.data; SINK_PERF_ARGS, default "-g")  WIDE_PARTITIONS (1000; 0 skips)
     WIDE_N (100000)  SINK_SET ("k=v;k=v" added to floe sink's configuration)  LAT_COMMIT_MS ("1000,200"; "" skips)  LAT_RATE (2000)  LAT_SECONDS (15)  LAT_POLL_MS (20)
Output: the table on stdout; bench/out/sink-<stamp>/ keeps results.json and the logs.
Everything listens on 127.0.0.1; the JVM side needs tests/compat/fetch.sh (run here)."""
import datetime
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests/integration"))
os.environ.setdefault("FLOE_BIN", str(REPO / "build/floe"))
os.environ.setdefault("FLOE_PORTS", "5000-14999")   # not the tests' range (tests/free_port.py)

from conftest import ACCESS_KEY, REGION, SECRET_KEY, FloeServer, free_port  # noqa: E402
from kafka_fixtures import KLIB, Broker  # noqa: E402
from rest_fixtures import load_rest_catalog, s3tables_client  # noqa: E402
from test_sink import connector  # noqa: E402

N = int(os.environ.get("N", "300000"))
PARTITIONS = int(os.environ.get("PARTITIONS", "6"))
EVENT_BYTES = int(os.environ.get("EVENT_BYTES", "500"))
COMMIT_MS = os.environ.get("COMMIT_MS", "1000")
TASKS_MAX = os.environ.get("TASKS_MAX", "2")
ICEBERG_VERSION = os.environ.get("ICEBERG_VERSION", "1.10.1")
KAFKA_VERSION = os.environ.get("KAFKA_VERSION", "3.9.2")
REAL_N = int(os.environ.get("REAL_N", str(N)))
WIDE_PARTITIONS = int(os.environ.get("WIDE_PARTITIONS", "1000"))
WIDE_N = int(os.environ.get("WIDE_N", "100000"))
LAT_RATE = int(os.environ.get("LAT_RATE", "2000"))
LAT_SECONDS = float(os.environ.get("LAT_SECONDS", "15"))
LAT_POLL_MS = int(os.environ.get("LAT_POLL_MS", "20"))
FLOE_BIN = os.environ["FLOE_BIN"]
# SINK_SET="k=v;k=v": extra keys for floe sink's connector configuration (e.g. consumer.* for librdkafka)
SINK_SET = dict(kv.split("=", 1) for kv in os.environ.get("SINK_SET", "").split(";") if "=" in kv)
CLK = os.sysconf("SC_CLK_TCK")
OUT = REPO / "bench/out" / ("sink-" + datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ"))


def log(*a):
    print("[sink-bench %5.1fs]" % (time.time() - T0), *a, file=sys.stderr, flush=True)


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / CLK


def minflt(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[7])


def rss_mib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def event(i, pad):
    return json.dumps({"event_id": str(uuid.UUID(int=i + 1)), "event_time": "2026-11-30T12:%02d:%02d.%03dZ" % (
        i // 60000 % 60, i // 1000 % 60, i % 1000), "event_type": ("click", "view", "buy")[i % 3], "user_id": i % 10007,
        "url": "https://shop.example.com/p/%d?ref=bench" % (i % 5000), "payload": pad})


WORDS = ("the order was shipped to customer after payment confirmed by bank card wallet refund requested "
         "item out of stock back soon added cart checkout page search results filter price low high new "
         "arrival sale discount code applied free delivery express standard returned damaged size color "
         "red blue black white small medium large review stars great quality fast slow support chat").split()


def real_event(i, rnd):
    """A realistic event: the source document's fields (id, ISO time, enum) and a few more."""
    return json.dumps({"event_id": str(uuid.UUID(int=i + 1)), "event_time": "2026-11-30T12:%02d:%02d.%03dZ" % (
        i // 60000 % 60, i // 1000 % 60, i % 1000), "event_type": ("click", "view", "buy", "signup")[rnd.randrange(4)],
        "user_id": rnd.randrange(100000), "url": "https://shop.example.com/p/%d?ref=%s" % (
            rnd.randrange(5000), ("mail", "ad", "search", "direct")[rnd.randrange(4)]),
        "payload": " ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(6, 20)))})


def produce_values(broker, topic, n, value):
    """n events value(i) (bytes) to topic, spread over PARTITIONS; their total size."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "compression.type": "lz4", "queue.buffering.max.kbytes": 1 << 19})
    total = 0
    for i in range(n):
        v = value(i)
        total += len(v)
        while True:
            try:
                p.produce(topic, value=v, key=str(i).encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
        if i % 5000 == 0:
            p.poll(0)
    assert p.flush(120) == 0
    return total


def produce_real(broker, topic, n):
    import random
    rnd = random.Random(12)
    return produce_values(broker, topic, n, lambda i: real_event(i, rnd).encode())


def produce(broker, topic):
    import base64
    import random
    rnd = random.Random(11)
    pad_len = max(0, EVENT_BYTES - len(event(0, ""))) * 3 // 4   # base64 of random bytes: incompressible text
    return produce_values(broker, topic, N,
                          lambda i: event(i, base64.b64encode(rnd.randbytes(pad_len)).decode()).encode())


def make_table(cat, ns, name):
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType
    cat.create_namespace_if_not_exists(ns)
    cat.create_table("%s.%s" % (ns, name), schema=Schema(
        NestedField(1, "event_id", StringType(), required=False), NestedField(2, "event_time", StringType(), required=False),
        NestedField(3, "event_type", StringType(), required=False), NestedField(4, "user_id", LongType(), required=False),
        NestedField(5, "url", StringType(), required=False), NestedField(6, "payload", StringType(), required=False)))


def total_records(cat, ident):
    try:
        s = cat.load_table(ident).current_snapshot()
    except Exception:  # noqa: BLE001
        return 0
    return int(s.summary.get("total-records", 0)) if s else 0


def wait_table(cat, ident, proc_alive, timeout, n_want=None):
    N_ = N if n_want is None else n_want
    end = time.time() + timeout
    n = 0
    while time.time() < end:
        n = total_records(cat, ident)
        if n >= N_:
            return time.time(), n
        if not proc_alive():
            raise SystemExit("the sink died (see %s)" % OUT)
        time.sleep(0.25)
    raise SystemExit("timeout: %s has %d of %d rows (see %s)" % (ident, n, N_, OUT))


def run_floe_sink(floe, arn, cat, ns, topic, serve_pid, table="floe", n_want=None):
    doc = connector(floe, arn, "bench-" + table, topics=topic, **{
        "iceberg.tables": ns + "." + table, "iceberg.control.commit.interval-ms": COMMIT_MS, "tasks.max": TASKS_MAX})
    doc["config"].update(SINK_SET)
    cfg = OUT / ("%s-sink.json" % table.replace("_", "-"))
    cfg.write_text(json.dumps(doc, indent=2))
    logf = open(OUT / ("%s-sink.log" % table.replace("_", "-")), "w")
    s0, t0 = cpu_s(serve_pid), time.time()
    p = subprocess.Popen([FLOE_BIN, "sink", "--config", str(cfg), "--bootstrap-servers", BROKER.bootstrap],
                         stdout=logf, stderr=subprocess.STDOUT)
    perf = None
    if os.environ.get("SINK_PERF"):   # profile floe sink: perf report -i OUT/perf.data
        perf = subprocess.Popen(["perf", "record"] + os.environ.get("SINK_PERF_ARGS", "-g").split() + ["-o", str(OUT / ("perf.data" if table == "floe" else
                                                                         "perf-%s.data" % table)), "-p", str(p.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t1, n = wait_table(cat, ns + "." + table, lambda: p.poll() is None, 600, n_want)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
        cpu, rss, serve, flt = cpu_s(p.pid), rss_mib(p.pid), cpu_s(serve_pid) - s0, minflt(p.pid)
    finally:
        p.terminate()
        p.wait(60)
        logf.close()
    return {"wall_s": t1 - t0, "cpu_s": cpu, "rss_mib": rss, "rows": n, "serve_cpu_s": serve, "minflt": flt}


def start_floe_sink(floe, arn, ns, table, topic, commit_ms, name):
    doc = connector(floe, arn, name, topics=topic, **{
        "iceberg.tables": ns + "." + table, "iceberg.control.commit.interval-ms": str(commit_ms), "tasks.max": TASKS_MAX})
    doc["config"].update(SINK_SET)
    cfg = OUT / (name + ".json")
    cfg.write_text(json.dumps(doc, indent=2))
    logf = open(OUT / (name + ".log"), "w")
    p = subprocess.Popen([FLOE_BIN, "sink", "--config", str(cfg), "--bootstrap-servers", BROKER.bootstrap],
                         stdout=logf, stderr=subprocess.STDOUT)
    return p, logf


def stop_proc(p, logf):
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    logf.close()


def run_wide(floe, arn, cat, ns):
    """Peak RSS of floe sink draining a topic of WIDE_PARTITIONS partitions (WIDE_N events spread over all)."""
    topic = "wide"
    BROKER.create_topic(topic, WIDE_PARTITIONS)
    make_table(cat, ns, "wide")
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": BROKER.bootstrap, "linger.ms": 20, "compression.type": "lz4"})
    pad = "x" * max(0, EVENT_BYTES - len(event(0, "")))
    for i in range(WIDE_N):
        while True:
            try:
                p.produce(topic, value=event(i, pad).encode(), partition=i % WIDE_PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0
    proc, logf = start_floe_sink(floe, arn, ns, "wide", topic, COMMIT_MS, "bench-wide")
    try:
        t0 = time.time()
        end = t0 + 600
        while total_records(cat, ns + ".wide") < WIDE_N:
            if proc.poll() is not None or time.time() > end:
                raise SystemExit("the wide run did not finish (see %s)" % OUT)
            time.sleep(0.25)
        return {"partitions": WIDE_PARTITIONS, "n": WIDE_N, "wall_s": time.time() - t0, "rss_mib": rss_mib(proc.pid),
                "cpu_s": cpu_s(proc.pid)}
    finally:
        stop_proc(proc, logf)


def run_latency(floe, arn, cat, ns, commit_ms):
    """Event-to-queryable latency at commit_ms: LAT_RATE events/s for LAT_SECONDS into a fresh
    topic while floe sink runs; each event's produce time against the time (polled every
    LAT_POLL_MS) the table first showed a snapshot whose floe.offsets map covers it."""
    topic, table = "lat%d" % commit_ms, "lat%d" % commit_ms
    BROKER.create_topic(topic, PARTITIONS)
    make_table(cat, ns, table)
    name = "bench-lat%d" % commit_ms
    proc, logf = start_floe_sink(floe, arn, ns, table, topic, commit_ms, name)
    from confluent_kafka import Producer
    sent = {}   # (partition, offset) -> produce time
    prod = Producer({"bootstrap.servers": BROKER.bootstrap, "linger.ms": 5, "compression.type": "lz4"})
    prod.list_topics(topic, timeout=30)   # connected, metadata known: the producer's start-up is not the sink's latency
    seen = []   # (time first visible, {partition: next offset})
    key = "floe.offsets." + "connect-" + name
    stop = [False]

    def poll_table():
        last = None
        while not stop[0]:
            try:
                snap = cat.load_table(ns + "." + table).current_snapshot()
            except Exception:  # noqa: BLE001
                snap = None
            if snap and snap.snapshot_id != last:
                last = snap.snapshot_id
                m = json.loads(snap.summary.get(key, "{}")).get(topic, {})
                seen.append((time.time(), {int(k): v for k, v in m.items()}))
            time.sleep(LAT_POLL_MS / 1000)

    import threading
    poller = threading.Thread(target=poll_table, daemon=True)
    try:
        time.sleep(3)   # the sink joins the group
        poller.start()
        pad = "x" * max(0, EVENT_BYTES - len(event(0, "")))
        c_start, t_start = cpu_s(proc.pid), time.time()
        i = 0
        while time.time() - t_start < LAT_SECONDS:
            due = t_start + i / LAT_RATE
            now = time.time()
            if due > now:
                time.sleep(due - now)
            t = time.time()
            prod.produce(topic, value=event(i, pad).encode(), partition=i % PARTITIONS,
                         on_delivery=(lambda t: lambda err, msg: sent.__setitem__((msg.partition(), msg.offset()), t)
                                      if not err else None)(t))
            prod.poll(0)
            i += 1
        prod.flush(60)
        cpu = (cpu_s(proc.pid) - c_start) / (time.time() - t_start)
        end = time.time() + 30
        while time.time() < end:
            if seen and all(seen[-1][1].get(p_, -1) > o for (p_, o) in sent):
                break
            time.sleep(0.1)
    finally:
        stop[0] = True
        stop_proc(proc, logf)
    lat = []
    for (part, off), t in sent.items():
        vis = next((ts for ts, m in seen if m.get(part, -1) > off), None)
        if vis is None:
            raise SystemExit("latency run: offset %d of partition %d never became visible (see %s)" % (off, part, OUT))
        lat.append(vis - t)
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    return {"commit_ms": commit_ms, "events": len(lat), "p50_s": pct(0.50), "p99_s": pct(0.99), "max_s": lat[-1],
            "snapshots": len(seen), "poll_ms": LAT_POLL_MS, "rate": LAT_RATE, "cpu_share": cpu}


def start_connect():
    """A Kafka Connect distributed worker with the Iceberg sink plugin (ICEBERG_VERSION) against
    BROKER; returns (process, REST base URL, log file) once its REST API answers."""
    r = subprocess.run(["bash", str(REPO / "tests/compat/fetch.sh")], env=dict(
        os.environ, ICEBERG_VERSIONS=ICEBERG_VERSION, KAFKA_VERSION=KAFKA_VERSION), capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("tests/compat/fetch.sh failed:\n" + r.stderr[-2000:])
    plugins = REPO / "tests/compat/.cache/plugins" / ("iceberg-" + ICEBERG_VERSION)
    rport = free_port()
    rest = "http://127.0.0.1:%d" % rport
    (OUT / "connect.properties").write_text("\n".join([
        "bootstrap.servers=" + BROKER.bootstrap, "group.id=bench-connect",
        "key.converter=org.apache.kafka.connect.json.JsonConverter",
        "value.converter=org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable=false", "value.converter.schemas.enable=false",
        "config.storage.topic=bench-connect-configs", "offset.storage.topic=bench-connect-offsets",
        "status.storage.topic=bench-connect-status", "config.storage.replication.factor=1",
        "offset.storage.replication.factor=1", "offset.storage.partitions=1", "status.storage.replication.factor=1",
        "status.storage.partitions=1", "offset.flush.interval.ms=5000", "listeners=" + rest,
        "rest.advertised.host.name=127.0.0.1", "rest.advertised.port=%d" % rport, "plugin.path=%s" % plugins,
        "plugin.discovery=hybrid_warn", ""]))
    (OUT / "log4j.properties").write_text(
        "log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\nlog4j.logger.org.apache.iceberg=INFO\n")
    BROKER.create_topic("control-iceberg", 1)
    logf = open(OUT / "connect.log", "w")
    p = subprocess.Popen(["java", "-Xms256m", "-Xmx1500m", "-Dlog4j.configuration=file:%s" % (OUT / "log4j.properties"),
                          "-Djava.awt.headless=true", "-cp", str(KLIB) + "/*",
                          "org.apache.kafka.connect.cli.ConnectDistributed", str(OUT / "connect.properties")],
                         stdout=logf, stderr=subprocess.STDOUT)
    end = time.time() + 180
    while True:
        try:
            urllib.request.urlopen(rest + "/connectors", timeout=2).read()
            return p, rest, logf
        except Exception:  # noqa: BLE001
            if p.poll() is not None or time.time() > end:
                stop_connect(p, logf)
                raise SystemExit("Kafka Connect did not start (see %s)" % (OUT / "connect.log"))
            time.sleep(0.5)


def stop_connect(p, logf):
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    logf.close()


def run_jvm_sink(floe, arn, cat, ns, topic, serve_pid):
    p, rest, logf = start_connect()
    try:
        log("Connect up (pid %d); starting the Iceberg sink %s" % (p.pid, ICEBERG_VERSION))
        doc = connector(floe, arn, "bench-jvm", topics=topic, **{
            "iceberg.tables": ns + ".jvm", "iceberg.control.commit.interval-ms": COMMIT_MS, "tasks.max": TASKS_MAX})
        req = urllib.request.Request(rest + "/connectors", data=json.dumps(doc).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        c0, s0, t0 = cpu_s(p.pid), cpu_s(serve_pid), time.time()
        urllib.request.urlopen(req, timeout=30).read()
        t1, n = wait_table(cat, ns + ".jvm", lambda: p.poll() is None, 1200)
        cpu, rss, serve = cpu_s(p.pid) - c0, rss_mib(p.pid), cpu_s(serve_pid) - s0
    finally:
        stop_connect(p, logf)
    return {"wall_s": t1 - t0, "cpu_s": cpu, "rss_mib": rss, "rows": n, "serve_cpu_s": serve}


def main():
    global BROKER, T0
    T0 = time.time()
    OUT.mkdir(parents=True, exist_ok=True)
    if not KLIB.is_dir():
        subprocess.run(["bash", str(REPO / "tests/compat/fetch.sh"), "kafka"], check=True,
                       env=dict(os.environ, KAFKA_VERSION=KAFKA_VERSION))
    floe = FloeServer(OUT / "floe-data")
    floe.start()
    BROKER = None
    try:
        (OUT / "kafka").mkdir()
        BROKER = Broker(OUT / "kafka").start()
        arn = s3tables_client(floe).create_table_bucket(name="sink-bench")["arn"]
        cat = load_rest_catalog(floe, arn, signing_name="osstables")
        ns, topic = "bench", "events"
        make_table(cat, ns, "floe")
        make_table(cat, ns, "jvm")
        BROKER.create_topic(topic, PARTITIONS)
        log("producing %d events (~%d B) into %d partitions" % (N, EVENT_BYTES, PARTITIONS))
        total = produce(BROKER, topic)
        log("topic holds %d events, %.1f MiB of JSON" % (N, total / 2**20))
        res = {"n": N, "bytes": total, "partitions": PARTITIONS, "commit_ms": COMMIT_MS, "tasks_max": TASKS_MAX,
               "iceberg_version": ICEBERG_VERSION, "nproc": os.cpu_count(), "load_at_start": open("/proc/loadavg").read().split()[:3]}
        log("floe sink draining the topic")
        res["floe"] = run_floe_sink(floe, arn, cat, ns, topic, floe.proc.pid)
        log("floe sink: %s" % res["floe"])
        if REAL_N:
            make_table(cat, ns, "floe_real")
            BROKER.create_topic("events_real", PARTITIONS)
            log("producing %d realistic events into %d partitions" % (REAL_N, PARTITIONS))
            res["real_bytes"] = produce_real(BROKER, "events_real", REAL_N)
            log("floe sink draining the realistic topic (%.1f MiB)" % (res["real_bytes"] / 2**20))
            res["floe_real"] = run_floe_sink(floe, arn, cat, ns, "events_real", floe.proc.pid, "floe_real", REAL_N)
            log("floe sink (realistic events): %s" % res["floe_real"])
        if WIDE_PARTITIONS:
            log("floe sink draining %d events from a topic of %d partitions" % (WIDE_N, WIDE_PARTITIONS))
            res["floe_wide"] = run_wide(floe, arn, cat, ns)
            log("wide: %s" % res["floe_wide"])
        for cm in [int(x) for x in os.environ.get("LAT_COMMIT_MS", "1000,200").split(",") if x]:
            log("latency at %d ms commits (%d events/s for %.0f s)" % (cm, LAT_RATE, LAT_SECONDS))
            res["floe_lat%d" % cm] = run_latency(floe, arn, cat, ns, cm)
            log("latency: %s" % res["floe_lat%d" % cm])
        if os.environ.get("SKIP_JVM") != "1":
            log("Kafka Connect + Iceberg sink draining the same topic")
            res["jvm"] = run_jvm_sink(floe, arn, cat, ns, topic, floe.proc.pid)
            log("JVM sink: %s" % res["jvm"])
    finally:
        if BROKER and BROKER.proc:
            BROKER.stop()
        floe.stop()
    (OUT / "results.json").write_text(json.dumps(res, indent=2))
    import shutil
    shutil.rmtree(OUT / "floe-data", ignore_errors=True)
    shutil.rmtree(OUT / "kafka" / "logs", ignore_errors=True)
    mib = total / 2**20
    rows = [("records/s (wall)", lambda r: N / r["wall_s"], "%.0f"),
            ("MiB/s of JSON (wall)", lambda r: mib / r["wall_s"], "%.1f"),
            ("CPU seconds (sink process)", lambda r: r["cpu_s"], "%.1f"),
            ("MiB/s per CPU-second", lambda r: mib / r["cpu_s"], "%.1f"),
            ("records/s per CPU-second", lambda r: N / r["cpu_s"], "%.0f"),
            ("peak RSS MiB (VmHWM)", lambda r: r["rss_mib"], "%.0f"),
            ("minor page faults per MiB", lambda r: r["minflt"] / mib if "minflt" in r else None, "%.0f"),
            ("floe serve CPU s in window", lambda r: r["serve_cpu_s"], "%.1f")]
    print("floe sink vs Kafka Connect Iceberg sink %s: %d random-payload events (base64 of random bytes), %.1f MiB JSON, %d partitions, commits every %s ms, "
          "tasks.max %s, %d cores, load at start %s" % (ICEBERG_VERSION, N, mib, PARTITIONS, COMMIT_MS, TASKS_MAX,
                                                       os.cpu_count(), " ".join(res["load_at_start"])))
    print("%-30s %12s %12s %8s" % ("figure", "floe sink", "JVM sink", "ratio"))
    for name, f, fmt in rows:
        a = f(res["floe"])
        b = f(res["jvm"]) if "jvm" in res else None   # None also where the JVM sink has no such figure
        ratio = "%.2f" % (a / b) if b else "-"
        print("%-30s %12s %12s %8s" % (name, fmt % a, fmt % b if b is not None else "-", ratio))
    if "floe_real" in res:
        r, mr = res["floe_real"], res["real_bytes"] / 2**20
        print("floe sink, realistic events (ids, ISO timestamps, enums, short text; %d events, %.1f MiB JSON, "
              "%.0f B each, commits every %s ms)" % (REAL_N, mr, res["real_bytes"] / REAL_N, COMMIT_MS))
        for name, v, fmt in [("records/s (wall)", REAL_N / r["wall_s"], "%.0f"), ("MiB/s of JSON (wall)", mr / r["wall_s"], "%.1f"),
                             ("CPU seconds (sink process)", r["cpu_s"], "%.2f"), ("MiB/s per CPU-second", mr / r["cpu_s"], "%.1f"),
                             ("records/s per CPU-second", REAL_N / r["cpu_s"], "%.0f"), ("peak RSS MiB (VmHWM)", r["rss_mib"], "%.0f"),
                             ("minor page faults per MiB", r.get("minflt", 0) / mr, "%.0f")]:
            print("%-30s %12s" % (name, fmt % v))
    if "floe_wide" in res:
        w = res["floe_wide"]
        print("floe sink, %d partitions (%d events): peak RSS %.0f MiB, %.1f CPU s, %.1f s" % (
            w["partitions"], w["n"], w["rss_mib"], w["cpu_s"], w["wall_s"]))
    for k in sorted(k for k in res if k.startswith("floe_lat")):
        r = res[k]
        print("floe sink event-to-queryable latency at %d ms commits: p50 %.0f ms, p99 %.0f ms, max %.0f ms "
              "(%d events at %d/s, %d snapshots, table polled every %d ms; sink CPU meanwhile %.1f%% of a core)" % (
                  r["commit_ms"], r["p50_s"] * 1000, r["p99_s"] * 1000, r["max_s"] * 1000, r["events"], LAT_RATE,
                  r["snapshots"], r["poll_ms"], 100 * r["cpu_share"]))
    print("(results and logs: %s)" % OUT)


if __name__ == "__main__":
    main()
