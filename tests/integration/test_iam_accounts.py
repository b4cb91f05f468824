"""Several accounts in one floe: `floe admin` makes accounts (with their root
keys) and first user keys on the running server's data directory; a table
bucket belongs to the account of whoever created it; each account sees its
own buckets and identities; across accounts both the bucket owner's resource
policy and the caller's identity policy must allow, and the source document's
never-cross-account actions are denied whatever the policies say."""
import json
import subprocess
import uuid

import pytest

import pgserver

from iam_fixtures import iam_client, policy, rest_catalog_as, s3_client
from rest_fixtures import load_rest_catalog, s3tables_client
from tables_fixtures import client_error, make_s3tables_client
from test_iam_enforce import ROWS, SCHEMA


def catalog_of(floe):
    """floe admin's flags for the server's catalog: its data dir's SQLite file,
    or the PostgreSQL database its nodes share (FLOE_TEST_CATALOG=postgres)."""
    where = ["--data-dir", floe.data_dir]
    if pgserver.wanted():
        where += ["--catalog-db", pgserver.database_for(getattr(floe, "shared_key", floe.data_dir))]
    return where


def admin(floe, *args):
    out = subprocess.run([floe_bin(), "admin", *args, *catalog_of(floe)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return dict(line.split(None, 1) for line in out.stdout.strip().splitlines())


def floe_bin():
    import os
    return os.environ["FLOE_BIN"]


class Account:
    def __init__(self, floe):
        a = admin(floe, "create-account")
        self.id, self.ak, self.sk = a["account"], a["access_key_id"], a["secret_access_key"].strip()
        self.floe = floe
        self.s3t = make_s3tables_client(floe.catalog_port, self.ak, self.sk)
        self.iam = iam_client(floe, self.ak, self.sk)

    def user(self, actions=None):
        name = "u-" + uuid.uuid4().hex[:6]
        k = admin(self.floe, "create-user-key", "--account", self.id, "--user", name)
        if actions:
            self.iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=policy(actions))
        return name, k["access_key_id"], k["secret_access_key"].strip(), k["arn"]


@pytest.fixture(scope="module")
def two(floe):
    return Account(floe), Account(floe)


def test_admin_accounts_and_isolation(floe, two):
    a, b = two
    assert a.id != b.id and len(a.id) == 12
    listing = subprocess.run([floe_bin(), "admin", "list-accounts", *catalog_of(floe)],
                             capture_output=True, text=True, timeout=60).stdout
    assert a.id in listing and b.id in listing and a.ak in listing and a.sk not in listing
    me = iam_client(floe, a.ak, a.sk, svc="sts").get_caller_identity()
    assert me["Account"] == a.id and me["Arn"] == "arn:aws:iam::%s:root" % a.id
    name = "tb-%s" % uuid.uuid4().hex[:8]
    bk = a.s3t.create_table_bucket(name=name)
    assert (":%s:bucket/%s" % (a.id, name)) in bk["arn"]
    assert a.s3t.get_table_bucket(tableBucketARN=bk["arn"])["ownerAccountId"] == a.id
    assert name in [x["name"] for x in a.s3t.list_table_buckets()["tableBuckets"]]
    assert name not in [x["name"] for x in b.s3t.list_table_buckets()["tableBuckets"]]
    assert name not in [x["name"] for x in s3tables_client(floe).list_table_buckets()["tableBuckets"]]
    # another account's root has no access without the owner's resource policy
    code, _, _ = client_error(b.s3t.get_table_bucket, tableBucketARN=bk["arn"])
    assert code == "AccessDeniedException"
    code, _, _ = client_error(s3tables_client(floe).get_table_bucket, tableBucketARN=bk["arn"])
    assert code == "AccessDeniedException"
    # the same bucket named in another account's ARN is not found there
    forged = bk["arn"].replace(":%s:" % a.id, ":%s:" % b.id)
    code, _, _ = client_error(b.s3t.get_table_bucket, tableBucketARN=forged)
    assert code == "AccessDeniedException"
    # identities are per account
    un, _, _, uarn = a.user()
    assert uarn == "arn:aws:iam::%s:user/%s" % (a.id, un)
    assert un in [u["UserName"] for u in a.iam.list_users()["Users"]]
    assert un not in [u["UserName"] for u in b.iam.list_users()["Users"]]
    code, _, _ = client_error(b.iam.get_user, UserName=un)
    assert code == "NoSuchEntity"


def test_cross_account_needs_both_sides(floe, two):
    a, b = two
    name = "x-%s" % uuid.uuid4().hex[:8]
    arn = a.s3t.create_table_bucket(name=name)["arn"]
    a.s3t.create_namespace(tableBucketARN=arn, namespace=["ns"])
    root = rest_catalog_as(floe, arn, a.ak, a.sk, name="a-" + uuid.uuid4().hex[:6])
    root.create_table(("ns", "t"), SCHEMA).append(ROWS)
    un, uak, usk, uarn = b.user(["s3tables:*"])
    uc = make_s3tables_client(floe.catalog_port, uak, usk)
    # the caller's identity allows, the owner's policy does not: denied
    code, _, _ = client_error(uc.get_table_bucket, tableBucketARN=arn)
    assert code == "AccessDeniedException"
    acts = ["s3tables:GetTableBucket", "s3tables:ListNamespaces", "s3tables:GetNamespace",
            "s3tables:GetTable", "s3tables:GetTableMetadataLocation", "s3tables:GetTableData",
            "s3tables:GetTableBucketPolicy", "s3tables:PutTableBucketPolicy"]
    a.s3t.put_table_bucket_policy(tableBucketARN=arn, resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": uarn}, "Action": acts,
                                                 "Resource": [arn, arn + "/table/*"]}]}))
    # both allow: allowed, on the control plane, the REST catalog and the data plane
    assert uc.get_table_bucket(tableBucketARN=arn)["arn"] == arn
    uc.list_namespaces(tableBucketARN=arn)
    cat = rest_catalog_as(floe, arn, uak, usk, name="b-" + uuid.uuid4().hex[:6])
    assert cat.load_table(("ns", "t")).scan().to_arrow().num_rows == 3
    loc = root.load_table(("ns", "t")).metadata_location
    wb, key = loc[5:].split("/", 1)
    us3 = s3_client(floe, uak, usk)
    us3.get_object(Bucket=wb, Key=key)
    code, _, _ = client_error(us3.put_object, Bucket=wb, Key="data/x", Body=b"x")
    assert code == "AccessDenied"
    # never cross-account, whatever both sides say
    code, _, _ = client_error(uc.get_table_bucket_policy, tableBucketARN=arn)
    assert code == "AccessDeniedException"
    code, _, _ = client_error(uc.put_table_bucket_policy, tableBucketARN=arn, resourcePolicy=policy(
        "s3tables:*", Principal="*"))
    assert code == "AccessDeniedException"
    # the identity side withdrawn: denied again
    b.iam.delete_user_policy(UserName=un, PolicyName="p")
    code, _, _ = client_error(uc.get_table_bucket, tableBucketARN=arn)
    assert code == "AccessDeniedException"
    code, _, _ = client_error(us3.get_object, Bucket=wb, Key=key)
    assert code == "AccessDenied"
    # an explicit deny on the owner's side wins over both allows
    b.iam.put_user_policy(UserName=un, PolicyName="p", PolicyDocument=policy("s3tables:*"))
    assert uc.get_table_bucket(tableBucketARN=arn)["arn"] == arn
    a.s3t.put_table_bucket_policy(tableBucketARN=arn, resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": uarn}, "Action": acts, "Resource": [arn, arn + "/table/*"]},
            {"Sid": "no", "Effect": "Deny", "Principal": {"AWS": b.id}, "Action": "s3tables:GetTableBucket",
             "Resource": arn}]}))
    code, _, _ = client_error(uc.get_table_bucket, tableBucketARN=arn)
    assert code == "AccessDeniedException"
    # a whole account may be trusted: the other root then has access
    a.s3t.put_table_bucket_policy(tableBucketARN=arn, resourcePolicy=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::%s:root" % b.id},
                                                 "Action": "s3tables:GetTableBucket", "Resource": arn}]}))
    assert b.s3t.get_table_bucket(tableBucketARN=arn)["arn"] == arn
    # and the user of b only with its own identity allow (it has s3tables:*)
    assert uc.get_table_bucket(tableBucketARN=arn)["arn"] == arn
    a.s3t.delete_table_bucket_policy(tableBucketARN=arn)


def test_cross_account_assume_role(floe, two):
    a, b = two
    un, uak, usk, uarn = b.user()
    rname = "r-" + uuid.uuid4().hex[:6]
    a.iam.create_role(RoleName=rname, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": uarn},
                                                 "Action": "sts:AssumeRole"}]}))
    a.iam.put_role_policy(RoleName=rname, PolicyName="p", PolicyDocument=policy("s3tables:ListTableBuckets"))
    rarn = "arn:aws:iam::%s:role/%s" % (a.id, rname)
    sts = iam_client(floe, uak, usk, svc="sts")
    # the trust policy allows, the caller's own account does not: denied
    code, _, _ = client_error(sts.assume_role, RoleArn=rarn, RoleSessionName="s1")
    assert code == "AccessDenied"
    b.iam.put_user_policy(UserName=un, PolicyName="assume", PolicyDocument=policy("sts:AssumeRole", resource=rarn))
    cr = sts.assume_role(RoleArn=rarn, RoleSessionName="s1")["Credentials"]
    who = iam_client(floe, cr["AccessKeyId"], cr["SecretAccessKey"], svc="sts",
                     token=cr["SessionToken"]).get_caller_identity()
    assert who["Account"] == a.id and who["Arn"].endswith(":assumed-role/%s/s1" % rname)
