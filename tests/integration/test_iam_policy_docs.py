"""Policy documents as the APIs take them: invalid ones are refused with each
API's own error and change nothing (IAM: 400 MalformedPolicyDocument for
PutUserPolicy, PutRolePolicy, CreatePolicy, CreateRole's trust policy and
AssumeRole's session policy; S3 Tables: 400 BadRequestException for
PutTableBucketPolicy / PutTablePolicy), and documents mutated from the fuzz
corpus (tests/fuzz/corpus/policy, the seeds of fuzz_policy.c) get either
that error or are stored and evaluated: never a 5xx, and the node stays up.
The parser and evaluator themselves are fuzzed by tests/fuzz/fuzz_policy.c."""
import json
import os
import random
import uuid

import pytest
from botocore.exceptions import ClientError

from iam_fixtures import *  # noqa: F401,F403
from iam_fixtures import ACCOUNT, iam_client, policy
from rest_fixtures import s3tables_client
from tables_fixtures import make_s3tables_client

CORPUS = os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus", "policy")
MUTATIONS = int(os.environ.get("FLOE_POLICY_MUTATIONS", "150"))

# Invalid whatever the kind of policy (the corpus's bad_* seeds, but for the
# two whose fault depends on the kind), and one too big for any API.
KIND_FREE_BAD = ["bad_cidr", "bad_operator", "bad_date", "bad_number", "bad_effect", "bad_no_vendor",
                 "bad_no_statement", "bad_version", "bad_types", "bad_nul", "bad_deep", "truncated"]


def seed(name):
    with open(os.path.join(CORPUS, name), "rb") as f:
        return f.read()[1:].decode()


def bad_docs():
    docs = [(n, seed(n)) for n in KIND_FREE_BAD]
    docs.append(("not json", "Version: 2012-10-17"))
    return docs


TOO_BIG = policy(["s3tables:GetTable"] * 1200)  # 25 KB: past every cap (IAM 409 LimitExceeded, as AWS's quotas)


def code_of(fn, **kw):
    try:
        fn(**kw)
        return 200, None
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]


@pytest.fixture(scope="module")
def place(floe):
    s3t = s3tables_client(floe)
    arn = s3t.create_table_bucket(name="pd-%s" % uuid.uuid4().hex[:10])["arn"]
    s3t.create_namespace(tableBucketARN=arn, namespace=["ns"])
    s3t.create_table(tableBucketARN=arn, namespace="ns", name="t", format="ICEBERG")
    return {"s3t": s3t, "arn": arn}


def test_invalid_documents_refused_by_every_api(floe, root_iam, new_user, place):
    u = new_user()
    u.put(["sts:AssumeRole"])
    role = "pd-" + uuid.uuid4().hex[:8]
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": u.arn}, "Action": "sts:AssumeRole"}]})
    root_iam.create_role(RoleName=role, AssumeRolePolicyDocument=trust)
    role_arn = "arn:aws:iam::%s:role/%s" % (ACCOUNT, role)
    sts = iam_client(floe, u.ak, u.sk, svc="sts")
    s3t, arn = place["s3t"], place["arn"]
    failures = []
    identity_bad = bad_docs() + [("principal in an identity policy", seed("bad_identity_principal")),
                                 ("too big", TOO_BIG)]
    resource_bad = bad_docs() + [("no principal in a resource policy", seed("bad_resource_no_principal"))]
    for name, doc in identity_bad:
        for api, fn, kw in [
                ("PutUserPolicy", root_iam.put_user_policy, {"UserName": u.name, "PolicyName": "bad"}),
                ("PutRolePolicy", root_iam.put_role_policy, {"RoleName": role, "PolicyName": "bad"}),
                ("CreatePolicy", root_iam.create_policy, {"PolicyName": "bad-" + uuid.uuid4().hex[:6]}),
                ("AssumeRole", sts.assume_role, {"RoleArn": role_arn, "RoleSessionName": "pd"})]:
            got = code_of(fn, **dict(kw, **{"Policy" if api == "AssumeRole" else "PolicyDocument": doc}))
            want = (400, "MalformedPolicyDocument")
            if doc is TOO_BIG:
                want = (409, "LimitExceeded")
            if got != want:
                failures.append("%s %s: %r" % (api, name, got))
    for name, doc in resource_bad:
        got = code_of(root_iam.create_role, RoleName="pd-bad-" + uuid.uuid4().hex[:6], AssumeRolePolicyDocument=doc)
        if got != (400, "MalformedPolicyDocument"):
            failures.append("CreateRole %s: %r" % (name, got))
    for name, doc in resource_bad + [("too big", TOO_BIG)]:
        for api, fn, kw in [
                ("PutTableBucketPolicy", s3t.put_table_bucket_policy, {"tableBucketARN": arn}),
                ("PutTablePolicy", s3t.put_table_policy, {"tableBucketARN": arn, "namespace": "ns", "name": "t"})]:
            got = code_of(fn, **dict(kw, resourcePolicy=doc))
            if got != (400, "BadRequestException"):
                failures.append("%s %s: %r" % (api, name, got))
    assert not failures, "\n".join(failures)
    # nothing was stored
    assert root_iam.list_user_policies(UserName=u.name)["PolicyNames"] == ["p"]
    assert root_iam.list_role_policies(RoleName=role)["PolicyNames"] == []
    assert not [p for p in root_iam.list_policies(Scope="Local")["Policies"] if p["PolicyName"].startswith("bad-")]
    assert not [r for r in root_iam.list_roles()["Roles"] if r["RoleName"].startswith("pd-bad-")]
    for fn, kw in [(s3t.get_table_bucket_policy, {"tableBucketARN": arn}),
                   (s3t.get_table_policy, {"tableBucketARN": arn, "namespace": "ns", "name": "t"})]:
        assert code_of(fn, **kw)[0] == 404
    root_iam.delete_role(RoleName=role)


STRINGS = ["*", "s3tables:Get*", "oss:GetTable", "s3tables:GetTableBucket", "arn:aws:s3tables:*:*:bucket/*",
           "Deny", "Allow", "aws:username", "", "${aws:username}", "2012-10-17", "aws:SourceIp", "10.0.0.0/8",
           "StringLike", "ArnLike", "2030-01-01T00:00:00Z", "true", "acs:osstables:*:*:bucket/*/table/*", "?"]
TOKENS = ['"*"', "{}", "[]", "null", "true", "-1", "1e999", '"s3tables:*"', '"oss:Get*"', '"Deny"', '"Condition"',
          '{"StringLike":{"aws:username":"*"}}', ",", ":", '"\\u0000"', '"\\ud800"', '"' + "a" * 300 + '"',
          '"Principal"']


def _leaves(o, out):
    """(container, key) of every string value in a parsed document."""
    items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else []
    for k, v in items:
        if isinstance(v, str):
            out.append((o, k))
        else:
            _leaves(v, out)
    return out


def mutate(rng, doc):
    """Most often one to three string values swapped for other plausible ones
    (the document stays JSON and is often valid), else one to three edits of
    its text that break the syntax or the limits."""
    if rng.random() < 0.7:
        o = json.loads(doc)
        for _ in range(rng.randint(1, 3)):
            leaves = _leaves(o, [])
            if leaves:
                c, k = rng.choice(leaves)
                c[k] = rng.choice(STRINGS)
        return json.dumps(o)
    s = doc
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(s))
        op = rng.randint(0, 3)
        if op == 0:      # insert a token
            s = s[:i] + rng.choice(TOKENS) + s[i:]
        elif op == 1:    # delete a run
            s = s[:i] + s[i + rng.randint(1, 12):]
        elif op == 2:    # replace a character
            s = s[:i] + chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x3000)])) + s[i + 1:]
        else:            # truncate
            s = s[:i]
    return s or " "


def test_mutated_documents_refused_or_enforced(floe, root_iam, new_user, place):
    rng = random.Random(20261201)
    valid = [seed(n) for n in sorted(os.listdir(CORPUS)) if not n.startswith("bad_") and n != "truncated"]
    pools = {"identity": [d for d in valid if "Principal" not in d and len(d) < 4096],
             "resource": [d for d in valid if "Principal" in d and "sts:" not in d]}
    u = new_user()
    uc = make_s3tables_client(floe.catalog_port, u.ak, u.sk)
    s3t, arn = place["s3t"], place["arn"]
    seen = {"identity": [0, 0], "resource": [0, 0]}
    failures = []
    for n in range(MUTATIONS):
        doc = mutate(rng, rng.choice(pools["identity"]))
        st, code = code_of(root_iam.put_user_policy, UserName=u.name, PolicyName="m", PolicyDocument=doc)
        if st == 200:
            seen["identity"][0] += 1
            got = root_iam.get_user_policy(UserName=u.name, PolicyName="m")["PolicyDocument"]
            if (json.loads(got) if isinstance(got, str) else got) != json.loads(doc):
                failures.append("GetUserPolicy does not give back %r" % doc[:300])
            st2, _ = code_of(uc.get_table_bucket, tableBucketARN=arn)  # evaluated: allowed or denied
            if st2 not in (200, 403):
                failures.append("evaluating %r: %d" % (doc[:300], st2))
        elif (st, code) in ((400, "MalformedPolicyDocument"), (409, "LimitExceeded")):
            seen["identity"][1] += 1
        else:
            failures.append("PutUserPolicy %r: %r" % (doc[:300], (st, code)))
        doc = mutate(rng, rng.choice(pools["resource"]))
        st, code = code_of(s3t.put_table_bucket_policy, tableBucketARN=arn, resourcePolicy=doc)
        if st == 200:
            seen["resource"][0] += 1
            st2, _ = code_of(uc.get_table_bucket, tableBucketARN=arn)
            if st2 not in (200, 403):
                failures.append("evaluating %r as a bucket policy: %d" % (doc[:300], st2))
            s3t.delete_table_bucket_policy(tableBucketARN=arn)
        elif (st, code) == (400, "BadRequestException"):
            seen["resource"][1] += 1
        else:
            failures.append("PutTableBucketPolicy %r: %r" % (doc[:300], (st, code)))
    print("mutated documents (stored, refused):", seen)
    assert not failures, "\n".join(failures[:20])
    # both verdicts were reached on both APIs: the mutations are neither all valid nor all junk
    assert all(a and b for a, b in seen.values()), seen
    assert s3t.get_table_bucket(tableBucketARN=arn)["arn"] == arn
