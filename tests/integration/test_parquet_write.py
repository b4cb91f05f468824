"""floe's Parquet writer against a real reader (pyarrow).

build/pq_write writes a deterministic dataset covering every Iceberg primitive
type, nulls, nested structs, lists and maps, and prints the rows it wrote as
JSON lines (--json) and the file info it got back (--info). These tests read
the file with pyarrow and compare schema (field ids, types), values, column
statistics, row groups, page layout (a small Thrift compact walker over the
page headers) and the Iceberg metrics."""
import datetime
import json
import math
import os
import struct
import subprocess
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = Path(os.environ.get("FLOE_BUILD", ROOT / "build")) / "pq_write"
CODECS = ["none", "snappy", "gzip", "zstd", "lz4_raw"]
PQ_CODEC = {"none": "UNCOMPRESSED", "snappy": "SNAPPY", "gzip": "GZIP", "zstd": "ZSTD", "lz4_raw": "LZ4"}  # pyarrow names LZ4_RAW "LZ4"

# field id -> (name path, iceberg type) for the all-types schema
IDS = {
    "b": 1, "i": 2, "l": 3, "f": 4, "d": 5, "dec9": 6, "dec18": 7, "dec38": 8, "date": 9,
    "time": 10, "ts": 11, "tstz": 12, "tsns": 13, "s": 14, "u": 15, "fx": 16, "bin": 17,
    "st": 18, "tags": 23, "pts": 25, "m": 29, "mm": 32, "cat": 36, "tstzns": 37,
}
TS_UNITS = {"ts": (10**6, 6, False), "tstz": (10**6, 6, True), "tsns": (10**9, 9, False),
            "tstzns": (10**9, 9, True)}
IN_LIST_LEAVES = {24, 26, 27, 28, 30, 31, 33, 35}


def run_tool(tmp_path, codec, rows, *extra, name="t"):
    assert TOOL.exists(), f"{TOOL} is missing: build the project first (cmake --build build)"
    out = tmp_path / f"{name}.parquet"
    js = tmp_path / f"{name}.json"
    info = tmp_path / f"{name}.info"
    subprocess.run([str(TOOL), str(out), codec, str(rows), "--json", str(js), "--info", str(info),
                    *map(str, extra)], check=True, capture_output=True, timeout=300)
    expected = [json.loads(line, parse_int=_parse_int) for line in js.read_text().splitlines()]
    return out, expected, json.loads(info.read_text())


def _parse_int(s):
    return -0.0 if s == "-0" else int(s)   # C prints float -0.0 as "-0"


def _unscaled(d, scale):
    sign, digits, exp = d.as_tuple()
    assert exp == -scale
    v = int("".join(map(str, digits)) or "0")
    return -v if sign else v


def _f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _ts(v, per_sec, digits, tz):
    days, rem = divmod(v, 86400 * per_sec)
    d = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    secs, frac = divmod(rem, per_sec)
    s = f"{d.isoformat()}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{frac:0{digits}d}"
    return s + ("+00:00" if tz else "")


def check(t, e, a, path, uuid=False):
    if e is None or a is None:
        assert e is None and a is None, f"{path}: expected {e!r}, got {a!r}"
        return
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            f = t.field(i)
            check(f.type, e[f.name], a[f.name], f"{path}.{f.name}")
    elif pa.types.is_map(t):
        kt, vt = t.key_type, t.item_type
        if pa.types.is_string(kt):
            assert list(e.keys()) == [k for k, _ in a], path
            for k, v in a:
                check(vt, e[k], v, f"{path}[{k}]")
        else:
            assert len(e) == len(a), path
            for x, (k, v) in zip(e, a):
                check(kt, x["key"], k, f"{path}.key")
                check(vt, x["value"], v, f"{path}.value")
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        assert len(e) == len(a), f"{path}: {e!r} vs {a!r}"
        for k, (x, y) in enumerate(zip(e, a)):
            check(t.value_type, x, y, f"{path}[{k}]")
    elif pa.types.is_floating(t):
        if isinstance(e, str):
            want = {"NaN": math.isnan, "Infinity": lambda v: v == math.inf,
                    "-Infinity": lambda v: v == -math.inf}[e]
            assert want(a), f"{path}: expected {e}, got {a!r}"
        else:
            x = _f32(float(e)) if t == pa.float32() else float(e)
            assert x == a and math.copysign(1, x) == math.copysign(1, a), f"{path}: {e!r} vs {a!r}"
    elif pa.types.is_decimal(t):
        assert e == format(a, "f"), f"{path}: {e} vs {a}"
    elif pa.types.is_date32(t):
        assert e == a.isoformat(), path
    elif pa.types.is_time64(t):
        assert e == f"{a.hour:02d}:{a.minute:02d}:{a.second:02d}.{a.microsecond:06d}", path
    elif pa.types.is_fixed_size_binary(t) or pa.types.is_binary(t) or isinstance(a, (bytes, bytearray)):
        if uuid:
            import uuid as U
            assert e == str(U.UUID(bytes=bytes(a))), path
        else:
            assert e == bytes(a).hex(), f"{path}: {e} vs {bytes(a).hex()}"
    else:
        if uuid and not isinstance(a, str):
            a = str(a)
        assert e == a, f"{path}: expected {e!r}, got {a!r}"


def check_values(table, expected):
    assert table.num_rows == len(expected)
    for name in table.column_names:
        col = table.column(name)
        if name in TS_UNITS:
            per, digits, tz = TS_UNITS[name]
            got = [None if v is None else _ts(v, per, digits, tz) for v in col.cast(pa.int64()).to_pylist()]
            for r, (e, a) in enumerate(zip((row[name] for row in expected), got)):
                assert e == a, f"row {r} {name}: {e} vs {a}"
            continue
        t = col.type
        if isinstance(t, pa.ExtensionType):
            col, t = col.cast(t.storage_type) if hasattr(col, "cast") else col, t.storage_type
        vals = col.to_pylist()
        for r, (row, a) in enumerate(zip(expected, vals)):
            check(t, row[name], a, f"row {r} {name}", uuid=(name == "u"))


# ---- a minimal Thrift compact reader, enough to walk page headers ----

class _Compact:
    def __init__(self, buf, pos=0):
        self.b, self.p = buf, pos

    def varint(self):
        shift = v = 0
        while True:
            c = self.b[self.p]
            self.p += 1
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7

    def zz(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def struct(self):
        out, last = {}, 0
        while True:
            h = self.b[self.p]
            self.p += 1
            if h == 0:
                return out
            t, d = h & 0x0F, h >> 4
            fid = last + d if d else self.zz()
            last = fid
            out[fid] = self.value(t)

    def value(self, t):
        if t in (1, 2):
            return t == 1
        if t == 3:
            self.p += 1
            return self.b[self.p - 1]
        if t in (4, 5, 6):
            return self.zz()
        if t == 7:
            self.p += 8
            return None
        if t == 8:
            n = self.varint()
            self.p += n
            return bytes(self.b[self.p - n:self.p])
        if t in (9, 10):
            h = self.b[self.p]
            self.p += 1
            n, et = h >> 4, h & 0x0F
            if n == 15:
                n = self.varint()
            return [self.value(et) for _ in range(n)]
        if t == 12:
            return self.struct()
        raise ValueError(f"thrift type {t}")


def pages(path, col_meta):
    """[(page_type, encoding, num_values)] of one column chunk."""
    data = Path(path).read_bytes()
    start = col_meta.dictionary_page_offset if col_meta.has_dictionary_page else col_meta.data_page_offset
    end = start + col_meta.total_compressed_size
    out, pos = [], start
    while pos < end:
        r = _Compact(data, pos)
        h = r.struct()
        pos = r.p + h[3]
        if h[1] == 2:
            out.append(("dict", h[7][2], h[7][1]))
        else:
            out.append(("data", h[5][2], h[5][1]))
    assert pos == end
    return out


# ---- tests ----

@pytest.mark.parametrize("codec", CODECS)
def test_all_types_roundtrip(tmp_path, codec):
    path, expected, info = run_tool(tmp_path, codec, 3000)
    f = pq.ParquetFile(path)
    md = f.metadata
    assert md.num_rows == 3000
    assert md.created_by.startswith("floe")
    assert f.schema_arrow.metadata[b"floe.test"] == b"pq_write"
    for rg in range(md.num_row_groups):
        for c in range(md.num_columns):
            assert md.row_group(rg).column(c).compression == PQ_CODEC[codec]
    table = f.read()
    check_values(table, expected)
    assert info["record_count"] == 3000
    assert info["file_size"] == path.stat().st_size


def test_schema_field_ids_and_types(tmp_path):
    path, _, _ = run_tool(tmp_path, "zstd", 10)
    s = pq.read_schema(path)

    def fid(f):
        return int(f.metadata[b"PARQUET:field_id"])

    for name, i in IDS.items():
        assert fid(s.field(name)) == i, name
    T = {
        "b": pa.bool_(), "i": pa.int32(), "l": pa.int64(), "f": pa.float32(), "d": pa.float64(),
        "dec9": pa.decimal128(9, 2), "dec18": pa.decimal128(18, 4), "dec38": pa.decimal128(38, 10),
        "date": pa.date32(), "time": pa.time64("us"), "ts": pa.timestamp("us"),
        "tstz": pa.timestamp("us", tz="UTC"), "tsns": pa.timestamp("ns"),
        "tstzns": pa.timestamp("ns", tz="UTC"), "s": pa.string(), "fx": pa.binary(5),
        "bin": pa.binary(), "cat": pa.string(),
    }
    for name, t in T.items():
        assert s.field(name).type == t, (name, s.field(name).type)
    ut = s.field("u").type
    assert ut == pa.binary(16) or getattr(ut, "storage_type", None) == pa.binary(16)
    assert not s.field("l").nullable and not s.field("cat").nullable and s.field("s").nullable
    st = s.field("st").type
    assert [fid(st.field(k)) for k in range(st.num_fields)] == [19, 20, 21]
    assert not st.field("a").nullable
    assert fid(st.field("inner").type.field("x")) == 22
    tags = s.field("tags").type
    assert fid(tags.value_field) == 24 and tags.value_type == pa.string()
    pts = s.field("pts").type
    assert fid(pts.value_field) == 26
    assert [fid(pts.value_type.field(k)) for k in range(2)] == [27, 28]
    m = s.field("m").type
    assert isinstance(m, pa.MapType) and fid(m.key_field) == 30 and fid(m.item_field) == 31
    assert m.key_type == pa.string() and m.item_type == pa.int64()
    mm = s.field("mm").type
    assert fid(mm.key_field) == 33 and fid(mm.item_field) == 34
    assert fid(mm.item_type.value_field) == 35
    # the Parquet-level schema: 3-level lists and key_value maps, root without id
    ps = pq.ParquetFile(path).schema
    txt = str(ps)
    assert "repeated group field_id=-1 list" in txt and "repeated group field_id=-1 key_value" in txt
    assert "required group field_id=-1 table" in txt or "group field_id=-1 table" in txt
    assert "fixed_len_byte_array(16) field_id=8 dec38" in txt   # minimal length for P=38
    assert "optional int32 field_id=6 dec9" in txt and "optional int64 field_id=7 dec18" in txt


def test_statistics(tmp_path):
    path, expected, _ = run_tool(tmp_path, "zstd", 5000, "--rg", 200000)
    f = pq.ParquetFile(path)
    md = f.metadata
    assert md.num_row_groups > 1
    names = [md.schema.column(c).path for c in range(md.num_columns)]
    table = f.read()
    checked = 0
    for rg in range(md.num_row_groups):
        g = md.row_group(rg)
        start = sum(md.row_group(k).num_rows for k in range(rg))
        part = table.slice(start, g.num_rows)
        for c, name in enumerate(names):
            st = g.column(c).statistics
            assert st is not None and st.has_null_count, name
            if "." in name:
                continue
            col = part.column(name)
            assert st.null_count == col.null_count, name
            if name in ("u", "fx", "bin") or col.null_count == len(col):
                continue
            assert st.has_min_max, name
            mm = None if name in TS_UNITS else pc.min_max(col).as_py()
            if name in ("f", "d"):
                assert st.min == mm["min"] and st.max == mm["max"], (name, st.min, st.max, mm)
                if st.min == 0:
                    assert math.copysign(1, st.min) == -1
                if st.max == 0:
                    assert math.copysign(1, st.max) == 1
            elif name in TS_UNITS:
                mm = pc.min_max(col.cast(pa.int64())).as_py()
                assert st.min_raw == mm["min"] and st.max_raw == mm["max"], name
            else:
                assert st.min == mm["min"] and st.max == mm["max"], (name, st.min, st.max, mm)
            checked += 1
    assert checked > 20
    # pyarrow uses the statistics to filter row groups
    t = pq.read_table(path, filters=[("l", ">", 400)])
    assert t.num_rows == sum(1 for r in expected if r["l"] > 400)


def test_row_groups_pages_and_split_offsets(tmp_path):
    path, expected, info = run_tool(tmp_path, "snappy", 20000, "--page", 4096, "--rg", 300000,
                                    "--batch", 777)
    f = pq.ParquetFile(path)
    md = f.metadata
    assert md.num_row_groups >= 3
    check_values(f.read(), expected)
    offs = []
    for rg in range(md.num_row_groups):
        c0 = md.row_group(rg).column(0)
        offs.append(c0.dictionary_page_offset if c0.has_dictionary_page else c0.data_page_offset)
    assert info["split_offsets"] == offs
    multi = 0
    for rg in range(md.num_row_groups):
        for c in range(md.num_columns):
            meta = md.row_group(rg).column(c)
            ps = pages(path, meta)
            assert sum(n for kind, _, n in ps if kind == "data") == meta.num_values
            kinds = [k for k, _, _ in ps]
            assert "dict" not in kinds[1:], "dictionary page must come first"
            if kinds.count("data") > 1:
                multi += 1
    assert multi > 10


def test_dictionary_and_fallback(tmp_path):
    path, expected, _ = run_tool(tmp_path, "zstd", 20000, "--dict", 20000, "--page", 8192)
    f = pq.ParquetFile(path)
    md = f.metadata
    assert md.num_row_groups == 1
    cols = {md.schema.column(c).path: md.row_group(0).column(c) for c in range(md.num_columns)}
    # high-cardinality s: dictionary first, then PLAIN pages
    ps = pages(path, cols["s"])
    assert ps[0][0] == "dict"
    encs = [e for k, e, _ in ps if k == "data"]
    assert 8 in encs and 0 in encs, encs                 # RLE_DICTIONARY then PLAIN
    assert encs.index(0) > encs.index(8) and all(e == 0 for e in encs[encs.index(0):])
    assert {"PLAIN", "RLE_DICTIONARY"} <= set(cols["s"].encodings)
    # low-cardinality cat: dictionary all the way
    ps = pages(path, cols["cat"])
    assert ps[0][0] == "dict" and all(e == 8 for k, e, _ in ps if k == "data")
    # booleans are never dictionary-encoded
    assert not cols["b"].has_dictionary_page
    check_values(f.read(), expected)
    # no dictionary at all
    path2, expected2, _ = run_tool(tmp_path, "zstd", 3000, "--no-dict", name="nodict")
    md2 = pq.ParquetFile(path2).metadata
    for c in range(md2.num_columns):
        assert not md2.row_group(0).column(c).has_dictionary_page
    check_values(pq.read_table(path2), expected2)


def test_iceberg_metrics(tmp_path):
    path, expected, info = run_tool(tmp_path, "zstd", 4000, "--rg", 500000)
    f = pq.ParquetFile(path)
    md = f.metadata
    table = f.read()
    ids = []
    for c in range(md.num_columns):
        ids.append(int(f.schema.column(c).path and pq.read_schema(path) and 0) or None)
    metrics = {m["id"]: m for m in info["metrics"]}
    assert len(info["metrics"]) == md.num_columns
    # column sizes, value counts and null counts add up over the row groups
    for c, m in enumerate(info["metrics"]):
        size = sum(md.row_group(g).column(c).total_compressed_size for g in range(md.num_row_groups))
        vals = sum(md.row_group(g).column(c).num_values for g in range(md.num_row_groups))
        nulls = sum(md.row_group(g).column(c).statistics.null_count for g in range(md.num_row_groups))
        assert (m["column_size"], m["value_count"], m["null_count"]) == (size, vals, nulls), m["id"]
    for i in IN_LIST_LEAVES - {26}:
        assert "lower" not in metrics[i] and "upper" not in metrics[i] and metrics[i]["value_count"] > 0

    def col(name):
        return [v for v in table.column(name).to_pylist() if v is not None]

    def le(fmt, v):
        return struct.pack(fmt, v).hex()

    ints = col("i")
    assert metrics[2]["lower"] == le("<i", min(ints)) and metrics[2]["upper"] == le("<i", max(ints))
    ls = col("l")
    assert metrics[3]["lower"] == le("<q", min(ls)) and metrics[3]["upper"] == le("<q", max(ls))
    b = col("b")
    assert metrics[1]["lower"] == "00" and metrics[1]["upper"] == "01" and len(set(b)) == 2
    # floats: NaN never a bound, counted; -0.0 below +0.0
    fs = col("f")
    assert metrics[4]["nan_count"] == sum(1 for v in fs if math.isnan(v))
    assert metrics[4]["upper"] == le("<f", math.inf)
    ds = [v for v in col("d") if not math.isnan(v)]
    assert metrics[5]["lower"] == le("<d", -math.inf) and metrics[5]["upper"] == le("<d", max(ds))
    assert metrics[5]["nan_count"] == sum(1 for v in col("d") if math.isnan(v))
    # decimals: minimal big-endian two's complement of the unscaled value
    for fid, name, scale in ((6, "dec9", 2), (7, "dec18", 4), (8, "dec38", 10)):
        vs = [_unscaled(v, scale) for v in col(name)]
        for key, v in (("lower", min(vs)), ("upper", max(vs))):
            n = 1
            while not -(1 << (8 * n - 1)) <= v < (1 << (8 * n - 1)):
                n += 1
            assert metrics[fid][key] == v.to_bytes(n, "big", signed=True).hex(), (name, key)
    # strings truncated to 16 code points, the upper bound incremented
    ss = sorted(s.encode() for s in col("s"))
    lo, hi = ss[0].decode(), ss[-1].decode()
    assert bytes.fromhex(metrics[14]["lower"]).decode() == lo[:16]
    up = bytes.fromhex(metrics[14]["upper"]).decode()
    assert len(up) <= 16
    if len(hi) > 16:
        assert up == hi[:15] + chr(ord(hi[15]) + 1)
    else:
        assert up == hi
    us = sorted(col("u"))
    assert metrics[15]["lower"] == bytes(us[0]).hex() if isinstance(us[0], bytes) else True
    assert metrics[15]["upper"] == "ff" * 16
    days = sorted(col("date"))
    assert metrics[9]["lower"] == le("<i", (days[0] - datetime.date(1970, 1, 1)).days)
    # nested struct leaves get bounds, as Java writes them
    assert "lower" in metrics[19] and "lower" in metrics[22]


def test_empty_file(tmp_path):
    path, expected, info = run_tool(tmp_path, "zstd", 0)
    f = pq.ParquetFile(path)
    assert f.metadata.num_rows == 0 and expected == []
    assert f.read().num_rows == 0
    assert info["record_count"] == 0 and info["split_offsets"] == []


def test_small_batches_many_row_groups(tmp_path):
    path, expected, info = run_tool(tmp_path, "lz4_raw", 700, "--batch", 1, "--rg", 20000, "--page", 512)
    f = pq.ParquetFile(path)
    assert f.metadata.num_row_groups > 2
    check_values(f.read(), expected)
    assert len(info["split_offsets"]) == f.metadata.num_row_groups


# ---- DuckDB, a second independent reader ----

def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("codec", ["zstd", "snappy", "gzip", "lz4_raw", "none"])
def test_duckdb_reads_floe_files(tmp_path, codec):
    duckdb = pytest.importorskip("duckdb")
    path, _, _ = run_tool(tmp_path, codec, 2500)
    ref = pq.read_table(path)
    con = duckdb.connect()
    assert con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()[0] == 2500
    simple = ["b", "i", "l", "f", "d", "dec9", "dec18", "dec38", "date", "s", "bin", "fx", "st", "tags"]
    for name in simple:
        got = [r[0] for r in con.execute(f'SELECT "{name}" FROM read_parquet(?)', [str(path)]).fetchall()]
        want = ref.column(name).to_pylist()
        if name in ("f",):
            want = [None if v is None else _f32(v) for v in want]
            got = [None if v is None else _f32(v) for v in got]
        if name in ("bin", "fx"):
            got = [None if v is None else bytes(v) for v in got]
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if not _same(g, w)]
        assert not bad, f"{name}: row {bad[0]}: duckdb {got[bad[0]]!r} vs pyarrow {want[bad[0]]!r}"
    # Statistics drive DuckDB's row-group pruning: a filter on l must agree with a full count.
    lo = pc.min_max(ref.column("l"))["max"].as_py()
    n = con.execute("SELECT count(*) FROM read_parquet(?) WHERE l >= ?", [str(path), lo]).fetchone()[0]
    assert n == pc.sum(pc.greater_equal(ref.column("l"), lo)).as_py()
