"""Manifest and manifest-list interop with PyIceberg and fastavro, both ways.

floe's side is build/manifest_tool (tests/tools/manifest_tool.c): it writes a manifest and a
manifest list from a JSON description and prints what it reads as JSON. Checked here:
  - PyIceberg reads floe's list and manifests with equal values (paths, counts, summaries,
    partition tuples, metrics maps, bounds), and fastavro sees Java's record names
    (manifest_file, manifest_entry, r2, r102, r508, k117_v118 ...) and field ids everywhere;
  - floe reads what PyIceberg writes (write_manifest / write_manifest_list, v1 and v2) and the
    manifests of a real table (SqlCatalog on sqlite + two pyarrow appends) with the same values
    PyIceberg itself sees.
Needs no server."""
import datetime
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

fastavro = pytest.importorskip("fastavro")
pytest.importorskip("pyiceberg")

from pyiceberg.io.pyarrow import PyArrowFileIO  # noqa: E402
from pyiceberg.manifest import (  # noqa: E402
    DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus,
    read_manifest_list, write_manifest, write_manifest_list)
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    DecimalType, LongType, NestedField, StringType, TimestamptzType)

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "build" / "manifest_tool"

SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "name", "required": False, "type": "string"},
    {"id": 3, "name": "ts", "required": False, "type": "timestamptz"},
    {"id": 4, "name": "price", "required": False, "type": "decimal(9, 2)"}]}
SPEC_JSON = {"spec-id": 0, "fields": [
    {"source-id": 2, "field-id": 1000, "name": "name", "transform": "identity"},
    {"source-id": 3, "field-id": 1001, "name": "ts_day", "transform": "day"},
    {"source-id": 1, "field-id": 1002, "name": "id_bucket", "transform": "bucket[16]"},
    {"source-id": 4, "field-id": 1003, "name": "price", "transform": "identity"}]}


@pytest.fixture(scope="module")
def tool():
    if not TOOL.exists():
        pytest.skip(f"{TOOL} missing: build floe first (cmake --build build)")
    return TOOL


def run(tool, *args):
    r = subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def le(n, width):
    return n.to_bytes(width, "little", signed=True)


def entries_desc():
    out = []
    for i in range(4):
        out.append({
            "status": 1, "snapshot_id": 77,
            "data_file": {
                "content": 0, "file_path": f"s3://bucket/t/data/f{i}.parquet", "file_format": "PARQUET",
                "partition": [None if i == 3 else ["a", "b", "é"][i % 3], 19000 + i, i % 16, str(125 - 300 * i)],
                "record_count": 10 + i, "file_size_in_bytes": 1000 + i,
                "column_sizes": {"1": 100 + i, "2": 200}, "value_counts": {"1": 10 + i, "2": 10 + i},
                "null_value_counts": {"1": 0, "2": i}, "nan_value_counts": {},
                "lower_bounds": {"1": le(i, 8).hex(), "2": "61"},
                "upper_bounds": {"1": le(100 + i, 8).hex(), "2": "7a7a"},
                "split_offsets": [4], "sort_order_id": 0 if i == 0 else None}})
    return out


def write_floe(tool, tmp_path, fv, codec="deflate"):
    desc = {"format_version": fv, "schema": SCHEMA_JSON, "spec": SPEC_JSON, "snapshot_id": 77,
            "parent_id": -1, "seq": 0 if fv == 1 else 5, "codec": codec,
            "manifest_path": str(tmp_path / "floe-m0.avro"), "list_path": str(tmp_path / "snap-77.avro"),
            "entries": entries_desc()}
    (tmp_path / "desc.json").write_text(json.dumps(desc))
    mf = run(tool, "write", tmp_path / "desc.json")
    return desc, mf


def walk_avro(t, names, missing):
    """Collect record names; report fields without field-id and arrays without element-id."""
    if isinstance(t, list):
        for b in t:
            walk_avro(b, names, missing)
    elif isinstance(t, dict):
        if t.get("type") == "record":
            names.append(t["name"])
            for f in t["fields"]:
                if "field-id" not in f:
                    missing.append(f["name"])
                walk_avro(f["type"], names, missing)
        elif t.get("type") == "array":
            if t.get("logicalType") != "map" and "element-id" not in t:
                missing.append("array")
            walk_avro(t["items"], names, missing)


@pytest.mark.parametrize("fv,codec", [(2, "deflate"), (2, "null"), (1, "deflate"), (2, "zstandard")])
def test_pyiceberg_reads_floe(tool, tmp_path, fv, codec):
    desc, mf_out = write_floe(tool, tmp_path, fv, codec)
    io = PyArrowFileIO()
    lists = list(read_manifest_list(io.new_input(str(tmp_path / "snap-77.avro"))))
    assert len(lists) == 1
    mf = lists[0]
    assert mf.manifest_path == str(tmp_path / "floe-m0.avro")
    assert mf.manifest_length == (tmp_path / "floe-m0.avro").stat().st_size == mf_out["manifest_length"]
    assert mf.partition_spec_id == 0
    assert mf.added_snapshot_id == 77
    assert mf.added_files_count == 4 and mf.existing_files_count == 0 and mf.deleted_files_count == 0
    assert mf.added_rows_count == 10 + 11 + 12 + 13
    if fv == 2:
        assert mf.sequence_number == 5 and mf.min_sequence_number == 5
    summ = mf.partitions
    assert len(summ) == 4
    assert summ[0].contains_null is True and summ[0].lower_bound == b"a" and summ[0].upper_bound == "é".encode()
    assert summ[1].contains_null is False
    assert summ[1].lower_bound == le(19000, 4) and summ[1].upper_bound == le(19003, 4)
    assert summ[2].lower_bound == le(0, 4) and summ[2].upper_bound == le(3, 4)
    assert summ[3].lower_bound == (-775).to_bytes(2, "big", signed=True)
    assert summ[3].upper_bound == (125).to_bytes(1, "big", signed=True)

    entries = mf.fetch_manifest_entry(io, discard_deleted=False)
    assert len(entries) == 4
    for i, e in enumerate(entries):
        src = desc["entries"][i]["data_file"]
        assert e.status == ManifestEntryStatus.ADDED
        assert e.snapshot_id == 77
        if fv == 2:
            assert e.sequence_number == 5 and e.file_sequence_number == 5
        df = e.data_file
        assert df.file_path == src["file_path"]
        assert df.file_format == FileFormat.PARQUET
        assert df.record_count == src["record_count"] and df.file_size_in_bytes == src["file_size_in_bytes"]
        p = df.partition
        assert p[0] == src["partition"][0]
        assert p[1] in (src["partition"][1], datetime.date(1970, 1, 1) + datetime.timedelta(days=src["partition"][1]))
        assert p[2] == src["partition"][2]
        assert Decimal(p[3]) == Decimal(src["partition"][3]).scaleb(-2)
        assert df.column_sizes == {int(k): v for k, v in src["column_sizes"].items()}
        assert df.value_counts == {int(k): v for k, v in src["value_counts"].items()}
        assert df.null_value_counts == {int(k): v for k, v in src["null_value_counts"].items()}
        assert df.lower_bounds == {int(k): bytes.fromhex(v) for k, v in src["lower_bounds"].items()}
        assert df.upper_bounds == {int(k): bytes.fromhex(v) for k, v in src["upper_bounds"].items()}
        assert df.split_offsets == [4]
        assert df.sort_order_id == src["sort_order_id"]

    # fastavro: Java's record names and ids everywhere
    for path, top in [(tmp_path / "floe-m0.avro", "manifest_entry"), (tmp_path / "snap-77.avro", "manifest_file")]:
        with open(path, "rb") as f:
            r = fastavro.reader(f)
            recs = list(r)
            meta = r.metadata
        assert meta["avro.codec"] == codec
        schema = json.loads(meta["avro.schema"])
        names, missing = [], []
        walk_avro(schema, names, missing)
        assert not missing
        assert schema["name"] == top
        if top == "manifest_entry":
            want = ["manifest_entry", "r2", "r102", "k117_v118", "k119_v120", "k121_v122", "k138_v139",
                    "k126_v127", "k129_v130"]
            assert names == want
            assert meta["format-version"] == str(fv) and meta["partition-spec-id"] == "0"
            assert json.loads(meta["partition-spec"]) == [
                {"name": f["name"], "transform": f["transform"], "source-id": f["source-id"],
                 "field-id": f["field-id"]} for f in SPEC_JSON["fields"]]
            assert json.loads(meta["schema"])["fields"] == SCHEMA_JSON["fields"]
            assert (meta.get("content") == "data") == (fv == 2)
            r102 = next(f for f in schema["fields"][-1]["type"]["fields"] if f["name"] == "partition")["type"]
            assert [f["field-id"] for f in r102["fields"]] == [1000, 1001, 1002, 1003]
            assert r102["fields"][1]["type"] == ["null", {"type": "int", "logicalType": "date"}]
            assert r102["fields"][3]["type"][1]["name"] == "decimal_9_2"
            assert recs[0]["data_file"]["partition"]["name"] == "a"
        else:
            assert names == ["manifest_file", "r508"]
            assert meta["snapshot-id"] == "77" and meta["parent-snapshot-id"] == "null"
            assert meta["format-version"] == str(fv)
            assert (meta.get("sequence-number") == "5") == (fv == 2)


def pyiceberg_write(tmp_path, fv):
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()),
                    NestedField(3, "ts", TimestamptzType()), NestedField(4, "price", DecimalType(9, 2)),
                    schema_id=0)
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"),
                         PartitionField(3, 1001, DayTransform(), "ts_day"),
                         PartitionField(1, 1002, BucketTransform(16), "id_bucket"),
                         PartitionField(4, 1003, IdentityTransform(), "price"), spec_id=0)
    io = PyArrowFileIO()
    files = []
    for i in range(3):
        files.append(DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=f"s3://b/data/p{i}.parquet", file_format=FileFormat.PARQUET,
            partition=Record(None if i == 2 else f"n{i}", 19000 + i, i, Decimal("1.25") * (i - 1)),
            record_count=5 + i, file_size_in_bytes=500 + i,
            column_sizes={1: 10, 2: 20 + i}, value_counts={1: 5 + i}, null_value_counts={1: 0},
            nan_value_counts={}, lower_bounds={1: le(i, 8)}, upper_bounds={1: le(9 + i, 8)},
            split_offsets=[4], sort_order_id=0))
    mpath = tmp_path / f"py-m-v{fv}.avro"
    with write_manifest(fv, spec, schema, io.new_output(str(mpath)), 42, "deflate") as w:
        for f in files:
            w.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=42, data_file=f))
    mf = w.to_manifest_file()
    lpath = tmp_path / f"py-list-v{fv}.avro"
    with write_manifest_list(fv, io.new_output(str(lpath)), 42, 41, 3, "deflate") as lw:
        lw.add_manifests([mf])
    return files, mpath, lpath


def check_same_list(ours, theirs):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o["manifest_path"] == t.manifest_path
        assert o["manifest_length"] == t.manifest_length
        assert o["partition_spec_id"] == t.partition_spec_id
        assert o["content"] == int(t.content)
        assert o["sequence_number"] == t.sequence_number
        assert o["min_sequence_number"] == t.min_sequence_number
        assert o["added_snapshot_id"] == t.added_snapshot_id
        for k in ["added_files_count", "existing_files_count", "deleted_files_count",
                  "added_rows_count", "existing_rows_count", "deleted_rows_count"]:
            assert o[k] == getattr(t, k), k
        if t.partitions is None:
            assert o["partitions"] in (None, [])
        else:
            assert len(o["partitions"]) == len(t.partitions)
            for a, b in zip(o["partitions"], t.partitions):
                assert a["contains_null"] == b.contains_null
                assert a["contains_nan"] == b.contains_nan
                assert a["lower_bound"] == (b.lower_bound.hex() if b.lower_bound is not None else None)
                assert a["upper_bound"] == (b.upper_bound.hex() if b.upper_bound is not None else None)


def check_same_entries(ours, theirs):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o["status"] == int(t.status)
        assert o["snapshot_id"] == t.snapshot_id
        assert o["sequence_number"] == t.sequence_number
        assert o["file_sequence_number"] == t.file_sequence_number
        d, df = o["data_file"], t.data_file
        assert d["file_path"] == df.file_path
        assert d["file_format"].upper() == str(df.file_format.value).upper()
        assert d["record_count"] == df.record_count and d["file_size_in_bytes"] == df.file_size_in_bytes
        for k in ["column_sizes", "value_counts", "null_value_counts", "nan_value_counts"]:
            assert {int(a): b for a, b in d[k].items()} == (getattr(df, k) or {}), k
        for k in ["lower_bounds", "upper_bounds"]:
            assert {int(a): bytes.fromhex(b) for a, b in d[k].items()} == (getattr(df, k) or {}), k
        assert d["split_offsets"] == df.split_offsets
        assert len(d["partition"]) == len(df.partition)
        for v, kind, pv in zip(d["partition"], d["partition_kinds"], df.partition):
            if pv is None:
                assert v is None
            elif kind == "decimal":
                assert int.from_bytes(bytes.fromhex(v), "big", signed=True) == int(pv * 100)  # scale 2
            elif kind == "date":
                assert v == pv or datetime.date(1970, 1, 1) + datetime.timedelta(days=v) == pv
            elif kind in ("timestamp", "timestamptz"):
                if isinstance(pv, datetime.datetime):
                    epoch = datetime.datetime(1970, 1, 1, tzinfo=pv.tzinfo)
                    pv = (pv - epoch) // datetime.timedelta(microseconds=1)
                assert v == pv
            else:
                assert v == pv, (kind, v, pv)


@pytest.mark.parametrize("fv", [1, 2])
def test_floe_reads_pyiceberg(tool, tmp_path, fv):
    files, mpath, lpath = pyiceberg_write(tmp_path, fv)
    io = PyArrowFileIO()
    theirs = list(read_manifest_list(io.new_input(str(lpath))))
    ours = run(tool, "read-list", lpath)
    check_same_list(ours, theirs)
    mf = theirs[0]
    entries = mf.fetch_manifest_entry(io, discard_deleted=False)
    got = run(tool, "read-manifest", mpath, mf.sequence_number, mf.added_snapshot_id)
    check_same_entries(got, entries)
    assert [e["data_file"]["partition_kinds"] for e in got][0] == ["string", "date", "int", "decimal"]


def local_catalog(tmp_path):
    """PyIceberg's SqlCatalog on sqlite when SQLAlchemy is installed; otherwise a minimal
    in-process catalog over PyIceberg's own staging and metadata writing (same table files)."""
    wh = tmp_path / "warehouse"
    wh.mkdir()
    try:
        from pyiceberg.catalog.sql import SqlCatalog
        cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{wh}")
        cat.create_namespace("ns")
        return cat
    except ImportError:
        pass
    from pyiceberg.catalog import MetastoreCatalog
    from pyiceberg.serializers import FromInputFile
    from pyiceberg.table import CommitTableResponse, Table

    class LocalCatalog(MetastoreCatalog):
        def __init__(self):
            super().__init__("local", warehouse=f"file://{wh}")
            self.locations = {}

        def create_table(self, identifier, schema, location=None, partition_spec=PartitionSpec(),
                         sort_order=None, properties={}):
            kw = {} if sort_order is None else {"sort_order": sort_order}
            staged = self._create_staged_table(identifier, schema, location, partition_spec,
                                               properties=properties, **kw)
            self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
            self.locations[identifier] = staged.metadata_location
            return self.load_table(identifier)

        def load_table(self, identifier):
            loc = self.locations[identifier]
            io = self._load_file_io(location=loc)
            md = FromInputFile.table_metadata(io.new_input(loc))
            return Table(tuple(identifier.split(".")), md, loc, io, self)

        def commit_table(self, table, requirements, updates):
            ident = ".".join(table.name())
            staged = self._update_and_stage_table(self.load_table(ident), table.name(), requirements, updates)
            self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
            self.locations[ident] = staged.metadata_location
            return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)

        def load_namespace_properties(self, namespace):
            return {}

    for name in list(LocalCatalog.__abstractmethods__):
        setattr(LocalCatalog, name, lambda self, *a, **k: None)
    LocalCatalog.__abstractmethods__ = frozenset()
    return LocalCatalog()


def test_floe_reads_real_table(tool, tmp_path):
    pa = pytest.importorskip("pyarrow")
    cat = local_catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType()),
                    NestedField(3, "ts", TimestamptzType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"),
                         PartitionField(3, 1001, IdentityTransform(), "ts"),
                         PartitionField(1, 1002, IdentityTransform(), "id"))  # time/bucket transforms of arrow data need pyiceberg_core
    t = cat.create_table("ns.t", schema=schema, partition_spec=spec)
    utc = datetime.timezone.utc
    for k in range(2):
        tbl = pa.table({
            "id": pa.array([1 + k, 2, 3, None], pa.int64()),
            "name": pa.array(["x", "y", None, "x"], pa.string()),
            "ts": pa.array([datetime.datetime(2024, 3, 15, 10, tzinfo=utc), None,
                            datetime.datetime(1969, 12, 31, 23, tzinfo=utc),
                            datetime.datetime(2024, 3, 16, tzinfo=utc)], pa.timestamp("us", tz="UTC"))})
        t.append(tbl)
    t = cat.load_table("ns.t")
    snap = t.current_snapshot()
    theirs = snap.manifests(t.io)
    ours = run(tool, "read-list", snap.manifest_list.replace("file://", ""))
    check_same_list(ours, theirs)
    assert len(ours) == 2
    for mf in theirs:
        entries = mf.fetch_manifest_entry(t.io, discard_deleted=False)
        got = run(tool, "read-manifest", mf.manifest_path.replace("file://", ""), mf.sequence_number,
                  mf.added_snapshot_id)
        check_same_entries(got, entries)
        assert all(e["data_file"]["partition_kinds"][1] in ("timestamptz", "null") for e in got)
