"""ListObjectsV2 and DeleteObjects through boto3 (and raw where boto3 would
hide the wire format)."""
import urllib.parse
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

import s3helpers as h

KEYS7 = ["a/1", "a/2", "b/1", "b/2/x", "c", "d", "e/f"]


@pytest.fixture
def seven(s3, bucket):
    for k in KEYS7:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    return bucket


def test_list_all(s3, seven):
    r = s3.list_objects_v2(Bucket=seven)
    assert [o["Key"] for o in r["Contents"]] == KEYS7
    assert r["KeyCount"] == 7
    assert r["IsTruncated"] is False
    assert r["Name"] == seven
    for o in r["Contents"]:
        assert o["Size"] == len(o["Key"])
        assert o["ETag"] == '"%s"' % h.md5_hex(o["Key"].encode())
        assert o["LastModified"] is not None


def test_list_empty_bucket(s3, bucket):
    r = s3.list_objects_v2(Bucket=bucket)
    assert r.get("Contents", []) == []
    assert r["KeyCount"] == 0
    assert r["IsTruncated"] is False


def test_list_prefix(s3, seven):
    r = s3.list_objects_v2(Bucket=seven, Prefix="b/")
    assert [o["Key"] for o in r["Contents"]] == ["b/1", "b/2/x"]
    assert r["Prefix"] == "b/"
    r = s3.list_objects_v2(Bucket=seven, Prefix="zzz")
    assert r.get("Contents", []) == [] and r["KeyCount"] == 0


def test_list_delimiter(s3, seven):
    r = s3.list_objects_v2(Bucket=seven, Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["c", "d"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "e/"]
    assert r["KeyCount"] == 5
    assert r["Delimiter"] == "/"
    r = s3.list_objects_v2(Bucket=seven, Delimiter="/", Prefix="b/")
    assert [o["Key"] for o in r["Contents"]] == ["b/1"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["b/2/"]


def test_list_non_slash_delimiter(s3, bucket):
    for k in ["x-1-a", "x-1-b", "x-2", "y"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    r = s3.list_objects_v2(Bucket=bucket, Delimiter="-", Prefix="x-")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["x-1-"]
    assert [o["Key"] for o in r["Contents"]] == ["x-2"]


def test_list_pagination_with_common_prefixes(s3, seven):
    items, tokens, pages = [], set(), 0
    kw = {"Bucket": seven, "Delimiter": "/", "MaxKeys": 2}
    while True:
        r = s3.list_objects_v2(**kw)
        pages += 1
        page = [o["Key"] for o in r.get("Contents", [])] + [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        assert r["KeyCount"] == len(page) <= 2
        assert r["MaxKeys"] == 2
        items += page
        if not r["IsTruncated"]:
            assert "NextContinuationToken" not in r
            break
        tok = r["NextContinuationToken"]
        assert tok and tok not in tokens
        tokens.add(tok)
        kw["ContinuationToken"] = tok
        assert pages < 10
    assert sorted(items) == ["a/", "b/", "c", "d", "e/"]
    assert len(items) == len(set(items)), "duplicates across pages: %r" % items
    assert pages == 3


def test_list_pagination_no_delimiter(s3, seven):
    seen = []
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=seven, PaginationConfig={"PageSize": 2}):
        assert page["KeyCount"] <= 2
        seen += [o["Key"] for o in page.get("Contents", [])]
    assert seen == KEYS7


def test_list_continuation_token_echoed(s3, seven):
    r = s3.list_objects_v2(Bucket=seven, MaxKeys=3)
    assert r["IsTruncated"] is True
    tok = r["NextContinuationToken"]
    r2 = s3.list_objects_v2(Bucket=seven, MaxKeys=3, ContinuationToken=tok)
    assert r2["ContinuationToken"] == tok
    assert [o["Key"] for o in r2["Contents"]] == KEYS7[3:6]


def test_list_start_after(s3, seven):
    r = s3.list_objects_v2(Bucket=seven, StartAfter="b/1")
    assert [o["Key"] for o in r["Contents"]] == ["b/2/x", "c", "d", "e/f"]
    assert r["StartAfter"] == "b/1"
    r = s3.list_objects_v2(Bucket=seven, StartAfter="bb")
    assert [o["Key"] for o in r["Contents"]] == ["c", "d", "e/f"]
    r = s3.list_objects_v2(Bucket=seven, StartAfter="zzz")
    assert r.get("Contents", []) == []


def test_list_max_keys_zero(s3, seven):
    r = s3.list_objects_v2(Bucket=seven, MaxKeys=0)
    assert r.get("Contents", []) == []
    assert r["KeyCount"] == 0


def test_list_max_keys_invalid(raw, seven):
    r = raw.request("GET", "/" + seven, query=[("list-type", "2"), ("max-keys", "-1")])
    assert r.status == 400 and r.error_code() == "InvalidArgument", r


def test_list_over_1000_keys_paginates(s3, bucket):
    import concurrent.futures as cf
    keys = ["k%05d" % i for i in range(1100)]
    with cf.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=b""), keys))
    r = s3.list_objects_v2(Bucket=bucket)
    assert r["KeyCount"] == 1000 and r["IsTruncated"] is True
    r2 = s3.list_objects_v2(Bucket=bucket, ContinuationToken=r["NextContinuationToken"])
    assert [o["Key"] for o in r["Contents"] + r2["Contents"]] == keys
    assert r2["IsTruncated"] is False
    res = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:1000]], "Quiet": True})
    assert res.get("Errors", []) == []
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 100


AWKWARD = ["sp ace", "per%cent", "pl+us", "ünïcødé", "a//b", "../x", "amp&lt<gt>", "dir/sub dir/f+1"]


def test_list_encoding_type_url(s3, bucket):
    for k in AWKWARD:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_objects_v2(Bucket=bucket, EncodingType="url")
    assert r.get("EncodingType") == "url"
    raw_keys = [o["Key"] for o in r["Contents"]]
    for rk in raw_keys:
        # encoded keys carry no raw space, '+', '%'-less non-ASCII
        assert " " not in rk and all(ord(c) < 128 for c in rk), rk
    # botocore (and the AWS SDKs) decode with unquote_plus: '+' must arrive as %2B
    decoded = [urllib.parse.unquote_plus(k) for k in raw_keys]
    assert decoded == sorted(AWKWARD, key=lambda s: s.encode())


def test_list_encoding_type_url_prefix_delimiter(s3, bucket):
    for k in ["dir one/a+b", "dir one/sub/c", "dir two/x"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_objects_v2(Bucket=bucket, EncodingType="url", Prefix="dir one/", Delimiter="/")
    assert urllib.parse.unquote_plus(r["Prefix"]) == "dir one/"
    assert [urllib.parse.unquote_plus(o["Key"]) for o in r["Contents"]] == ["dir one/a+b"]
    assert [urllib.parse.unquote_plus(p["Prefix"]) for p in r["CommonPrefixes"]] == ["dir one/sub/"]
    # default boto3 (auto encoding-type=url, decoded by botocore) sees plain keys
    r = s3.list_objects_v2(Bucket=bucket, Prefix="dir one/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["dir one/a+b"]


def test_list_without_encoding_xml_escapes(raw, s3, bucket):
    for k in AWKWARD:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = raw.request("GET", "/" + bucket, query=[("list-type", "2")])
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    keys = [el.text for el in root.iter(h.S3NS + "Key")] or [el.text for el in root.iter("Key")]
    assert keys == sorted(AWKWARD, key=lambda s: s.encode())


def test_list_objects_v1(s3, seven):
    r = s3.list_objects(Bucket=seven, Delimiter="/")
    assert [o["Key"] for o in r.get("Contents", [])] == ["c", "d"]
    assert [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["a/", "b/", "e/"]


# ---------------------------------------------------------------- DeleteObjects

def test_delete_objects_verbose(s3, seven):
    r = s3.delete_objects(Bucket=seven, Delete={"Objects": [{"Key": "a/1"}, {"Key": "c"}, {"Key": "missing"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["a/1", "c", "missing"]
    assert r.get("Errors", []) == []
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=seven)["Contents"]]
    assert left == ["a/2", "b/1", "b/2/x", "d", "e/f"]


def test_delete_objects_quiet(s3, seven):
    r = s3.delete_objects(Bucket=seven, Delete={"Objects": [{"Key": k} for k in KEYS7] + [{"Key": "nope"}],
                                                "Quiet": True})
    assert r.get("Deleted", []) == []
    assert r.get("Errors", []) == []
    assert s3.list_objects_v2(Bucket=seven)["KeyCount"] == 0


def test_delete_objects_awkward_keys(s3, bucket):
    for k in AWKWARD:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in AWKWARD]})
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(AWKWARD)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_delete_objects_too_many(raw, bucket):
    body = ("<Delete>" + "".join("<Object><Key>k%d</Key></Object>" % i for i in range(1001)) + "</Delete>").encode()
    r = raw.request("POST", "/" + bucket, query=[("delete", "")], body=body,
                    headers={"Content-MD5": h.md5_b64(body)})
    assert r.status == 400, r
    assert r.error_code() in ("MalformedXML", "InvalidArgument", "InvalidRequest"), r


def test_delete_objects_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket="no-such-bucket-floe-x1", Delete={"Objects": [{"Key": "a"}]})
    assert e.value.response["Error"]["Code"] == "NoSuchBucket"
