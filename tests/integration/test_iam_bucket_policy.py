"""S3 bucket policies on the data plane (PutBucketPolicy / GetBucketPolicy /
DeleteBucketPolicy / GetBucketPolicyStatus), stored in the catalog and
enforced as the bucket's resource policy on every request for the bucket and
its objects, as AWS does: same account = identity or bucket policy allows;
across accounts both must; an explicit Deny in either wins, and a bucket
policy's Deny binds the owner's root too except for managing the policy."""
import json
import uuid

import pytest
from botocore.exceptions import ClientError

from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, s3_client
from test_iam_accounts import Account


def doc(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(principal, actions, resource, **extra):
    st = {"Effect": "Allow", "Principal": principal, "Action": actions, "Resource": resource}
    st.update(extra)
    return st


def code_of(fn, *a, **kw):
    with pytest.raises(ClientError) as ei:
        fn(*a, **kw)
    return ei.value.response["Error"]["Code"], ei.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def pbucket(s3, bucket):
    """A bucket with one object; its policy is removed at the end whatever it said."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"hello")
    s3.put_object(Bucket=bucket, Key="other", Body=b"x")
    yield bucket
    s3.delete_bucket_policy(Bucket=bucket)


def test_put_get_delete_round_trip(s3, pbucket):
    assert code_of(s3.get_bucket_policy, Bucket=pbucket) == ("NoSuchBucketPolicy", 404)
    assert code_of(s3.get_bucket_policy_status, Bucket=pbucket) == ("NoSuchBucketPolicy", 404)
    text = doc(allow("*", "s3:GetObject", "arn:aws:s3:::%s/*" % pbucket))
    s3.put_bucket_policy(Bucket=pbucket, Policy=text)
    assert json.loads(s3.get_bucket_policy(Bucket=pbucket)["Policy"]) == json.loads(text)
    assert s3.get_bucket_policy_status(Bucket=pbucket)["PolicyStatus"]["IsPublic"] is True
    cond = allow("*", "s3:GetObject", "arn:aws:s3:::%s/*" % pbucket,
                 Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}})
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(cond))
    assert s3.get_bucket_policy_status(Bucket=pbucket)["PolicyStatus"]["IsPublic"] is False
    s3.delete_bucket_policy(Bucket=pbucket)
    assert code_of(s3.get_bucket_policy, Bucket=pbucket) == ("NoSuchBucketPolicy", 404)
    s3.delete_bucket_policy(Bucket=pbucket)  # none: still 204, as S3
    assert code_of(s3.get_bucket_policy, Bucket="nope-%s" % uuid.uuid4().hex[:8]) == ("NoSuchBucket", 404)


def test_malformed_refused(s3, pbucket):
    res = "arn:aws:s3:::%s/*" % pbucket
    bad = [
        "not json",
        "{",
        doc({"Effect": "Allow", "Action": "s3:GetObject", "Resource": res}),  # no Principal
        doc(allow("*", "s3:GetObject", res, Effect="Maybe")),
        doc(allow("*", "s3:GetObject", "arn:aws:s3:::some-other-bucket/*")),  # not this bucket
        doc(allow("*", "s3:GetObject", res, Condition={"NoSuchOperator": {"aws:SourceIp": "1.2.3.4"}})),
        "{" + " " * 21000 + "}",
    ]
    for text in bad:
        assert code_of(s3.put_bucket_policy, Bucket=pbucket, Policy=text) == ("MalformedPolicy", 400), text
    assert code_of(s3.get_bucket_policy, Bucket=pbucket) == ("NoSuchBucketPolicy", 404)


def test_same_account_user_allowed_by_bucket_policy(floe, s3, pbucket, new_user):
    u = new_user()  # no identity policy at all
    us3 = u.s3()
    assert code_of(us3.get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        allow({"AWS": u.arn}, "s3:GetObject", "arn:aws:s3:::%s/k" % pbucket)))
    assert us3.get_object(Bucket=pbucket, Key="k")["Body"].read() == b"hello"
    # another action, another object: not granted
    assert code_of(us3.put_object, Bucket=pbucket, Key="k", Body=b"no")[0] == "AccessDenied"
    assert code_of(us3.get_object, Bucket=pbucket, Key="other")[0] == "AccessDenied"
    assert code_of(us3.list_objects_v2, Bucket=pbucket)[0] == "AccessDenied"
    # the user may not read or change the policy without being granted to
    assert code_of(us3.get_bucket_policy, Bucket=pbucket)[0] == "AccessDenied"
    assert code_of(us3.delete_bucket_policy, Bucket=pbucket)[0] == "AccessDenied"
    assert s3.get_object(Bucket=pbucket, Key="k")["Body"].read() == b"hello"
    # the policy's removal takes effect at once (the authorisation cache is dropped)
    s3.delete_bucket_policy(Bucket=pbucket)
    assert code_of(us3.get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"


def test_user_granted_policy_management(s3, pbucket, new_user):
    u = new_user()
    u.put(["s3:GetBucketPolicy", "s3:PutBucketPolicy"], "arn:aws:s3:::%s" % pbucket)
    us3 = u.s3()
    text = doc(allow({"AWS": "arn:aws:iam::%s:root" % ACCOUNT}, "s3:GetObject", "arn:aws:s3:::%s/*" % pbucket))
    us3.put_bucket_policy(Bucket=pbucket, Policy=text)
    assert json.loads(us3.get_bucket_policy(Bucket=pbucket)["Policy"]) == json.loads(text)
    assert code_of(us3.delete_bucket_policy, Bucket=pbucket)[0] == "AccessDenied"


def test_explicit_deny_binds_root_except_policy_management(s3, pbucket, new_user):
    u = new_user()
    u.put("s3:*")
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        {"Sid": "NoReads", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::%s/k" % pbucket}))
    assert code_of(s3.get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"
    assert code_of(u.s3().get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"
    # what the Deny does not name stays allowed
    assert s3.get_object(Bucket=pbucket, Key="other")["Body"].read() == b"x"
    assert u.s3().get_object(Bucket=pbucket, Key="other")["Body"].read() == b"x"
    # a policy denying everything, policy management included: the root still manages it
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:*",
         "Resource": ["arn:aws:s3:::%s" % pbucket, "arn:aws:s3:::%s/*" % pbucket]}))
    assert code_of(s3.list_objects_v2, Bucket=pbucket)[0] == "AccessDenied"
    assert code_of(u.s3().get_bucket_policy, Bucket=pbucket)[0] == "AccessDenied"
    assert "Deny" in s3.get_bucket_policy(Bucket=pbucket)["Policy"]
    s3.delete_bucket_policy(Bucket=pbucket)
    assert s3.get_object(Bucket=pbucket, Key="k")["Body"].read() == b"hello"


def test_source_ip_condition(s3, pbucket, new_user):
    u = new_user()
    res = "arn:aws:s3:::%s/*" % pbucket
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        allow({"AWS": u.arn}, "s3:GetObject", res, Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}})))
    assert code_of(u.s3().get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        allow({"AWS": u.arn}, "s3:GetObject", res, Condition={"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}})))
    assert u.s3().get_object(Bucket=pbucket, Key="k")["Body"].read() == b"hello"
    # and a Deny unless from 10/8 shuts out the root from here
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": res,
         "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}))
    assert code_of(s3.get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"


def test_cross_account_needs_both_sides(floe, s3, pbucket):
    other = Account(floe)
    name, ak, sk, arn = other.user(["s3:GetObject"])
    xs3 = s3_client(floe, ak, sk)
    # identity allow alone: not enough across accounts
    assert code_of(xs3.get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"
    # bucket policy for the other account: now both sides allow
    s3.put_bucket_policy(Bucket=pbucket, Policy=doc(
        allow({"AWS": other.id}, ["s3:GetObject", "s3:PutObject", "s3:GetBucketPolicy"],
              "arn:aws:s3:::%s/*" % pbucket),
        allow({"AWS": "arn:aws:iam::%s:root" % other.id}, "s3:GetBucketPolicy", "arn:aws:s3:::%s" % pbucket)))
    assert xs3.get_object(Bucket=pbucket, Key="k")["Body"].read() == b"hello"
    # PutObject: the bucket policy allows, its identity policy does not
    assert code_of(xs3.put_object, Bucket=pbucket, Key="x", Body=b"no")[0] == "AccessDenied"
    # the other account's root: its account's own permissions plus the bucket policy
    rs3 = s3_client(floe, other.ak, other.sk)
    assert rs3.get_object(Bucket=pbucket, Key="k")["Body"].read() == b"hello"
    # policy management is the owner account's: another account gets 405 even when allowed
    assert code_of(rs3.get_bucket_policy, Bucket=pbucket) == ("MethodNotAllowed", 405)
    # a user of the other account whose identity denies wins over the bucket policy
    name2, ak2, sk2, _ = other.user(["s3:GetObject"])
    other.iam.put_user_policy(UserName=name2, PolicyName="d", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Deny", "Action": "s3:GetObject", "Resource": "*"}]}))
    assert code_of(s3_client(floe, ak2, sk2).get_object, Bucket=pbucket, Key="k")[0] == "AccessDenied"


def test_delete_bucket_deletes_its_policy(s3, new_user):
    name = "bp-%s" % uuid.uuid4().hex[:10]
    u = new_user()
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="k", Body=b"v")
    s3.put_bucket_policy(Bucket=name, Policy=doc(allow({"AWS": u.arn}, "s3:GetObject", "arn:aws:s3:::%s/*" % name)))
    s3.delete_object(Bucket=name, Key="k")
    s3.delete_bucket(Bucket=name)
    s3.create_bucket(Bucket=name)
    try:
        assert code_of(s3.get_bucket_policy, Bucket=name) == ("NoSuchBucketPolicy", 404)
        s3.put_object(Bucket=name, Key="k", Body=b"v")
        assert code_of(u.s3().get_object, Bucket=name, Key="k")[0] == "AccessDenied"
        s3.delete_object(Bucket=name, Key="k")
    finally:
        s3.delete_bucket(Bucket=name)
