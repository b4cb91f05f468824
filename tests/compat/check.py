"""PyIceberg checks for tests/compat/run.sh.

  check.py count  CATALOG_URI S3_ENDPOINT ARN NS TABLE        -> prints total rows (0 if none)
  check.py verify CATALOG_URI S3_ENDPOINT ARN NS TABLE N      -> exit 0 iff exactly the N produced
                                                                events and the connector's summary keys
  check.py show   CATALOG_URI S3_ENDPOINT ARN NS TABLE        -> a query for people: rows per event type,
                                                                the first rows, the snapshots
Credentials: FLOE_ROOT_ACCESS_KEY_ID / FLOE_ROOT_SECRET_ACCESS_KEY; region COMPAT_REGION (us-east-1)."""
import json
import os
import sys

from events import expected_rows


def catalog(uri, s3, arn):
    from pyiceberg.catalog import load_catalog
    ak, sk = os.environ["FLOE_ROOT_ACCESS_KEY_ID"], os.environ["FLOE_ROOT_SECRET_ACCESS_KEY"]
    region = os.environ.get("COMPAT_REGION", "us-east-1")
    # PyIceberg's SigV4 adapter takes credentials from the boto3 default chain
    os.environ.update(AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION=region,
                      AWS_EC2_METADATA_DISABLED="true")
    return load_catalog("floe", **{
        "type": "rest", "uri": uri, "warehouse": arn,
        "rest.sigv4-enabled": "true", "rest.signing-name": "osstables", "rest.signing-region": region,
        "s3.endpoint": s3, "s3.access-key-id": ak, "s3.secret-access-key": sk, "s3.region": region,
        "s3.force-virtual-addressing": "false",
    })


def main():
    mode, uri, s3, arn, ns, name = sys.argv[1:7]
    tbl = catalog(uri, s3, arn).load_table((ns, name))
    snap = tbl.current_snapshot()
    if mode == "count":
        print(int(snap.summary.additional_properties.get("total-records", 0)) if snap else 0)
        return 0
    if mode == "show":
        arrow = tbl.scan().to_arrow()
        print("table %s.%s: %d rows, %d snapshots, schema: %s" % (
            ns, name, arrow.num_rows, len(tbl.metadata.snapshots),
            ", ".join("%s %s" % (f.name, f.field_type) for f in tbl.schema().fields)))
        print("rows per event_type (pyarrow group_by over a PyIceberg scan):")
        for r in sorted(arrow.group_by("event_type").aggregate([("event_id", "count")]).to_pylist(),
                        key=lambda r: r["event_type"]):
            print("  %-10s %d" % (r["event_type"], r["event_id_count"]))
        print("first rows by event_id:")
        for r in arrow.sort_by("event_id").slice(0, 5).to_pylist():
            print("  %s" % json.dumps(r, default=str))
        return 0
    n = int(sys.argv[7])
    errors = []
    arrow = tbl.scan().to_arrow()
    rows = arrow.to_pylist()
    print("verify: %d rows in table, %d produced, %d snapshots" % (len(rows), n, len(tbl.metadata.snapshots)))
    if len(rows) != n:
        errors.append("row count %d != %d" % (len(rows), n))
    want = expected_rows(n)
    got = {}
    dups = 0
    for r in rows:
        if r["event_id"] in got:
            dups += 1
        got[r["event_id"]] = r
    if dups:
        errors.append("%d duplicate event_id values" % dups)
    missing = [k for k in want if k not in got]
    if missing:
        errors.append("%d events missing, e.g. %s" % (len(missing), missing[:3]))
    extra = [k for k in got if k not in want]
    if extra:
        errors.append("%d unexpected event_id values, e.g. %s" % (len(extra), extra[:3]))
    wrong = [(k, got[k], v) for k, v in want.items() if k in got and {c: got[k].get(c) for c in v} != v]
    if wrong:
        errors.append("%d rows with wrong values, e.g. %s" % (len(wrong), wrong[:2]))
    # connector summary keys (sink.md §2.4)
    keys = set()
    for s in tbl.metadata.snapshots:
        props = s.summary.additional_properties
        keys |= set(props)
        print("snapshot %d op=%s added-records=%s %s" % (
            s.snapshot_id, s.summary.operation, props.get("added-records"),
            json.dumps({k: v for k, v in props.items() if k.startswith("kafka.connect.")}, sort_keys=True)))
    if not any(k.startswith("kafka.connect.offsets.") for k in keys):
        errors.append("no snapshot summary carries kafka.connect.offsets.<control-topic>.<group>")
    if os.environ.get("COMPAT_EVOLVE_FROM", "-1") != "-1":
        cols = [f.name for f in tbl.schema().fields]
        print("verify: schema %s" % tbl.schema())
        if "amount" not in cols:
            errors.append("evolve-schema: column amount not added (columns %s)" % cols)
    if "kafka.connect.commit-id" not in keys:
        errors.append("no snapshot summary carries kafka.connect.commit-id")
    for e in errors:
        print("verify: FAIL " + e)
    if not errors:
        print("verify: OK %d rows, values match, connector offset keys present" % n)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
