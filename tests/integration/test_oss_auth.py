"""OSS4-HMAC-SHA256 on both ports, driven by Alibaba Cloud's own Python SDK:
the object client (product oss) on the data plane, the tables client
(product osstables, the tables flavour's ARN resource) on the catalog port,
presigned URLs, and what is refused: a wrong secret, a tampered signed
header, an expired or altered presigned URL, a body that does not match its
signed Content-MD5 (nothing stored)."""
import time

import requests

from conftest import REGION, unique_bucket_name
from oss_fixtures import *  # noqa: F401,F403
from tables_fixtures import unique_tb_name


def test_object_client_signs_in(ossc, floe):
    b = unique_bucket_name("oss-auth")
    ossc.put_bucket(oss.PutBucketRequest(bucket=b))
    ossc.put_object(oss.PutObjectRequest(bucket=b, key="dir/a b+c.txt", body=b"hello oss",
                                         metadata={"Note": "two  spaces"}))
    g = ossc.get_object(oss.GetObjectRequest(bucket=b, key="dir/a b+c.txt"))
    assert g.body.content == b"hello oss"


def test_tables_client_signs_in(osst):
    name = unique_tb_name("oss-auth")
    arn = osst.create_table_bucket(tm.CreateTableBucketRequest(name=name)).arn
    assert arn.endswith(":bucket/" + name)
    got = osst.get_table_bucket(tm.GetTableBucketRequest(table_bucket_arn=arn))
    assert got.name == name
    names = [b.name for b in osst.list_table_buckets(tm.ListTableBucketsRequest()).table_buckets]
    assert name in names
    osst.delete_table_bucket(tm.DeleteTableBucketRequest(table_bucket_arn=arn))


def test_wrong_secret_refused_on_both_ports(floe):
    bad = oss_config(floe.endpoint, secret="not-the-secret")
    se = oss_error(oss.Client(bad).list_buckets, oss.ListBucketsRequest())
    assert se.status_code == 403 and se.code == "SignatureDoesNotMatch"
    badt = oss_config("http://127.0.0.1:%d" % floe.catalog_port, secret="not-the-secret")
    se = oss_error(oss_tables.Client(badt).list_table_buckets, tm.ListTableBucketsRequest())
    assert se.status_code == 403


def test_tampered_signed_header_refused(ossc, floe):
    b = unique_bucket_name("oss-tamper")
    ossc.put_bucket(oss.PutBucketRequest(bucket=b))
    # x-oss-meta-* is signed by OSS4 without being listed: changing it after signing fails
    r = oss_raw(floe.s3_port, "PUT", "/%s/k" % b, bucket=b, key="k", body=b"x",
                headers={"x-oss-meta-a": "1"}, send_headers={"x-oss-meta-a": "2"})
    assert r.status_code == 403 and b"SignatureDoesNotMatch" in r.content
    # an x-oss-* header added after signing
    r = oss_raw(floe.s3_port, "PUT", "/%s/k" % b, bucket=b, key="k", body=b"x",
                send_headers={"x-oss-meta-b": "1"})
    assert r.status_code == 403
    se = oss_error(ossc.get_object, oss.GetObjectRequest(bucket=b, key="k"))
    assert se.status_code == 404


def test_presigned_urls(ossc, floe):
    b = unique_bucket_name("oss-presign")
    ossc.put_bucket(oss.PutBucketRequest(bucket=b))
    ossc.put_object(oss.PutObjectRequest(bucket=b, key="p/q.txt", body=b"presigned body"))
    pre = ossc.presign(oss.GetObjectRequest(bucket=b, key="p/q.txt"), expires=__import__("datetime").timedelta(minutes=5))
    assert "x-oss-signature=" in pre.url
    r = requests.get(pre.url, timeout=10)
    assert r.status_code == 200 and r.content == b"presigned body"
    # altered: another key under the same signature
    r = requests.get(pre.url.replace("p/q.txt", "p/r.txt"), timeout=10)
    assert r.status_code == 403
    # expired
    r = oss_raw(floe.s3_port, "GET", "/%s/p/q.txt" % b, bucket=b, key="p/q.txt", presign_expires=1)
    assert r.status_code == 200
    url = r.url
    time.sleep(2.2)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and b"expired" in r.content
    # a presigned PUT stores what it is given
    put = ossc.presign(oss.PutObjectRequest(bucket=b, key="up.bin"))
    r = requests.put(put.url, data=b"via presigned put", headers=put.signed_headers, timeout=10)
    assert r.status_code == 200, r.content
    assert ossc.get_object(oss.GetObjectRequest(bucket=b, key="up.bin")).body.content == b"via presigned put"


def test_tables_body_must_match_signed_md5(osst, floe):
    """OSS4 signs UNSIGNED-PAYLOAD; the body is covered by the signed
    Content-MD5, so a body swapped after signing is refused and nothing made."""
    name = unique_tb_name("oss-md5")
    body = ('{"name": "%s"}' % name).encode()
    evil = ('{"name": "%s-x"}' % name[:50]).encode()
    r = oss_raw(floe.catalog_port, "PUT", "/buckets", key="buckets", tables=True, body=body,
                headers={"Content-Type": "application/json", "Content-MD5": content_md5(body)},
                send_body=evil)
    assert r.status_code == 400, r.content
    names = [b.name for b in osst.list_table_buckets(tm.ListTableBucketsRequest()).table_buckets]
    assert name not in names and name[:50] + "-x" not in names
    # without Content-MD5 a body is not covered at all
    r = oss_raw(floe.catalog_port, "PUT", "/buckets", key="buckets", tables=True, body=body,
                headers={"Content-Type": "application/json"})
    assert r.status_code == 403, r.content
    # the same request, untampered, succeeds
    r = oss_raw(floe.catalog_port, "PUT", "/buckets", key="buckets", tables=True, body=body,
                headers={"Content-Type": "application/json", "Content-MD5": content_md5(body)})
    assert r.status_code == 200, r.content
    arn = r.json()["arn"]
    osst.delete_table_bucket(tm.DeleteTableBucketRequest(table_bucket_arn=arn))


def test_aws_clients_unchanged(s3, floe):
    """SigV4 still answers in S3's own shapes on both ports."""
    from tables_fixtures import make_s3tables_client
    s3t = make_s3tables_client(floe.catalog_port)
    assert "tableBuckets" in s3t.list_table_buckets()
    assert "Buckets" in s3.list_buckets()
