"""floe serve as a 3-node cluster for tests/compat/run.sh (SCENARIO=cluster):
three nodes on a throw-away PostgreSQL (Debian's server, initdb in /tmp) and a
shared S3 store (another floe serve's data plane), behind HAProxy listening on
the S3 and catalog ports run.sh chose, as tests/integration/conftest.py's
FLOE_TEST_CLUSTER mode builds it. Each request goes to the next node in turn,
so the connector's commits, loads and file uploads land on all three.

    cluster.py RUN_DIR S3_PORT CATALOG_PORT

Prints "ready" once every node and HAProxy answer /health, then serves until
SIGTERM/SIGINT; on the way out it stops the nodes, HAProxy, the store and
PostgreSQL, and appends the nodes' logs to RUN_DIR/floe.log. The root key pair
is run.sh's (FLOE_ROOT_ACCESS_KEY_ID / FLOE_ROOT_SECRET_ACCESS_KEY)."""
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ["FLOE_TEST_CLUSTER"] = os.environ.get("CLUSTER_NODES", "3")
os.environ.setdefault("FLOE_BIN", os.path.join(HERE, "..", "..", "build", "floe"))

import conftest  # noqa: E402 - after the environment that selects the cluster mode


def main():
    run, s3_port, cat_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    # the keys run.sh gives its clients (conftest's spawn reads these at call time)
    conftest.ACCESS_KEY = os.environ["FLOE_ROOT_ACCESS_KEY_ID"]
    conftest.SECRET_KEY = os.environ["FLOE_ROOT_SECRET_ACCESS_KEY"]
    cluster = conftest.FloeCluster(os.path.join(run, "floe-data"), name="floe", s3_port=s3_port,
                                   catalog_port=cat_port, extra_args=["--maintenance-interval", "30"])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    try:
        cluster.start(timeout=60)
        print("ready", flush=True)
        while not stop:
            signal.pause()
    finally:
        cluster.stop()
        with open(os.path.join(run, "floe.log"), "a") as out:
            out.write(cluster.log_text())


if __name__ == "__main__":
    main()
