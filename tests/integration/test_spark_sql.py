"""Spark SQL (pyspark + Iceberg's Spark runtime and AWS bundle from Maven Central) as a client of
floe's Iceberg REST catalog, signed with SigV4, reading and writing through floe's S3 data plane
(S3FileIO, path-style):
  - CREATE TABLE partitioned by days(ts), INSERT, SELECT with equal values; PyIceberg and
    `floe scan` read what Spark wrote with the same values;
  - DELETE / UPDATE / MERGE INTO in copy-on-write mode (read back by Spark, PyIceberg and
    `floe scan`) and in merge-on-read mode (position deletes: Spark and PyIceberg);
  - ALTER TABLE ADD COLUMN / RENAME COLUMN / ALTER COLUMN int -> bigint, old rows read through
    the new schema by all three readers;
  - time travel: VERSION AS OF a snapshot id, TIMESTAMP AS OF a snapshot's commit time;
  - metadata tables .snapshots, .files, .history, .manifests against PyIceberg's view;
  - a table appended by `floe append` read by Spark with equal values, Spark appending on top;
  - DROP TABLE PURGE.
  - the same through a second catalog signing with the name osstables.
One SparkSession for the module (local[2], 2 shuffle partitions): starting one costs 10-20 s.
The jars come from tests/compat/fetch.sh (`spark` target), fetched once into tests/compat/.cache."""
import datetime as dt
import decimal
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, REGION, SECRET_KEY, make_client
from rest_fixtures import _set_aws_env, catalog_url, load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401
from test_append_scan import SCHEMA, SPEC, append, floe_cli, make_rows, norm_row

ROOT = Path(__file__).resolve().parents[2]
ICEBERG_VERSION = os.environ.get("SPARK_ICEBERG_VERSION", "1.10.1")
JARS = ROOT / "tests/compat/.cache" / ("spark-iceberg-" + ICEBERG_VERSION)
CAT = "floe"
CAT_OSS = "floe_oss"

# Metadata tables resolve `ns.t.snapshots` as table `snapshots` in namespace `ns.t` first and fall
# back to a metadata table only on 404 NoSuchTableException (issue 9 item 10: floe answered 400).
pytestmark = pytest.mark.timeout(600)  # the first test's set-up may fetch the jars and starts Spark

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
BASE = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
CATS = ["a", "b", "c"]


def micros(t):
    if t is None:
        return None
    if isinstance(t, str):
        t = dt.datetime.fromisoformat(t)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return (t - EPOCH) // dt.timedelta(microseconds=1)


def dec(v):
    return None if v is None else decimal.Decimal(str(v)).quantize(decimal.Decimal("0.01"))


def gen_rows(first, n):
    """(id, ts, category, amount, score): rows spread over 3 days and 3 categories, some nulls."""
    out = []
    for i in range(first, first + n):
        ts = None if i % 13 == 0 else BASE + dt.timedelta(hours=(i * 5) % 72, microseconds=i)
        out.append((i, ts, CATS[i % 3], None if i % 7 == 0 else dec("%d.%02d" % (i % 50, i % 100)),
                    None if i % 11 == 0 else i * 3))
    return out


def model_key(rows):
    """Rows as comparable tuples: ts in microseconds since the epoch."""
    return sorted((r[0], micros(r[1]), *r[2:]) for r in rows)


@pytest.fixture(scope="module")
def spark(floe, table_bucket, tmp_path_factory):  # noqa: F811
    if not shutil.which("java"):
        pytest.fail("java is not installed (scripts/install-deps.sh installs it)")
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.fail("pyspark is not installed (tests/requirements.txt; scripts/install-deps.sh)")
    if not JARS.is_dir():
        r = subprocess.run(["bash", str(ROOT / "tests/compat/fetch.sh"), "spark"], capture_output=True, text=True,
                           env=dict(os.environ, SPARK_ICEBERG_VERSION=ICEBERG_VERSION), timeout=1200)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    jars = sorted(str(p) for p in JARS.glob("*.jar"))
    assert len(jars) == 2, jars
    _set_aws_env()  # the JVM inherits them: the AWS SDK's default chain, as a deployment would
    tmp = tmp_path_factory.mktemp("spark")
    conf = {
        "spark.jars": ",".join(jars),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": "-Daws.region=%s -Duser.timezone=UTC" % REGION,
        "spark.local.dir": str(tmp / "local"),
        "spark.sql.warehouse.dir": str(tmp / "warehouse"),
    }
    # Two catalogs over the same table bucket: SigV4 signing names s3tables and osstables.
    for name, signing_name in ((CAT, "s3tables"), (CAT_OSS, "osstables")):
        c = "spark.sql.catalog." + name
        conf.update({
            c: "org.apache.iceberg.spark.SparkCatalog",
            c + ".type": "rest",
            c + ".uri": catalog_url(floe) + "/iceberg",
            c + ".warehouse": table_bucket,
            c + ".rest.sigv4-enabled": "true",
            c + ".rest.signing-name": signing_name,
            c + ".rest.signing-region": REGION,
            c + ".rest.access-key-id": ACCESS_KEY,
            c + ".rest.secret-access-key": SECRET_KEY,
            c + ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            c + ".s3.endpoint": floe.endpoint,
            c + ".s3.path-style-access": "true",
            c + ".s3.access-key-id": ACCESS_KEY,
            c + ".s3.secret-access-key": SECRET_KEY,
            c + ".client.region": REGION,
            # every read goes to the catalog: the tests also commit through PyIceberg and `floe append`
            c + ".cache-enabled": "false",
        })
    b = SparkSession.builder.master("local[2]").appName("floe-spark-sql")
    for k, v in conf.items():
        b = b.config(k, v)
    session = b.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def ns(spark):
    name = unique("spark")
    spark.sql("CREATE NAMESPACE %s.%s" % (CAT, name))
    return name


@pytest.fixture(scope="module")
def pycat(floe, table_bucket):  # noqa: F811
    return load_rest_catalog(floe, table_bucket)


def sql(spark, text):
    return spark.sql(text).collect()


def create_events(spark, ns, name, mode="copy-on-write", version=2):
    ident = "%s.%s.%s" % (CAT, ns, name)
    sql(spark, """CREATE TABLE %s (id BIGINT NOT NULL, ts TIMESTAMP, category STRING, amount DECIMAL(10,2),
                                  score INT)
                  USING iceberg PARTITIONED BY (days(ts), category)
                  TBLPROPERTIES ('format-version'='%d', 'write.delete.mode'='%s', 'write.update.mode'='%s',
                                 'write.merge.mode'='%s')""" % (ident, version, mode, mode, mode))
    return ident


def insert(spark, ident, rows):
    from pyspark.sql.types import (DecimalType, IntegerType, LongType, StringType, StructField, StructType,
                                   TimestampType)
    schema = StructType([StructField("id", LongType(), False), StructField("ts", TimestampType()),
                         StructField("category", StringType()), StructField("amount", DecimalType(10, 2)),
                         StructField("score", IntegerType())])
    spark.createDataFrame(rows, schema).coalesce(1).writeTo(ident).append()


def spark_read(spark, ident, tail="", cols="id, unix_micros(ts), category, amount, score"):
    return sorted(tuple(r) for r in sql(spark, "SELECT %s FROM %s %s" % (cols, ident, tail)))


def py_read(pycat, ident, cols=("id", "ts", "category", "amount", "score"), snapshot_id=None):
    t = pycat.load_table(ident.split(".", 1)[1])
    scan = t.scan(snapshot_id=snapshot_id) if snapshot_id else t.scan()
    rows = scan.to_arrow().select(list(cols)).to_pylist()
    return sorted(tuple(micros(v) if c == "ts" else v for c, v in zip(cols, r.values())) for r in rows)


def floe_read(floe, table_bucket, ident, cols=("id", "ts", "category", "amount", "score")):  # noqa: F811
    p = floe_cli(floe, table_bucket, "scan", ident.split(".", 1)[1])
    out = []
    for line in p.stdout.splitlines():
        r = json.loads(line)
        out.append(tuple(micros(r.get(c)) if c == "ts" else dec(r.get(c)) if c == "amount" else r.get(c)
                         for c in cols))
    return sorted(out), p.stderr


# ---------------------------------------------------------------- create / insert / select

def test_create_insert_select_and_time_travel(spark, ns, pycat, floe, table_bucket):  # noqa: F811
    ident = create_events(spark, ns, "events")
    t = pycat.load_table("%s.events" % ns)
    assert [f.name for f in t.schema().fields] == ["id", "ts", "category", "amount", "score"]
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [("ts_day", "day"), ("category", "identity")]
    assert t.metadata.format_version == 2

    first, second = gen_rows(0, 60), gen_rows(60, 40)
    insert(spark, ident, first)
    insert(spark, ident, second)
    want = model_key(first + second)
    assert spark_read(spark, ident) == want
    assert py_read(pycat, ident) == want
    got, _ = floe_read(floe, table_bucket, ident)
    assert got == want

    # Spark's files are partitioned by day and category, as PyIceberg sees them.
    t = pycat.load_table("%s.events" % ns)
    files = list(t.scan().plan_files())
    assert len(files) >= 9 and sum(f.file.record_count for f in files) == 100
    snaps = t.metadata.snapshots
    assert len(snaps) == 2 and snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert snaps[1].summary.operation.value == "append" and snaps[1].summary["total-records"] == "100"

    # Time travel: by snapshot id and by the first commit's timestamp.
    s1 = snaps[0]
    assert spark_read(spark, ident, "VERSION AS OF %d" % s1.snapshot_id) == model_key(first)
    when = dt.datetime.fromtimestamp(s1.timestamp_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    assert spark_read(spark, ident, "TIMESTAMP AS OF '%s'" % when) == model_key(first)
    assert spark_read(spark, ident, "VERSION AS OF %d" % snaps[1].snapshot_id) == want
    assert py_read(pycat, ident, snapshot_id=s1.snapshot_id) == model_key(first)


# ---------------------------------------------------------------- row-level changes

def apply_changes(spark, ident, rows):
    """DELETE, UPDATE and MERGE INTO through Spark; returns the model of the table afterwards."""
    model = {r[0]: list(r) for r in rows}
    sql(spark, "DELETE FROM %s WHERE id %% 5 = 0" % ident)
    model = {k: v for k, v in model.items() if k % 5}
    sql(spark, "UPDATE %s SET score = score + 1000 WHERE category = 'b'" % ident)
    for v in model.values():
        if v[2] == "b" and v[4] is not None:
            v[4] += 1000
    # source: ids 1..9 update or ('d') delete matched rows; unmatched ones (5: deleted above) and 500..504
    # are inserted unless 'd'
    src = [(i, "d" if i % 4 == 0 else "u", "c", -i) for i in range(1, 10)] + \
          [(i, "i", "a", i) for i in range(500, 505)]
    spark.createDataFrame(src, "id BIGINT, op STRING, category STRING, score INT").createOrReplaceTempView("src")
    sql(spark, """MERGE INTO %s t USING src s ON t.id = s.id
                  WHEN MATCHED AND s.op = 'd' THEN DELETE
                  WHEN MATCHED THEN UPDATE SET t.category = s.category, t.score = s.score
                  WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT (id, ts, category, amount, score)
                       VALUES (s.id, TIMESTAMP '2024-05-02 03:04:05.000006', s.category, 1.25, s.score)""" % ident)
    for i, op, cat, score in src:
        if i in model:
            if op == "d":
                del model[i]
            else:
                model[i][2], model[i][4] = cat, score
        elif op != "d":
            model[i] = [i, dt.datetime(2024, 5, 2, 3, 4, 5, 6, dt.timezone.utc), cat, dec("1.25"), score]
    return model_key([tuple(v) for v in model.values()])


def test_delete_update_merge_copy_on_write(spark, ns, pycat, floe, table_bucket):  # noqa: F811
    ident = create_events(spark, ns, "cow")
    rows = gen_rows(0, 80)
    insert(spark, ident, rows)
    want = apply_changes(spark, ident, rows)
    assert spark_read(spark, ident) == want
    assert py_read(pycat, ident) == want
    got, err = floe_read(floe, table_bucket, ident)
    assert got == want and "delete files" not in err
    t = pycat.load_table("%s.cow" % ns)
    ops = [s.summary.operation.value for s in t.metadata.snapshots]
    assert ops[0] == "append" and len(ops) == 4 and set(ops[1:]) <= {"overwrite", "delete"}, ops
    assert not any(task.delete_files for task in t.scan().plan_files())


def test_delete_update_merge_merge_on_read(spark, ns, pycat):
    ident = create_events(spark, ns, "mor", mode="merge-on-read")
    rows = gen_rows(0, 80)
    insert(spark, ident, rows)
    want = apply_changes(spark, ident, rows)
    assert spark_read(spark, ident) == want
    t = pycat.load_table("%s.mor" % ns)
    assert any(task.delete_files for task in t.scan().plan_files())  # position deletes were written
    assert py_read(pycat, ident) == want


# ---------------------------------------------------------------- schema evolution

def test_schema_evolution(spark, ns, pycat, floe, table_bucket):  # noqa: F811
    ident = create_events(spark, ns, "evolve")
    old = gen_rows(0, 30)
    insert(spark, ident, old)
    before = pycat.load_table("%s.evolve" % ns).schema()
    sql(spark, "ALTER TABLE %s ADD COLUMN note STRING" % ident)
    sql(spark, "ALTER TABLE %s RENAME COLUMN score TO points" % ident)
    sql(spark, "ALTER TABLE %s ALTER COLUMN points TYPE BIGINT" % ident)
    sql(spark, "INSERT INTO %s VALUES (100, TIMESTAMP '2024-05-01 10:00:00', 'a', 9.99, 5000000000, 'new')" % ident)

    after = pycat.load_table("%s.evolve" % ns).schema()
    assert after.find_field("points").field_id == before.find_field("score").field_id
    assert str(after.find_field("points").field_type) == "long"
    assert after.find_field("note").field_id > max(f.field_id for f in before.fields)

    want = sorted([(r[0], micros(r[1]), r[2], r[3], r[4], None) for r in old] +
                  [(100, micros(dt.datetime(2024, 5, 1, 10, tzinfo=dt.timezone.utc)), "a", dec("9.99"),
                    5000000000, "new")])
    cols = ("id", "ts", "category", "amount", "points", "note")
    assert spark_read(spark, ident, cols="id, unix_micros(ts), category, amount, points, note") == want
    assert py_read(pycat, ident, cols=cols) == want
    got, _ = floe_read(floe, table_bucket, ident, cols=cols)
    assert got == want
    # The old snapshot reads through the schema it was written with.
    first = pycat.load_table("%s.evolve" % ns).metadata.snapshots[0].snapshot_id
    assert spark_read(spark, ident, "VERSION AS OF %d" % first) == model_key(old)


# ---------------------------------------------------------------- metadata tables

@pytest.fixture(scope="module")
def meta_table(spark, ns, pycat):
    ident = create_events(spark, ns, "meta")
    insert(spark, ident, gen_rows(0, 30))
    insert(spark, ident, gen_rows(30, 30))
    sql(spark, "DELETE FROM %s WHERE category = 'c'" % ident)
    return ident, pycat.load_table("%s.meta" % ns)


def test_metadata_snapshots(spark, meta_table):
    ident, t = meta_table
    got = [(r[0], r[1], r[2]) for r in sql(spark, "SELECT snapshot_id, parent_id, operation FROM %s.snapshots "
                                                  "ORDER BY committed_at" % ident)]
    assert got == [(s.snapshot_id, s.parent_snapshot_id, s.summary.operation.value) for s in t.metadata.snapshots]


def test_metadata_history(spark, meta_table):
    ident, t = meta_table
    got = [(r[0], r[1]) for r in sql(spark, "SELECT snapshot_id, is_current_ancestor FROM %s.history "
                                            "ORDER BY made_current_at" % ident)]
    assert got == [(h.snapshot_id, True) for h in t.metadata.snapshot_log]


def test_metadata_files(spark, meta_table):
    ident, t = meta_table
    got = sorted((r[0], r[1]) for r in sql(spark, "SELECT file_path, record_count FROM %s.files" % ident))
    want = sorted((f.file.file_path, f.file.record_count) for f in t.scan().plan_files())
    assert got == want and sum(n for _, n in got) == 40


def test_metadata_manifests(spark, meta_table):
    ident, t = meta_table
    got = sorted(r[0] for r in sql(spark, "SELECT path FROM %s.manifests" % ident))
    want = sorted(m.manifest_path for m in t.current_snapshot().manifests(t.io))
    assert got == want and got


# ---------------------------------------------------------------- floe append <-> Spark

def test_spark_reads_floe_append(spark, pycat, floe, table_bucket):  # noqa: F811
    fns = unique("fapp")
    pycat.create_namespace(fns)
    pycat.create_table("%s.events" % fns, schema=SCHEMA, partition_spec=SPEC)
    rows = make_rows(0, 300)
    append(floe, table_bucket, fns, rows)
    ident = "%s.%s.events" % (CAT, fns)
    got = []
    for r in sql(spark, "SELECT id, unix_micros(ts) AS ts, category, amount, score, info, tags, attrs FROM %s" % ident):
        d = r.asDict(recursive=True)
        d["ts"] = None if d["ts"] is None else (EPOCH + dt.timedelta(microseconds=d["ts"])).isoformat(
            timespec="microseconds")
        got.append(norm_row(d))
    want = [norm_row(r) for r in rows]
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
    # A filter on an identity partition column.
    n = sql(spark, "SELECT count(*) FROM %s WHERE category = 'beta'" % ident)[0][0]
    assert n == sum(1 for r in rows if r["category"] == "beta")

    # Spark appends on top of floe's snapshot; floe appends on top of Spark's; both see all rows.
    sql(spark, """INSERT INTO %s VALUES (7000, TIMESTAMP '2024-03-02 00:00:00', 'alpha', 1.50, 0.5,
                  named_struct('a', 1, 'b', 'x'), array('t1'), map('k0', 7))""" % ident)
    append(floe, table_bucket, fns, make_rows(8000, 20))
    ids, _ = floe_read(floe, table_bucket, ident, cols=("id",))
    assert [i[0] for i in ids] == sorted([r["id"] for r in rows] + [7000] + list(range(8000, 8020)))
    assert sql(spark, "SELECT count(*), sum(id) FROM %s" % ident)[0] == (321, sum(range(300)) + 7000 +
                                                                        sum(range(8000, 8020)))


# ---------------------------------------------------------------- signing name osstables

def test_osstables_signing_name(spark, ns):
    ident = "%s.%s.oss" % (CAT_OSS, ns)
    sql(spark, "CREATE TABLE %s (id BIGINT, s STRING) USING iceberg" % ident)
    sql(spark, "INSERT INTO %s VALUES (1, 'x'), (2, 'y')" % ident)
    assert [tuple(r) for r in sql(spark, "SELECT * FROM %s.%s.oss ORDER BY id" % (CAT, ns))] == [(1, "x"), (2, "y")]
    assert "oss" in [r[1] for r in sql(spark, "SHOW TABLES IN %s.%s" % (CAT_OSS, ns))]


# ---------------------------------------------------------------- drop

def test_drop_table_purge(spark, ns, pycat, floe):
    """Iceberg 1.10's Spark catalog drops without purgeRequested and then deletes every reachable
    file itself (deleteReachableFiles over S3FileIO): the table is gone and so are its files."""
    ident = create_events(spark, ns, "gone")
    insert(spark, ident, gen_rows(0, 10))
    t = pycat.load_table("%s.gone" % ns)
    data_paths = [f.file.file_path for f in t.scan().plan_files()]
    assert data_paths and t.metadata_location
    sql(spark, "DROP TABLE %s PURGE" % ident)
    assert not pycat.table_exists("%s.gone" % ns)
    assert "gone" not in [r[1] for r in sql(spark, "SHOW TABLES IN %s.%s" % (CAT, ns))]
    s3 = make_client(floe.endpoint)
    for p in data_paths + [t.metadata_location]:
        bucket, key = p.split("://", 1)[1].split("/", 1)
        with pytest.raises(Exception) as ei:
            s3.head_object(Bucket=bucket, Key=key)
        assert "404" in str(ei.value) or "NoSuch" in str(ei.value) or "Not Found" in str(ei.value), ei.value
    # The name is free again.
    create_events(spark, ns, "gone")
    assert spark_read(spark, ident) == []
