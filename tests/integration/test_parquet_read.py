"""Parquet reader interop: pyarrow writes files (every Iceberg primitive, nulls,
nested struct/list/map, field ids) under every codec and page/encoding variant;
floe's build/pq_read prints the rows as JSON lines, which are compared value by
value with the same data rendered in Python into floe's JSON forms. Also:
projection by id, promotion, missing columns, name mapping, and malformed files
(truncated, flipped bytes) rejected with an error exit, never a signal.
Needs no server."""
import datetime
import decimal
import json
import math
import os
import random
import struct
import subprocess
import uuid
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[2]
PQ_READ = Path(os.environ.get("FLOE_BUILD", ROOT / "build")) / "pq_read"

N = 300


def fid(i):
    return {b"PARQUET:field_id": str(i).encode()}


def F(name, typ, i, nullable=True):
    return pa.field(name, typ, nullable=nullable, metadata=fid(i))


UUID_T = pa.uuid()

SCHEMA = pa.schema([
    F("b", pa.bool_(), 1),
    F("i32", pa.int32(), 2),
    F("i64", pa.int64(), 3, nullable=False),
    F("f32", pa.float32(), 4),
    F("f64", pa.float64(), 5),
    F("d9", pa.decimal128(9, 2), 6),
    F("d18", pa.decimal128(18, 6), 7),
    F("d38", pa.decimal128(38, 10), 8),
    F("date", pa.date32(), 9),
    F("time", pa.time64("us"), 10),
    F("ts", pa.timestamp("us"), 11),
    F("tstz", pa.timestamp("us", tz="UTC"), 12),
    F("tsns", pa.timestamp("ns"), 13),
    F("s", pa.string(), 14),
    F("u", UUID_T, 15),
    pa.field("u2", pa.binary(16), metadata={**fid(38), b"iceberg.type": b"uuid"}),
    F("fx", pa.binary(5), 16),
    F("bin", pa.binary(), 17),
    F("st", pa.struct([F("x", pa.int32(), 18), F("y", pa.string(), 19),
                       F("z", pa.struct([F("q", pa.float64(), 20)]), 21)]), 22),
    F("li", pa.list_(F("element", pa.int64(), 23)), 24),
    F("ls", pa.list_(F("element", pa.struct([F("a", pa.int32(), 25), F("b", pa.string(), 26)]), 27)), 28),
    F("m", pa.map_(F("key", pa.string(), 29, nullable=False), F("value", pa.int64(), 30)), 31),
    F("mi", pa.map_(F("key", pa.int32(), 32, nullable=False), F("value", pa.string(), 33)), 34),
    F("ll", pa.list_(F("element", pa.list_(F("element", pa.int32(), 35)), 36)), 37),
])

FLAT_INT = ["i32", "i64", "date"]
FLAT_STR = ["s", "bin"]
FLAT_FLOAT = ["f32", "f64"]


def gen_rows(n=N, seed=1):
    rnd = random.Random(seed)
    words = ["", "a", "héllo", "名前", "quote\"back\\slash", "line\nbreak", "x" * 50, "tab\t", "\u0001ctl"]

    def maybe(v):
        return None if rnd.random() < 0.15 else v

    rows = []
    for i in range(n):
        us = rnd.randint(-2**40, 2**50)
        r = {
            "b": maybe(rnd.random() < 0.5),
            "i32": maybe(rnd.choice([0, 1, -1, 2**31 - 1, -2**31, rnd.randint(-1000, 1000)])),
            "i64": rnd.choice([0, -1, 2**63 - 1, -2**63, rnd.randint(-10**12, 10**12), i]),
            "f32": maybe(rnd.choice([0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), rnd.uniform(-1e6, 1e6)])),
            "f64": maybe(rnd.choice([0.0, 1e300, -2.5e-300, float("nan"), rnd.uniform(-1e9, 1e9)])),
            "d9": maybe(decimal.Decimal(rnd.randint(-10**9 + 1, 10**9 - 1)).scaleb(-2)),
            "d18": maybe(decimal.Decimal(rnd.randint(-10**18 + 1, 10**18 - 1)).scaleb(-6)),
            "d38": maybe(decimal.Decimal(rnd.randint(-10**38 + 1, 10**38 - 1)).scaleb(-10)),
            "date": maybe(datetime.date(1970, 1, 1) + datetime.timedelta(days=rnd.randint(-100000, 100000))),
            "time": maybe(datetime.time(rnd.randint(0, 23), rnd.randint(0, 59), rnd.randint(0, 59), rnd.randint(0, 999999))),
            "ts": maybe(us),
            "tstz": maybe(us + 7),
            "tsns": maybe(us * 1000 + rnd.randint(0, 999)),
            "s": maybe(rnd.choice(words) + str(rnd.randint(0, 30))),
            "u": maybe(uuid.UUID(int=rnd.getrandbits(128)).bytes),
            "u2": maybe(uuid.UUID(int=rnd.getrandbits(128)).bytes),
            "fx": maybe(bytes(rnd.getrandbits(8) for _ in range(5))),
            "bin": maybe(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 20)))),
            "st": maybe({"x": maybe(rnd.randint(-5, 5)), "y": maybe(rnd.choice(words)),
                         "z": maybe({"q": maybe(rnd.random())})}),
            "li": maybe([maybe(rnd.randint(-100, 100)) for _ in range(rnd.randint(0, 4))]),
            "ls": maybe([maybe({"a": maybe(rnd.randint(0, 9)), "b": maybe(rnd.choice(words))})
                         for _ in range(rnd.randint(0, 3))]),
            "m": maybe([(f"k{j}", maybe(rnd.randint(0, 10**10))) for j in range(rnd.randint(0, 3))]),
            "mi": maybe([(j * 3 - 2, maybe(rnd.choice(words))) for j in range(rnd.randint(0, 3))]),
            "ll": maybe([maybe([maybe(rnd.randint(0, 9)) for _ in range(rnd.randint(0, 3))])
                         for _ in range(rnd.randint(0, 3))]),
        }
        rows.append(r)
    return rows


def to_table(rows, schema=SCHEMA):
    cols = {}
    for f in schema:
        vals = [r[f.name] for r in rows]
        if f.name in ("ts", "tstz"):
            vals = pa.array(vals, pa.int64()).cast(f.type)
        elif f.name == "tsns":
            vals = pa.array(vals, pa.int64()).cast(f.type)
        else:
            vals = pa.array(vals, f.type)
        cols[f.name] = vals
    return pa.Table.from_arrays(list(cols.values()), schema=schema)


# ---- Python rendering into floe's JSON forms (then parsed, so compare values) ----

def civil_ts(units, per_sec, digits, tz):
    days, rem = divmod(units, 86400 * per_sec)
    d = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    secs, frac = divmod(rem, per_sec)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%0*d%s" % (d.year, d.month, d.day, secs // 3600,
                                                    secs // 60 % 60, secs % 60, digits, frac,
                                                    "+00:00" if tz else "")


def dec_str(d, scale):
    u = int(d.scaleb(scale))
    neg = u < 0
    s = str(abs(u)).rjust(scale + 1, "0")
    if scale:
        s = s[:-scale] + "." + s[-scale:]
    return ("-" if neg else "") + s


def fnum(x, fmt):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(fmt % x)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def render(name, v, typ=None):
    """value of column `name` (python form from gen_rows) -> floe JSON value"""
    if v is None:
        return None
    t = typ or SCHEMA.field(name).type
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return v
    if pa.types.is_float32(t):
        return fnum(f32(v), "%.9g")
    if pa.types.is_float64(t):
        return fnum(v, "%.17g")
    if pa.types.is_decimal(t):
        return dec_str(v, t.scale)
    if pa.types.is_date32(t):
        return v.isoformat()
    if pa.types.is_time64(t):
        return "%02d:%02d:%02d.%06d" % (v.hour, v.minute, v.second, v.microsecond)
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            return civil_ts(v, 10**9, 9, t.tz is not None)
        return civil_ts(v, 10**6, 6, t.tz is not None)
    if pa.types.is_string(t):
        return v
    if t == UUID_T:
        return str(uuid.UUID(bytes=v))
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return v.hex()
    if pa.types.is_struct(t):
        return {t.field(k).name: render(None, v[t.field(k).name], t.field(k).type) for k in range(t.num_fields)}
    if pa.types.is_map(t):
        kt, vt = t.key_type, t.item_type
        if pa.types.is_string(kt):
            return {k: render(None, x, vt) for k, x in v}
        return [{"key": render(None, k, kt), "value": render(None, x, vt)} for k, x in v]
    if pa.types.is_list(t):
        return [render(None, x, t.value_type) for x in v]
    raise AssertionError(f"no rendering for {t}")


def expected(rows, names=None, schema=SCHEMA):
    names = names or [f.name for f in schema]
    return [{n: render(n, r[n], schema.field(n).type) for n in names} for r in rows]


def run_read(path, *args, check=True):
    r = subprocess.run([str(PQ_READ), str(path), *args], capture_output=True, timeout=120)
    assert r.returncode >= 0, f"pq_read died with signal {-r.returncode} on {path}: {r.stderr[-2000:]}"
    if check:
        assert r.returncode == 0, f"pq_read failed: {r.stderr.decode(errors='replace')}"
        return [json.loads(l) for l in r.stdout.decode().splitlines()]
    return r


def compare(got, want):
    assert len(got) == len(want), f"{len(got)} rows, want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            for k in w:
                assert g.get(k) == w[k], f"row {i} column {k}: floe {g.get(k)!r} != {w[k]!r}"
            assert g == w, f"row {i}"


@pytest.fixture(scope="module")
def rows():
    return gen_rows()


@pytest.fixture(scope="module")
def table(rows):
    return to_table(rows)


@pytest.fixture(scope="module", autouse=True)
def built():
    if not PQ_READ.exists():
        pytest.skip(f"{PQ_READ} not built")


CODECS = ["none", "snappy", "gzip", "zstd", "lz4"]

VARIANTS = {
    "default": {},
    "v2": {"data_page_version": "2.0"},
    "plain": {"use_dictionary": False},
    "v2plain": {"data_page_version": "2.0", "use_dictionary": False},
    "delta": {"use_dictionary": False,
              "column_encoding": {**{c: "DELTA_BINARY_PACKED" for c in FLAT_INT},
                                  "s": "DELTA_BYTE_ARRAY", "bin": "DELTA_LENGTH_BYTE_ARRAY"}},
    "delta_v2": {"use_dictionary": False, "data_page_version": "2.0",
                 "column_encoding": {**{c: "DELTA_BINARY_PACKED" for c in FLAT_INT},
                                     "s": "DELTA_LENGTH_BYTE_ARRAY", "bin": "DELTA_BYTE_ARRAY"}},
    "bss": {"use_dictionary": False,
            "column_encoding": {"f32": "BYTE_STREAM_SPLIT", "f64": "BYTE_STREAM_SPLIT",
                                "i32": "BYTE_STREAM_SPLIT", "i64": "BYTE_STREAM_SPLIT",
                                "fx": "BYTE_STREAM_SPLIT"}},
    "small": {"row_group_size": 37, "data_page_size": 64, "write_batch_size": 16},
    "small_v2": {"row_group_size": 53, "data_page_size": 100, "write_batch_size": 8,
                 "data_page_version": "2.0"},
    "dict_fallback": {"dictionary_pagesize_limit": 64, "data_page_size": 128},
}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_roundtrip(tmp_path, rows, table, codec, variant):
    path = tmp_path / f"{variant}-{codec}.parquet"
    pq.write_table(table, path, compression=codec, **VARIANTS[variant])
    compare(run_read(path), expected(rows))


def test_int96(tmp_path, rows):
    schema = pa.schema([F("id", pa.int64(), 1), F("t", pa.timestamp("us"), 2)])
    rs = [{"id": i, "t": r["ts"]} for i, r in enumerate(rows)]
    t = pa.table({"id": [r["id"] for r in rs],
                  "t": pa.array([r["t"] for r in rs], pa.int64()).cast(pa.timestamp("us"))}, schema=schema)
    path = tmp_path / "int96.parquet"
    pq.write_table(t, path, use_deprecated_int96_timestamps=True)
    assert pq.ParquetFile(path).schema.column(1).physical_type == "INT96"
    compare(run_read(path), expected(rs, schema=schema))
    # read as timestamp_ns keeps nanoseconds
    got = run_read(path, "--promote", "2:timestamp_ns")
    assert [g["t"] for g in got] == [None if r["t"] is None else civil_ts(r["t"] * 1000, 10**9, 9, False) for r in rs]


def test_many_row_groups_counts(tmp_path, table):
    path = tmp_path / "rg.parquet"
    pq.write_table(table, path, row_group_size=7)
    assert pq.ParquetFile(path).num_row_groups == math.ceil(N / 7)
    r = run_read(path, "--count", check=False)
    assert r.returncode == 0 and r.stdout.strip() == str(N).encode()


def test_projection_by_id(tmp_path, rows, table):
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    got = run_read(path, "--ids", "14,3,24")
    # file order is kept by the pruned expected schema
    compare(got, expected(rows, ["i64", "s", "li"]))
    # a nested id keeps its ancestors only
    got = run_read(path, "--ids", "19")
    assert [g["st"] for g in got] == [None if r["st"] is None else {"y": r["st"]["y"]} for r in rows]


def test_promotion_and_missing(tmp_path, rows, table):
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    got = run_read(path, "--ids", "2,4,6,13", "--promote", "2:long", "--promote", "4:double",
                   "--promote", "6:decimal(20,2)", "--promote", "13:timestamp",
                   "--extra", "99:ghost:string", "--extra", "98:ghost2:decimal(10,3)")
    want = []
    for r in rows:
        want.append({"i32": r["i32"], "f32": None if r["f32"] is None else fnum(f32(r["f32"]), "%.17g"),
                     "d9": render("d9", r["d9"]),
                     "tsns": None if r["tsns"] is None else civil_ts(r["tsns"] // 1000, 10**6, 6, False),
                     "ghost": None, "ghost2": None})
    compare(got, want)


def test_fixed16_as_uuid(tmp_path, rows, table):
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    got = run_read(path, "--ids", "38,15", "--promote", "38:uuid")
    compare(got, [{"u": render("u", r["u"]),
                   "u2": None if r["u2"] is None else str(uuid.UUID(bytes=r["u2"]))} for r in rows])


def test_incompatible_projection(tmp_path, table):
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    r = run_read(path, "--ids", "14", "--promote", "14:long", check=False)
    assert r.returncode == 1 and b"error" in r.stderr
    r = run_read(path, "--ids", "3", "--promote", "3:int", check=False)
    assert r.returncode == 1


def test_name_mapping(tmp_path, rows):
    plain = pa.schema([pa.field(f.name, f.type, nullable=f.nullable) for f in SCHEMA])
    # strip nested ids too by rebuilding the types without metadata
    def strip(t):
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, strip(f.type), f.nullable) for f in t])
        if pa.types.is_map(t):
            return pa.map_(strip(t.key_type), strip(t.item_type))
        if pa.types.is_list(t):
            return pa.list_(pa.field("element", strip(t.value_type), t.value_field.nullable))
        return t
    plain = pa.schema([pa.field(f.name, strip(f.type), f.nullable) for f in plain])
    t = to_table(rows, plain)
    path = tmp_path / "noids.parquet"
    pq.write_table(t, path)
    r = subprocess.run([str(PQ_READ), str(path), "--schema"], capture_output=True, check=True)
    assert b"id=1 " not in r.stdout
    mapping = [
        {"field-id": 1, "names": ["b"]},
        {"field-id": 3, "names": ["i64", "long_alias"]},
        {"field-id": 14, "names": ["s"]},
        {"field-id": 22, "names": ["st"], "fields": [{"field-id": 19, "names": ["y"]},
                                                    {"field-id": 18, "names": ["x"]}]},
        {"field-id": 24, "names": ["li"], "fields": [{"field-id": 23, "names": ["element"]}]},
        {"field-id": 31, "names": ["m"], "fields": [{"field-id": 29, "names": ["key"]},
                                                   {"field-id": 30, "names": ["value"]}]},
    ]
    mp = tmp_path / "mapping.json"
    mp.write_text(json.dumps(mapping))
    got = run_read(path, "--mapping", str(mp), "--ids", "1,3,14,18,24,31")
    want = []
    for r in rows:
        want.append({"b": r["b"], "i64": r["i64"], "s": r["s"],
                     "st": None if r["st"] is None else {"x": r["st"]["x"]},
                     "li": render("li", r["li"]), "m": render("m", r["m"])})
    compare(got, want)


def test_legacy_and_required(tmp_path):
    # required nested fields, non-nullable list elements, an empty table
    schema = pa.schema([
        F("id", pa.int32(), 1, nullable=False),
        F("r", pa.struct([F("a", pa.int64(), 2, nullable=False)]), 3, nullable=False),
        F("l", pa.list_(pa.field("element", pa.string(), nullable=False, metadata=fid(4))), 5, nullable=False),
    ])
    t = pa.table({"id": [1, 2, 3], "r": [{"a": 1}, {"a": 2}, {"a": 3}], "l": [["x"], [], ["y", "z"]]}, schema=schema)
    path = tmp_path / "req.parquet"
    pq.write_table(t, path)
    assert run_read(path) == [{"id": 1, "r": {"a": 1}, "l": ["x"]}, {"id": 2, "r": {"a": 2}, "l": []},
                              {"id": 3, "r": {"a": 3}, "l": ["y", "z"]}]
    path2 = tmp_path / "empty.parquet"
    pq.write_table(t.slice(0, 0), path2)
    assert run_read(path2) == []


def corrupt_cases(data, rnd, n):
    cases = []
    for cut in sorted(set([0, 1, 4, 8, 12, len(data) // 2, len(data) - 1, len(data) - 4, len(data) - 8,
                           len(data) - 9] + [rnd.randrange(len(data)) for _ in range(n)])):
        if 0 <= cut < len(data):
            cases.append(data[:cut])
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        cases.append(bytes(b))
    # flips inside the footer specifically
    flen = int.from_bytes(data[-8:-4], "little")
    for _ in range(n):
        b = bytearray(data)
        b[len(data) - 8 - flen + rnd.randrange(flen)] = rnd.randrange(256)
        cases.append(bytes(b))
    return cases


@pytest.mark.parametrize("variant", ["default", "v2", "delta", "small"])
def test_corrupted_files(tmp_path, rows, table, variant):
    path = tmp_path / "good.parquet"
    opts = dict(VARIANTS[variant])
    pq.write_table(table.slice(0, 60), path, compression="snappy", **opts)
    data = path.read_bytes()
    rnd = random.Random(hash(variant) & 0xffff)
    bad = tmp_path / "bad.parquet"
    errors = 0
    for i, case in enumerate(corrupt_cases(data, rnd, 40)):
        bad.write_bytes(case)
        r = run_read(bad, check=False)
        assert r.returncode in (0, 1), f"case {i}: exit {r.returncode}"
        if r.returncode == 1:
            assert r.stderr.startswith(b"error:"), r.stderr
            errors += 1
        else:
            for line in r.stdout.decode(errors="replace").splitlines():
                json.loads(line)
    assert errors > 0
