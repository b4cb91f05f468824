"""Crash safety of table maintenance: SIGKILL at random points of compaction and snapshot expiry.

One partitioned table (3 partitions) on one data dir gets many small files (PyIceberg appends)
and an overwrite that leaves files only old snapshots reach. Then FLOE_KILL_ROUNDS rounds (20 by
default; FLOE_KILL_SEED replays one draw), each one of:
  serve          `floe serve --maintenance-interval 1` compacts by itself; SIGKILL the server a
                 random time after floe_maintenance_jobs_running (/metrics) turns 1, drawn over
                 the job's measured duration (the server's own "in N ms" log lines)
  serve-expire   `floe maintenance run --job snapshots --as-of +10d` runs from the client side;
                 SIGKILL the server under it and restart it (the client goes on or fails)
  cli-compact    SIGKILL the client-side `floe maintenance run --job compaction` mid-run
  cli-expire     SIGKILL the client-side `floe maintenance run --job snapshots` mid-run
and after each kill (a restart on the same data dir for the server kinds): PyIceberg loads the
table and reads exactly the same multiset of rows; the metadata pointer names a readable
metadata file; every file every snapshot reaches exists (manifests walked with PyIceberg).
A kill "inside" a server job is one that left the job's lease in the catalog store; the
restarted server must free it at once (same node id, data dir's node-id) rather than leave the
table unmaintained until the 5-minute lease runs out.
At the end maintenance is let finish, expiry and unreferenced-file removal (mark, then delete)
run with --as-of far ahead, and the warehouse holds exactly the referenced set: what the killed
jobs left behind is gone."""
import collections
import datetime as dt
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
import urllib.request

import pytest

import pgserver
from conftest import ACCESS_KEY, FLOE_BIN, REGION, SECRET_KEY, FloeServer, free_port, make_client
from rest_fixtures import catalog_url, load_rest_catalog, s3tables_client, unique
from test_maint_expire import ARROW, SCHEMA, SPEC, exists, listed, reachable

pa = pytest.importorskip("pyarrow")
from pyiceberg.exceptions import CommitFailedException  # noqa: E402

ROUNDS = int(os.environ.get("FLOE_KILL_ROUNDS", "20"))
SEED = int(os.environ.get("FLOE_KILL_SEED", str(int(time.time() * 1000) % 1000000)))
CATS = ["c0", "c1", "c2"]
PER = int(os.environ.get("FLOE_KILL_ROWS", "1000"))   # rows per partition per append: jobs long enough to aim at


def when(days):
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cli_cmd(srv, arn, *args):
    return [FLOE_BIN, *args, "--catalog-uri", catalog_url(srv) + "/iceberg", "--warehouse", arn,
            "--region", REGION]


def cli_env():
    return dict(os.environ, FLOE_ACCESS_KEY_ID=ACCESS_KEY, FLOE_SECRET_ACCESS_KEY=SECRET_KEY)


def jobs_running(srv):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % srv.catalog_port, timeout=5) as r:
            for ln in r.read().decode().splitlines():
                if ln.startswith("floe_maintenance_jobs_running "):
                    return int(float(ln.split()[-1]))
    except OSError:
        pass
    return 0


DONE_RE = re.compile(r"maintenance: \S+: icebergCompaction (\w+) in (\d+) ms")


def compactions_done(srv):
    return [(m.group(1), int(m.group(2))) for m in DONE_RE.finditer(srv.log_text())]


class Table:
    """The table under test and what it must hold: ids are unique, cat is CATS[id % 3]."""

    def __init__(self, srv, arn, ident):
        self.srv, self.arn, self.ident = srv, arn, ident
        self.expected = []          # ids, in append order
        self.next_id = 0

    def load(self):
        return load_rest_catalog(self.srv, self.arn).load_table(self.ident)

    def batch(self):
        ids = list(range(self.next_id, self.next_id + 3 * PER))
        self.next_id += 3 * PER
        return ids, pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([CATS[i % 3] for i in ids])},
                             schema=ARROW)

    def append(self, n_batches):
        for _ in range(n_batches):
            ids, data = self.batch()
            for attempt in range(20):
                try:
                    self.load().append(data)
                    break
                except CommitFailedException:   # a compaction committed first: a new attempt
                    time.sleep(0.05 * (attempt + 1))
            else:
                pytest.fail("append kept failing")
            self.expected += ids

    def live_files(self):
        n = collections.Counter()
        for task in self.load().scan().plan_files():
            n[task.file.partition[0]] += 1
        return n

    def check(self, s3, what):
        """The invariants after a kill: same rows, a readable pointer, every reachable file."""
        t = self.load()
        assert exists(s3, t.metadata_location), (what, t.metadata_location)
        got = t.scan().to_arrow()
        ids = got.column("id").to_pylist()
        assert len(ids) == len(self.expected) and sorted(ids) == sorted(self.expected), (
            what, len(ids), len(self.expected), sorted(set(ids) ^ set(self.expected))[:10])
        cats = got.column("cat").to_pylist()
        assert all(c == CATS[i % 3] for i, c in zip(ids, cats)), what
        files = reachable(t, [s.snapshot_id for s in t.metadata.snapshots])
        missing = sorted(f for f in files if not exists(s3, f))
        assert not missing, (what, missing[:10])
        return t


def leases(srv):
    """The maintenance leases in the server's catalog store: (arn, type, owner, claimed, until)."""
    if pgserver.wanted():
        out = pgserver.psql("SELECT table_arn, type, owner, claimed_ms, lease_until_ms FROM maintenance_jobs"
                            " WHERE owner != ''", pgserver.database_for(srv.data_dir))
        return [(a, t, o, int(c), int(u)) for a, t, o, c, u in (ln.split("|") for ln in out.splitlines() if ln)]
    db = sqlite3.connect(os.path.join(srv.data_dir, "catalog.db"), timeout=10)
    try:
        return db.execute("SELECT table_arn, type, owner, claimed_ms, lease_until_ms FROM maintenance_jobs"
                          " WHERE owner != ''").fetchall()
    finally:
        db.close()


def kill_server(srv):
    """SIGKILL; returns the leases its jobs held at that moment (a job was running)."""
    srv.kill()
    return leases(srv)


def restart_and_check_leases(srv, held):
    """Restarts srv; a lease the killed process held must not outlive it: the restarted node frees
    it (or has claimed it anew) at once, instead of the table waiting out the lease."""
    t0 = int(time.time() * 1000)
    srv.start()
    end = time.time() + 5          # /health answers before the scheduler starts
    while held:
        stuck = [r for r in leases(srv) if r[3] < t0]
        if not stuck:
            break
        assert time.time() < end, ("the killed process's leases still block maintenance", stuck)
        time.sleep(0.05)


def wait_exit(p, timeout=60):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        pytest.fail("%s did not exit after its server was killed" % p.args[:4])


@pytest.mark.slow
def test_sigkill_during_compaction_and_expiry(tmp_path):
    rng = random.Random(SEED)
    print("FLOE_KILL_SEED=%d FLOE_KILL_ROUNDS=%d" % (SEED, ROUNDS))
    srv = FloeServer(tmp_path / "data", name="killed", extra_args=["--maintenance-interval", "0"],
                     s3_port=free_port(), catalog_port=free_port())
    srv.start()
    try:
        s3t = s3tables_client(srv)
        arn = s3t.create_table_bucket(name="kill-%s" % unique("b").replace("_", "-"))["arn"]
        cat = load_rest_catalog(srv, arn)
        ns = unique("k")
        cat.create_namespace(ns)
        cat.create_table("%s.ev" % ns, schema=SCHEMA, partition_spec=SPEC,
                         properties={"write.metadata.previous-versions-max": "5"})
        tbl = Table(srv, arn, "%s.ev" % ns)
        tbl.append(6)
        # an overwrite: files only the older snapshots reach, for expiry to delete
        ids, data = tbl.batch()
        tbl.load().overwrite(data)
        tbl.expected = ids
        tbl.append(6)
        s3 = make_client(srv.endpoint)
        tbl.check(s3, "setup")
        srv.stop()
        srv.extra_args = ["--maintenance-interval", "1"]
        srv.start()

        est = {"compaction": 1.0, "snapshots": 1.0}   # job durations (s), measured as we go
        kinds = collections.Counter()
        inside = collections.Counter()
        t_start = time.time()
        plan = ["serve", "serve-expire", "cli-compact", "cli-expire"]
        for rnd in range(ROUNDS):
            kind = "serve" if rnd % 2 == 0 else plan[1 + (rnd // 2) % 3]
            kind = kind if rnd < ROUNDS - 1 else "serve"
            s3 = make_client(srv.endpoint)
            if min(tbl.live_files()[c] for c in CATS) < 6:
                tbl.append(6)
            delay, held = 0.0, []
            if kind == "serve":
                end = time.time() + 20
                idle = time.time()
                while not jobs_running(srv):
                    assert time.time() < end, "the restarted server did not start compacting within 20 s"
                    if time.time() - idle > 2.5:   # it compacted what there was before we looked
                        tbl.append(3)
                        idle = time.time()
                    time.sleep(0.01)
                delay = rng.uniform(0, 0.8 * est["compaction"])
                time.sleep(delay)
                held = kill_server(srv)
                landed = bool(held)
            elif kind == "serve-expire":
                p = subprocess.Popen(cli_cmd(srv, arn, "maintenance", "run", tbl.ident, "--job", "snapshots",
                                             "--as-of", when(10)), env=cli_env(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                delay = rng.uniform(0, 0.8 * est["snapshots"])
                time.sleep(delay)
                landed = p.poll() is None
                if not landed:                          # it was quicker: aim shorter
                    est["snapshots"] = max(0.05, 0.7 * est["snapshots"])
                held = kill_server(srv)
                restart_and_check_leases(srv, held)   # the client retries against the restarted server
                wait_exit(p)
            else:
                job = "compaction" if kind == "cli-compact" else "snapshots"
                args = ["--as-of", when(10)] if job == "snapshots" else []
                t0 = time.time()
                p = subprocess.Popen(cli_cmd(srv, arn, "maintenance", "run", tbl.ident, "--job", job, *args),
                                     env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                delay = rng.uniform(0, 0.8 * est[job])
                try:
                    p.wait(delay)
                    landed = False
                    est[job] = max(0.1, time.time() - t0)   # it finished first: aim at its duration
                except subprocess.TimeoutExpired:
                    landed = True
                    p.send_signal(signal.SIGKILL)
                    p.wait()
            kinds[kind] += 1
            inside[kind] += landed
            done = compactions_done(srv)
            ok = [ms for st, ms in done if st == "Successful"]
            if ok:
                est["compaction"] = max(0.01, max(ok[-3:]) / 1000.0)
            if not srv.alive():
                restart_and_check_leases(srv, held)
                s3 = make_client(srv.endpoint)
            what = "round %d (%s, killed after %.3f s, %s)" % (rnd, kind, delay, "inside" if landed else "after")
            print(what, "%.1f s" % (time.time() - t_start))
            tbl.check(s3, what)
        print("rounds %s, killed inside a running job %s, %.1f s" % (dict(kinds), dict(inside), time.time() - t_start))
        if kinds["serve"] >= 8:          # the aim works: a good share of the kills hit a running job
            assert inside["serve"] >= kinds["serve"] // 4, (kinds, inside)

        # let maintenance finish: one more compaction by the server runs to its end
        n_ok = sum(1 for st, _ in compactions_done(srv) if st == "Successful")
        if min(tbl.live_files()[c] for c in CATS) < 6:
            tbl.append(6)
        end = time.time() + 60
        while sum(1 for st, _ in compactions_done(srv) if st == "Successful") == n_ok or jobs_running(srv):
            assert time.time() < end, ("compaction did not finish", tbl.live_files(), srv.tail())
            time.sleep(0.25)
        t = tbl.check(s3, "after compaction")
        loc = t.metadata.location.rstrip("/")
        left = set(listed(s3, loc + "/")) - reachable(t, [s.snapshot_id for s in t.metadata.snapshots])
        left -= {e.metadata_file for e in t.metadata.metadata_log} | {t.metadata_location}
        print("objects no snapshot references before the sweep: %d" % len(left))
        assert left, "the killed jobs left nothing for the sweep: the last check proves nothing"

        def run(job, *extra):
            p = subprocess.run(cli_cmd(srv, arn, "maintenance", "run", tbl.ident, "--job", job, *extra),
                               env=cli_env(), capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, (job, extra, p.stdout, p.stderr)
        run("snapshots", "--as-of", when(10))
        run("unreferenced", "--as-of", when(100))    # marks noncurrent
        run("unreferenced", "--as-of", when(200))    # deletes them
        t = tbl.check(s3, "after the sweep")
        want = reachable(t, [s.snapshot_id for s in t.metadata.snapshots])
        want |= {e.metadata_file for e in t.metadata.metadata_log} | {t.metadata_location}
        on_disk = set(listed(s3, loc + "/"))
        assert on_disk == want, (sorted(on_disk - want)[:20], sorted(want - on_disk)[:20])
        assert srv.stop() == 0, srv.tail()
    finally:
        srv.kill()
