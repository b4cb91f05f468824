"""The JSON events the compat run produces, and the rows they must become.

  events.py produce BOOTSTRAP TOPIC N [START [RATE]]  -> produce events START..N-1 (partition = i % 3),
                                                        at most RATE events/s when RATE > 0"""
import json
import os
import sys
import time

TYPES = ("click", "view", "purchase", "signup")


# COMPAT_EVOLVE_FROM=K: events K.. carry a field the table does not have yet ("amount", a long);
# with iceberg.tables.evolve-schema-enabled the sink must add the column.
EVOLVE_FROM = int(os.environ.get("COMPAT_EVOLVE_FROM", "-1"))


def event(i):
    e = {"event_id": "e%08d" % i,
         "event_time": "2026-01-%02dT%02d:%02d:%02dZ" % (1 + i % 28, i % 24, i % 60, (i * 7) % 60),
         "event_type": TYPES[i % len(TYPES)]}
    if 0 <= EVOLVE_FROM <= i:
        e["amount"] = i * 10
    return e


def expected_rows(n):
    return {e["event_id"]: e for e in (event(i) for i in range(n))}


def produce(bootstrap, topic, n, start=0, rate=0, partitions=3):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    failed = []
    t0 = time.time()

    def cb(err, _msg):
        if err is not None:
            failed.append(err)
    for i in range(start, n):
        e = event(i)
        while True:
            try:
                p.produce(topic, key=json.dumps(e["event_id"]).encode(), value=json.dumps(e).encode(),
                          partition=i % partitions, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.1)
        if i % 1000 == 0:
            p.poll(0)
            if rate > 0:
                ahead = (i - start) / rate - (time.time() - t0)
                if ahead > 0:
                    time.sleep(ahead)
            if (i - start) % max(1000, (n - start) // 10 // 1000 * 1000) == 0 and i > start:
                print("produce: %d events sent" % (i - start), flush=True)
    left = p.flush(60)
    if left or failed:
        raise SystemExit("produce: %d undelivered, %d failed (%s)" % (left, len(failed), failed[:1]))
    print("produce: %d events %d..%d to %s" % (n - start, start, n - 1, topic))


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 0,
                float(sys.argv[6]) if len(sys.argv) > 6 else 0)
