"""The source document's Action table as a matrix: each of its 32 actions
(a call that needs it: S3 Tables API through boto3; GetTableData /
PutTableData on the S3 data plane; and the Iceberg REST operations that need
a single action, as raw SigV4-signed requests) made by each kind of caller:

  root           the owning account's root, no policy: allowed
  no_policy      a user of the owning account without any policy: denied
  identity       a user whose identity policy allows exactly it (plus
                 CreateTable for PutTableEncryption, which CreateTable with an
                 encryptionConfiguration asks): allowed
  resource_only  a user without identity policy, named by the table-bucket
                 policies (and the table's policy) of the owning account:
                 allowed, but for CreateTableBucket / ListTableBuckets, which
                 act on no existing resource: denied
  cross_both     a user of another account, allowed by its identity policy
                 and by the owner's resource policies, for the actions the
                 document allows across accounts: allowed
  cross_never    the same, for the actions the document says are never
                 cross-account: denied whatever the policies say
                 (CreateTableBucket / ListTableBuckets act in the caller's own
                 account: they succeed and the owner's account is untouched)
  explicit_deny  a user allowed s3tables:* and denied exactly it: denied

Every denial is a 403 (AccessDeniedException / AccessDenied /
ForbiddenException) and the call changed nothing, as root sees."""
import json
import uuid

import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from urllib.parse import quote

from conftest import REGION
from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, s3_client
from rest_fixtures import load_rest_catalog, s3tables_client
from tables_fixtures import make_s3tables_client
from test_iam_enforce import ROWS, SCHEMA

NOBODY = "arn:aws:iam::%s:user/nobody-at-all" % ACCOUNT


def uid(p):
    return "%s%s" % (p, uuid.uuid4().hex[:8])


def nobody_policy(resource, sid, w=None):
    """A resource policy with a statement for nobody (sid), keeping the
    matrix's current grant (w["grant"]) so that setting it up does not undo it."""
    st = [{"Sid": sid, "Effect": "Allow", "Principal": {"AWS": NOBODY}, "Action": "s3tables:GetTable",
           "Resource": resource}]
    return json.dumps({"Version": "2012-10-17", "Statement": st + grant_statements(w, resource)})


def grant_statements(w, resource):
    """The resource_only / cross columns' grant: the caller w["grant"] =
    (principal ARN, actions) on resource (a bucket's ARN covers its tables)."""
    if not w or not w.get("grant"):
        return []
    who, acts = w["grant"]
    res = [resource] if "/table/" in resource else [resource, resource + "/table/*"]
    return [{"Sid": "Grant", "Effect": "Allow", "Principal": {"AWS": who}, "Action": acts, "Resource": res}]


def put_grants(w, buckets):
    for b in buckets:
        w["s3t"].put_table_bucket_policy(tableBucketARN=b, resourcePolicy=json.dumps({
            "Version": "2012-10-17", "Statement": grant_statements(w, b)}))
    w["s3t"].put_table_policy(tableBucketARN=w["B"], namespace=w["ns"], name="t", resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": grant_statements(w, w["tarn"])}))


def drop_grants(w):
    w["grant"] = None
    for b in (w["B"], w["PB"]):
        try:
            w["s3t"].delete_table_bucket_policy(tableBucketARN=b)
        except ClientError:
            pass
    try:
        w["s3t"].delete_table_policy(tableBucketARN=w["B"], namespace=w["ns"], name="t")
    except ClientError:
        pass


def kms(n):
    return {"sseAlgorithm": "aws:kms", "kmsKeyArn": "arn:aws:kms:%s:%s:key/%s" % (REGION, ACCOUNT, n)}


@pytest.fixture(scope="module")
def mx(floe):
    """Root's world: bucket B with namespace ns and an Iceberg table t (one
    append), and bucket PB (no tables) for bucket-level settings."""
    s3t = s3tables_client(floe)
    b = s3t.create_table_bucket(name=uid("mx-"))["arn"]
    pb = s3t.create_table_bucket(name=uid("mxp-"))["arn"]
    cat = load_rest_catalog(floe, b, name=uid("mxroot"))
    ns = uid("ns_")
    cat.create_namespace(ns)
    cat.create_table((ns, "t"), SCHEMA).append(ROWS)
    t = s3t.get_table(tableBucketARN=b, namespace=ns, name="t")
    meta = s3t.get_table_metadata_location(tableBucketARN=b, namespace=ns, name="t")["metadataLocation"]
    wb, key = meta[len("s3://"):].split("/", 1)
    return {"s3t": s3t, "B": b, "PB": pb, "ns": ns, "tarn": t["tableARN"], "wb": wb, "mkey": key,
            "root_s3": s3_client(floe, *_root())}


def _root():
    from conftest import ACCESS_KEY, SECRET_KEY
    return ACCESS_KEY, SECRET_KEY


def gone(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    return False


class Caller:
    """A user's clients: boto3 s3tables, boto3 s3, raw signed Iceberg REST."""

    def __init__(self, floe, u, bucket_arn):
        self.floe, self.u, self.arn = floe, u, bucket_arn
        self.s3t = make_s3tables_client(floe.catalog_port, u.ak, u.sk)
        self.s3 = s3_client(floe, u.ak, u.sk)

    def rest(self, method, tail, body=None, config=False):
        base = "http://127.0.0.1:%d/iceberg/v1/" % self.floe.catalog_port
        url = base + ("config?warehouse=" + quote(self.arn, safe="") if config
                      else quote(self.arn, safe="") + "/" + tail)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {
            "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
        req = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(Credentials(self.u.ak, self.u.sk), "s3tables", REGION).add_auth(req)
        r = requests.request(method, url, data=data, headers=dict(req.headers.items()), timeout=30)
        if r.status_code >= 300:
            raise RestError(r)
        return r


class RestError(Exception):
    def __init__(self, r):
        super().__init__("%d %s" % (r.status_code, r.text))
        self.status = r.status_code
        self.type = r.json()["error"]["type"] if r.content and r.request.method != "HEAD" else ""


def _cases():
    """(action, extra actions the allowed user needs, setup(w) -> arg, call(c, w, arg), unchanged(w, arg))."""
    def new_ns(w):
        n = uid("d_")
        w["s3t"].create_namespace(tableBucketARN=w["B"], namespace=[n])
        return n

    def new_table(w):
        n = uid("d_")
        w["s3t"].create_table(tableBucketARN=w["B"], namespace=w["ns"], name=n, format="ICEBERG")
        return n

    def new_bucket(w):
        arn = w["s3t"].create_table_bucket(name=uid("mxd-"))["arn"]
        if w.get("grant"):
            put_grants(w, [arn])
        return arn

    def bucket_policy(w):
        sid = uid("S")
        w["s3t"].put_table_bucket_policy(tableBucketARN=w["PB"], resourcePolicy=nobody_policy(w["PB"], sid, w))
        return sid

    def table_policy(w):
        sid = uid("S")
        w["s3t"].put_table_policy(tableBucketARN=w["B"], namespace=w["ns"], name="t",
                                  resourcePolicy=nobody_policy(w["tarn"], sid, w))
        return sid

    def has_bucket_policy(w, sid):
        try:
            return sid in w["s3t"].get_table_bucket_policy(tableBucketARN=w["PB"])["resourcePolicy"]
        except ClientError:
            return False

    def has_table_policy(w, sid):
        try:
            return sid in w["s3t"].get_table_policy(tableBucketARN=w["B"], namespace=w["ns"],
                                                      name="t")["resourcePolicy"]
        except ClientError:
            return False

    def bucket_enc(w):
        n = uid("k")
        w["s3t"].put_table_bucket_encryption(tableBucketARN=w["PB"], encryptionConfiguration=kms(n))
        return n

    def enc_is(w, n):
        return w["s3t"].get_table_bucket_encryption(tableBucketARN=w["PB"])["encryptionConfiguration"].get(
            "kmsKeyArn", "").endswith("/" + n)

    def metaloc(w):
        r = w["s3t"].get_table_metadata_location(tableBucketARN=w["B"], namespace=w["ns"], name="t")
        return r["versionToken"], r["metadataLocation"]

    def snap_cfg(n):
        return {"status": "disabled", "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": n,
                                                                                 "maxSnapshotAgeHours": 48}}}

    def snap_now(w):
        c = w["s3t"].get_table_maintenance_configuration(tableBucketARN=w["B"], namespace=w["ns"], name="t")
        return c["configuration"].get("icebergSnapshotManagement", {}).get("settings", {}).get(
            "icebergSnapshotManagement", {}).get("minSnapshotsToKeep")

    def ufr_now(w):
        c = w["s3t"].get_table_bucket_maintenance_configuration(tableBucketARN=w["PB"])["configuration"]
        return c.get("icebergUnreferencedFileRemoval", {}).get("settings", {}).get(
            "icebergUnreferencedFileRemoval", {}).get("unreferencedDays")

    def ufr_cfg(n):
        return {"status": "disabled", "settings": {"icebergUnreferencedFileRemoval": {
            "unreferencedDays": n, "nonCurrentDays": 10}}}

    import random
    S = lambda c: c.s3t  # noqa: E731
    return [
        # table bucket level
        ("CreateTableBucket", [], lambda w: uid("mxn-"), lambda c, w, a: S(c).create_table_bucket(name=a),
         lambda w, a: a not in [b["name"] for b in w["s3t"].list_table_buckets(prefix="mxn-")["tableBuckets"]]),
        ("GetTableBucket", [], None, lambda c, w, a: S(c).get_table_bucket(tableBucketARN=w["B"]), None),
        ("ListTableBuckets", [], None, lambda c, w, a: S(c).list_table_buckets(), None),
        ("CreateNamespace", [], lambda w: uid("n_"),
         lambda c, w, a: S(c).create_namespace(tableBucketARN=w["B"], namespace=[a]),
         lambda w, a: gone(w["s3t"].get_namespace, tableBucketARN=w["B"], namespace=a)),
        ("GetNamespace", [], None, lambda c, w, a: S(c).get_namespace(tableBucketARN=w["B"], namespace=w["ns"]), None),
        ("ListNamespaces", [], None, lambda c, w, a: S(c).list_namespaces(tableBucketARN=w["B"]), None),
        ("DeleteNamespace", [], new_ns, lambda c, w, a: S(c).delete_namespace(tableBucketARN=w["B"], namespace=a),
         lambda w, a: not gone(w["s3t"].get_namespace, tableBucketARN=w["B"], namespace=a)),
        ("DeleteTableBucket", [], new_bucket, lambda c, w, a: S(c).delete_table_bucket(tableBucketARN=a),
         lambda w, a: not gone(w["s3t"].get_table_bucket, tableBucketARN=a)),
        ("PutTableBucketPolicy", [], lambda w: uid("S"),
         lambda c, w, a: S(c).put_table_bucket_policy(tableBucketARN=w["PB"], resourcePolicy=nobody_policy(w["PB"], a)),
         lambda w, a: not has_bucket_policy(w, a)),
        ("GetTableBucketPolicy", [], bucket_policy,
         lambda c, w, a: a in S(c).get_table_bucket_policy(tableBucketARN=w["PB"])["resourcePolicy"] or
         pytest.fail("policy"), None),
        ("DeleteTableBucketPolicy", [], bucket_policy,
         lambda c, w, a: S(c).delete_table_bucket_policy(tableBucketARN=w["PB"]), has_bucket_policy),
        ("GetTableBucketMaintenanceConfiguration", [], None,
         lambda c, w, a: S(c).get_table_bucket_maintenance_configuration(tableBucketARN=w["B"]), None),
        ("PutTableBucketMaintenanceConfiguration", [], lambda w: random.randint(2, 900),
         lambda c, w, a: S(c).put_table_bucket_maintenance_configuration(
             tableBucketARN=w["PB"], type="icebergUnreferencedFileRemoval", value=ufr_cfg(a)),
         lambda w, a: ufr_now(w) != a),
        ("PutTableBucketEncryption", [], lambda w: uid("k"),
         lambda c, w, a: S(c).put_table_bucket_encryption(tableBucketARN=w["PB"], encryptionConfiguration=kms(a)),
         lambda w, a: not enc_is(w, a)),
        ("GetTableBucketEncryption", [], None,
         lambda c, w, a: S(c).get_table_bucket_encryption(tableBucketARN=w["B"]), None),
        ("DeleteTableBucketEncryption", [], bucket_enc,
         lambda c, w, a: S(c).delete_table_bucket_encryption(tableBucketARN=w["PB"]), enc_is),
        # table level
        ("GetTableMaintenanceConfiguration", [], None, lambda c, w, a: S(c).get_table_maintenance_configuration(
            tableBucketARN=w["B"], namespace=w["ns"], name="t"), None),
        ("PutTableMaintenanceConfiguration", [], lambda w: random.randint(2, 900),
         lambda c, w, a: S(c).put_table_maintenance_configuration(
             tableBucketARN=w["B"], namespace=w["ns"], name="t", type="icebergSnapshotManagement",
             value=snap_cfg(a)), lambda w, a: snap_now(w) != a),
        ("PutTablePolicy", [], lambda w: uid("S"),
         lambda c, w, a: S(c).put_table_policy(tableBucketARN=w["B"], namespace=w["ns"], name="t",
                                               resourcePolicy=nobody_policy(w["tarn"], a)),
         lambda w, a: not has_table_policy(w, a)),
        ("GetTablePolicy", [], table_policy,
         lambda c, w, a: a in S(c).get_table_policy(tableBucketARN=w["B"], namespace=w["ns"],
                                                    name="t")["resourcePolicy"] or pytest.fail("policy"), None),
        ("DeleteTablePolicy", [], table_policy,
         lambda c, w, a: S(c).delete_table_policy(tableBucketARN=w["B"], namespace=w["ns"], name="t"),
         has_table_policy),
        ("CreateTable", [], lambda w: uid("c_"),
         lambda c, w, a: S(c).create_table(tableBucketARN=w["B"], namespace=w["ns"], name=a, format="ICEBERG"),
         lambda w, a: gone(w["s3t"].get_table, tableBucketARN=w["B"], namespace=w["ns"], name=a)),
        ("GetTable", [], None,
         lambda c, w, a: S(c).get_table(tableBucketARN=w["B"], namespace=w["ns"], name="t"), None),
        ("GetTableMetadataLocation", [], None, lambda c, w, a: S(c).get_table_metadata_location(
            tableBucketARN=w["B"], namespace=w["ns"], name="t"), None),
        ("ListTables", [], None, lambda c, w, a: S(c).list_tables(tableBucketARN=w["B"], namespace=w["ns"]), None),
        ("RenameTable", [], new_table,
         lambda c, w, a: S(c).rename_table(tableBucketARN=w["B"], namespace=w["ns"], name=a, newName=a + "_r"),
         lambda w, a: not gone(w["s3t"].get_table, tableBucketARN=w["B"], namespace=w["ns"], name=a)),
        ("UpdateTableMetadataLocation", [], metaloc,
         lambda c, w, a: S(c).update_table_metadata_location(tableBucketARN=w["B"], namespace=w["ns"], name="t",
                                                             versionToken=a[0], metadataLocation=a[1]),
         lambda w, a: metaloc(w) == a),
        ("GetTableData", [], None,
         lambda c, w, a: c.s3.get_object(Bucket=w["wb"], Key=w["mkey"])["Body"].read(), None),
        ("PutTableData", [], lambda w: "data/" + uid("mx-"),
         lambda c, w, a: c.s3.put_object(Bucket=w["wb"], Key=a, Body=b"x"),
         lambda w, a: "Contents" not in w["root_s3"].list_objects_v2(Bucket=w["wb"], Prefix=a)),
        ("GetTableEncryption", [], None,
         lambda c, w, a: S(c).get_table_encryption(tableBucketARN=w["B"], namespace=w["ns"], name="t"), None),
        ("PutTableEncryption", ["CreateTable"], lambda w: uid("e_"),
         lambda c, w, a: S(c).create_table(tableBucketARN=w["B"], namespace=w["ns"], name=a, format="ICEBERG",
                                           encryptionConfiguration={"sseAlgorithm": "AES256"}),
         lambda w, a: gone(w["s3t"].get_table, tableBucketARN=w["B"], namespace=w["ns"], name=a)),
        ("DeleteTable", [], new_table,
         lambda c, w, a: S(c).delete_table(tableBucketARN=w["B"], namespace=w["ns"], name=a),
         lambda w, a: not gone(w["s3t"].get_table, tableBucketARN=w["B"], namespace=w["ns"], name=a)),
        # Iceberg REST operations needing one action (raw signed requests)
        ("GetTableBucket", [], None, lambda c, w, a: c.rest("GET", "", config=True), None),
        ("ListNamespaces", [], None, lambda c, w, a: c.rest("GET", "namespaces"), None),
        ("CreateNamespace", [], lambda w: uid("rn_"),
         lambda c, w, a: c.rest("POST", "namespaces", {"namespace": [a], "properties": {}}),
         lambda w, a: gone(w["s3t"].get_namespace, tableBucketARN=w["B"], namespace=a)),
        ("GetNamespace", [], None, lambda c, w, a: c.rest("GET", "namespaces/" + w["ns"]), None),
        ("DeleteNamespace", [], new_ns, lambda c, w, a: c.rest("DELETE", "namespaces/" + a),
         lambda w, a: not gone(w["s3t"].get_namespace, tableBucketARN=w["B"], namespace=a)),
        ("ListTables", [], None, lambda c, w, a: c.rest("GET", "namespaces/%s/tables" % w["ns"]), None),
        ("GetTable", [], None, lambda c, w, a: c.rest("HEAD", "namespaces/%s/tables/t" % w["ns"]), None),
        ("RenameTable", [], new_table, lambda c, w, a: c.rest("POST", "tables/rename", {
            "source": {"namespace": [w["ns"]], "name": a}, "destination": {"namespace": [w["ns"]], "name": a + "_r"}}),
         lambda w, a: not gone(w["s3t"].get_table, tableBucketARN=w["B"], namespace=w["ns"], name=a)),
        ("DeleteTable", [], new_table, lambda c, w, a: c.rest("DELETE", "namespaces/%s/tables/%s" % (w["ns"], a)),
         lambda w, a: not gone(w["s3t"].get_table, tableBucketARN=w["B"], namespace=w["ns"], name=a)),
    ]


DOC_ACTIONS = {
    "CreateTableBucket", "GetTableBucket", "ListTableBuckets", "CreateNamespace", "GetNamespace", "ListNamespaces",
    "DeleteNamespace", "DeleteTableBucket", "PutTableBucketPolicy", "GetTableBucketPolicy", "DeleteTableBucketPolicy",
    "GetTableBucketMaintenanceConfiguration", "PutTableBucketMaintenanceConfiguration", "PutTableBucketEncryption",
    "GetTableBucketEncryption", "DeleteTableBucketEncryption", "GetTableMaintenanceConfiguration",
    "PutTableMaintenanceConfiguration", "PutTablePolicy", "GetTablePolicy", "DeleteTablePolicy", "CreateTable",
    "GetTable", "GetTableMetadataLocation", "ListTables", "RenameTable", "UpdateTableMetadataLocation",
    "GetTableData", "PutTableData", "GetTableEncryption", "PutTableEncryption", "DeleteTable",
}


def _denied(e):
    if isinstance(e, RestError):
        return e.status == 403 and (e.type in ("ForbiddenException", ""))
    if isinstance(e, ClientError):
        r = e.response
        return r["ResponseMetadata"]["HTTPStatusCode"] == 403 and r["Error"]["Code"] in (
            "AccessDeniedException", "AccessDenied")
    return False


# The document's "Cross-Account Access" column: the actions it says are "Not allowed".
NEVER_CROSS = {
    "CreateTableBucket", "ListTableBuckets", "PutTableBucketPolicy", "GetTableBucketPolicy",
    "DeleteTableBucketPolicy", "PutTableBucketEncryption", "GetTableBucketEncryption",
    "DeleteTableBucketEncryption", "PutTablePolicy", "GetTablePolicy", "DeleteTablePolicy",
    "GetTableEncryption", "PutTableEncryption",
}
NO_RESOURCE = {"CreateTableBucket", "ListTableBuckets"}  # no resource policy can name what they act on
COLUMNS = ["root", "no_policy", "identity", "resource_only", "cross_both", "cross_never", "explicit_deny"]


class Keys:
    def __init__(self, ak, sk, name=None, arn=None):
        self.ak, self.sk, self.name, self.arn = ak, sk, name, arn


@pytest.fixture(scope="module")
def other_account(floe):
    """Another account (floe admin) with one user and its key."""
    from test_iam_accounts import Account
    a = Account(floe)
    name, ak, sk, arn = a.user()
    return a, Keys(ak, sk, name, arn)


def _expect(col, action, extra):
    """'allow', 'deny' or 'own' (runs in the caller's own account), or None: not this column's."""
    acts = [action] + extra
    never = any(x in NEVER_CROSS for x in acts)
    if col in ("root", "identity"):
        return "allow"
    if col in ("no_policy", "explicit_deny"):
        return "deny"
    if col == "resource_only":
        return "deny" if action in NO_RESOURCE else "allow"
    if col == "cross_both":
        return None if never else "allow"
    if col == "cross_never":
        return None if not never else ("own" if action in NO_RESOURCE else "deny")
    raise AssertionError(col)


@pytest.mark.parametrize("col", COLUMNS)
def test_every_action_of_the_document(floe, mx, new_user, other_account, col):
    from conftest import ACCESS_KEY, SECRET_KEY
    cases = _cases()
    assert {c[0] for c in cases} == DOC_ACTIONS  # the table, whole
    assert NEVER_CROSS < DOC_ACTIONS
    if col == "root":
        who = Keys(ACCESS_KEY, SECRET_KEY)
    elif col.startswith("cross"):
        acct, who = other_account
    else:
        who = new_user()
    c = Caller(floe, who, mx["B"])
    failures, ran = [], 0
    for action, extra, setup, call, unchanged in cases:
        expect = _expect(col, action, extra)
        if expect is None:
            continue
        ran += 1
        acts = ["s3tables:" + a for a in [action] + extra]
        if col == "identity":
            who.put(acts)
        elif col == "explicit_deny":
            who.iam.put_user_policy(UserName=who.name, PolicyName="p", PolicyDocument=json.dumps({
                "Version": "2012-10-17", "Statement": [
                    {"Effect": "Allow", "Action": ["s3tables:*"], "Resource": "*"},
                    {"Effect": "Deny", "Action": "s3tables:" + action, "Resource": "*"}]}))
        elif col in ("resource_only", "cross_both", "cross_never"):
            mx["grant"] = (who.arn, acts)
            put_grants(mx, [mx["B"], mx["PB"]])
            if col != "resource_only":
                acct.iam.put_user_policy(UserName=who.name, PolicyName="p", PolicyDocument=json.dumps({
                    "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": acts, "Resource": "*"}]}))
        try:
            arg = setup(mx) if setup else None
            try:
                out = call(c, mx, arg)
                if expect == "deny":
                    failures.append("%s: it succeeded" % action)
                elif expect == "own":
                    if action == "ListTableBuckets":
                        names = [b["arn"] for b in out["tableBuckets"]]
                        if mx["B"] in names or mx["PB"] in names:
                            failures.append("%s: listed the other account's buckets" % action)
                    elif unchanged and not unchanged(mx, arg):
                        failures.append("%s: acted in the other account" % action)
            except Exception as e:  # noqa: BLE001
                if expect != "deny":
                    failures.append("%s %s: %r" % (action, expect, e))
                elif not _denied(e):
                    failures.append("%s denied: %r" % (action, e))
                elif unchanged and not unchanged(mx, arg):
                    failures.append("%s denied: it changed something" % action)
        finally:
            if col in ("resource_only", "cross_both", "cross_never"):
                drop_grants(mx)
    assert ran and not failures, "%s:\n%s" % (col, "\n".join(failures))


def test_create_with_encryption_needs_the_encryption_action(floe, mx, new_user):
    """CreateTableBucket / CreateTable with an encryptionConfiguration set the
    encryption too: PutTableBucketEncryption / PutTableEncryption are needed."""
    u = new_user()
    c = Caller(floe, u, mx["B"])
    u.put(["s3tables:CreateTableBucket", "s3tables:CreateTable"])
    name = uid("mxe-")
    with pytest.raises(ClientError) as ei:
        c.s3t.create_table_bucket(name=name, encryptionConfiguration={"sseAlgorithm": "AES256"})
    assert _denied(ei.value) and "PutTableBucketEncryption" in str(ei.value)
    assert name not in [b["name"] for b in mx["s3t"].list_table_buckets(prefix="mxe-")["tableBuckets"]]
    with pytest.raises(ClientError) as ei:
        c.s3t.create_table(tableBucketARN=mx["B"], namespace=mx["ns"], name="enc_t", format="ICEBERG",
                           encryptionConfiguration={"sseAlgorithm": "AES256"})
    assert _denied(ei.value) and "PutTableEncryption" in str(ei.value)
    c.s3t.create_table(tableBucketARN=mx["B"], namespace=mx["ns"], name="plain_t", format="ICEBERG")
    u.put(["s3tables:CreateTableBucket", "s3tables:PutTableBucketEncryption"])
    c.s3t.create_table_bucket(name=name, encryptionConfiguration={"sseAlgorithm": "AES256"})
