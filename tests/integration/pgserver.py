"""A throw-away PostgreSQL for integration tests (scripts/pg-test-server.sh):
Debian's server binaries, initdb in a temp dir, 127.0.0.1 on a free port.
Started on first use, stopped when the test process exits.

wanted()            FLOE_TEST_CATALOG=postgres: every floe serve runs on PostgreSQL
server()            the server's base URL (skips the test where the binaries are absent)
database_for(key)   a URL naming a database of its own for key (created once)
fresh_database()    a URL naming a new empty database
restart()           immediate stop and start on the same port (connections cut)
halt(), resume()    immediate stop; start again on the same port
"""
import atexit
import hashlib
import os
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pg-test-server.sh"
_STATE = {}


def wanted():
    return os.environ.get("FLOE_TEST_CATALOG", "").lower() in ("postgres", "postgresql", "pg")


def server():
    if "url" in _STATE:
        return _STATE["url"]
    if "skip" in _STATE:
        pytest.skip(_STATE["skip"])
    d = tempfile.mkdtemp(prefix="floe-pg-", dir="/tmp")
    p = subprocess.run(["bash", str(SCRIPT), "start", d], capture_output=True, text=True, timeout=120)
    if p.returncode == 3:
        os.rmdir(d)
        _STATE["skip"] = "no PostgreSQL server binaries (apt-get install postgresql): " + p.stderr.strip()
        pytest.skip(_STATE["skip"])
    if p.returncode != 0:
        raise RuntimeError("test PostgreSQL did not start: %s %s" % (p.stdout, p.stderr))
    _STATE["url"] = p.stdout.strip().splitlines()[-1]
    _STATE["dir"] = d
    atexit.register(lambda: subprocess.run(["bash", str(SCRIPT), "stop", d], capture_output=True))
    return _STATE["url"]


def psql(sql, url=None):
    p = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", url or server(), "-c", sql],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("psql %r: %s" % (sql, p.stderr))
    return p.stdout.strip()


def _url_for(name):
    base = server()
    return base.rsplit("/", 1)[0] + "/" + name


def database_for(key):
    name = "floe_" + hashlib.sha1(os.path.abspath(str(key)).encode()).hexdigest()[:16]
    made = _STATE.setdefault("dbs", set())
    if name not in made:
        if psql("SELECT 1 FROM pg_database WHERE datname = '%s'" % name) != "1":
            psql("CREATE DATABASE %s" % name)
        made.add(name)
    return _url_for(name)


def fresh_database():
    name = "floe_" + uuid.uuid4().hex[:16]
    psql("CREATE DATABASE %s" % name)
    return _url_for(name)


def restart():
    server()
    subprocess.run(["bash", str(SCRIPT), "restart", _STATE["dir"]], check=True, capture_output=True, timeout=120)


def restart_under(writer, n, join_s=60):
    """Runs writer(w) for w in 0..n-1 on threads, restarts the server after 1 s
    of their load, and returns 2 s after it came back, once they stopped: the
    writers loop until the threading.Event they get as stop is set."""
    import threading
    import time
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(w, stop)) for w in range(n)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    restart()
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join(join_s)


def halt():
    server()
    subprocess.run(["bash", str(SCRIPT), "halt", _STATE["dir"]], check=True, capture_output=True, timeout=120)


def resume():
    subprocess.run(["bash", str(SCRIPT), "resume", _STATE["dir"]], check=True, capture_output=True, timeout=120)
