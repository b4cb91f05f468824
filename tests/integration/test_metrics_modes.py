"""Iceberg metrics modes (write.metadata.metrics.*) honoured by `floe append`: tables
created by PyIceberg with the properties, appended by floe, and the data files' metrics
maps read back through PyIceberg (none = absent from every map, counts = sizes and
counts without bounds, truncate(N) = bounds cut to N code points with the upper bound
incremented, full = exact bounds, max-inferred-column-defaults, sort-order promotion)."""
import pytest

from rest_fixtures import load_rest_catalog, table_bucket, s3tables, unique  # noqa: F401
from test_append_scan import SCHEMA, append, make_rows

pytest.importorskip("pyarrow")
from pyiceberg.table.sorting import SortField, SortOrder  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402

P = "write.metadata.metrics."
LEAVES = ("id", "ts", "category", "amount", "score", "info.a", "info.b", "tags.element",
          "attrs.key", "attrs.value")


def rows(n=300):
    out = make_rows(0, n)
    for i, r in enumerate(out):
        if r["category"] is not None:
            r["category"] = "\u00f6" * 20 + "%03d" % (i % 7)   # 23 code points, 2-byte UTF-8
        if r["info"] is not None:
            r["info"]["b"] = "b\u00e9%d-long-suffix" % (i % 4)
    return out


def make_table(floe, arn, props, sort_order=None):
    cat = load_rest_catalog(floe, arn)
    ns = unique("mm")
    cat.create_namespace(ns)
    kw = {"sort_order": sort_order} if sort_order else {}
    cat.create_table("%s.events" % ns, schema=SCHEMA, properties=props, **kw)
    data = rows()
    append(floe, arn, ns, data)
    t = cat.load_table("%s.events" % ns)
    files = [task.file for task in t.scan().plan_files()]
    assert len(files) == 1
    ids = {n: t.schema().find_field(n).field_id for n in LEAVES}
    return files[0], ids, data


def maps(f):
    return {"column_sizes": f.column_sizes or {}, "value_counts": f.value_counts or {},
            "null_value_counts": f.null_value_counts or {}, "nan_value_counts": f.nan_value_counts or {},
            "lower_bounds": f.lower_bounds or {}, "upper_bounds": f.upper_bounds or {}}


def assert_none(f, fid):
    for name, m in maps(f).items():
        assert fid not in m, "%s has field %d" % (name, fid)


def assert_counts(f, fid, nan=False):
    m = maps(f)
    assert fid in m["column_sizes"] and fid in m["value_counts"] and fid in m["null_value_counts"]
    assert (fid in m["nan_value_counts"]) == nan
    assert fid not in m["lower_bounds"] and fid not in m["upper_bounds"]


def text(b):
    return bytes(b).decode("utf-8")


def cats(data):
    return sorted(r["category"] for r in data if r["category"] is not None)


def test_default_mode_is_truncate_16(floe, table_bucket):  # noqa: F811
    f, ids, data = make_table(floe, table_bucket, {})
    c = cats(data)
    assert text(f.lower_bounds[ids["category"]]) == c[0][:16]
    assert text(f.upper_bounds[ids["category"]]) == "\u00f6" * 15 + "\u00f7"
    assert ids["id"] in f.lower_bounds and ids["score"] in f.nan_value_counts


def test_counts_default_with_column_overrides(floe, table_bucket):  # noqa: F811
    f, ids, data = make_table(floe, table_bucket, {
        P + "default": "counts",
        P + "column.category": "full",
        P + "column.info.b": "truncate(2)",
        P + "column.score": "none",
        P + "column.id": "truncate(1)",
    })
    c = cats(data)
    assert text(f.lower_bounds[ids["category"]]) == c[0]
    assert text(f.upper_bounds[ids["category"]]) == c[-1]
    assert text(f.lower_bounds[ids["info.b"]]) == "b\u00e9"
    assert text(f.upper_bounds[ids["info.b"]]) == "b\u00ea"
    assert_none(f, ids["score"])
    # truncate(N) does not cut fixed-width values
    assert int.from_bytes(f.upper_bounds[ids["id"]], "little", signed=True) == len(data) - 1
    for n in ("ts", "amount", "info.a", "tags.element", "attrs.key", "attrs.value"):
        assert_counts(f, ids[n])
    assert f.value_counts[ids["ts"]] == len(data)


def test_full_default(floe, table_bucket):  # noqa: F811
    f, ids, data = make_table(floe, table_bucket, {P + "default": "full"})
    c = cats(data)
    assert text(f.lower_bounds[ids["category"]]) == c[0]
    assert text(f.upper_bounds[ids["category"]]) == c[-1]
    assert text(f.upper_bounds[ids["info.b"]]) == "b\u00e93-long-suffix"
    assert ids["tags.element"] not in f.lower_bounds  # never bounds inside lists


def test_max_inferred_column_defaults(floe, table_bucket):  # noqa: F811
    # 8 top-level columns > 3: id, ts, category get truncate(16), the rest none,
    # unless a column property says otherwise.
    f, ids, data = make_table(floe, table_bucket, {
        P + "max-inferred-column-defaults": "3",
        P + "column.tags.element": "counts",
    })
    for n in ("id", "ts", "category"):
        assert ids[n] in f.lower_bounds and ids[n] in f.value_counts
    assert text(f.upper_bounds[ids["category"]]) == "\u00f6" * 15 + "\u00f7"
    for n in ("amount", "score", "info.a", "info.b", "attrs.key", "attrs.value"):
        assert_none(f, ids[n])
    assert_counts(f, ids["tags.element"])


def test_sorted_column_promoted(floe, table_bucket):  # noqa: F811
    order = SortOrder(SortField(source_id=3, transform=IdentityTransform()))
    f, ids, data = make_table(floe, table_bucket, {P + "default": "none"}, sort_order=order)
    assert text(f.lower_bounds[ids["category"]]) == cats(data)[0][:16]
    for n in LEAVES:
        if n != "category":
            assert_none(f, ids[n])
