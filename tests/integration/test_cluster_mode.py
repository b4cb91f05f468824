"""FLOE_TEST_CLUSTER=N itself (conftest.FloeCluster): the session server is N
nodes behind HAProxy, consecutive requests on one client connection land on
different nodes, and what one node writes the next one serves: an object
written through one node, a multipart upload begun, continued and completed
on different nodes, a table bucket created on one and listed by the others.
Skipped in the ordinary (one-process) run."""
import uuid

import pytest

import conftest
from tables_fixtures import make_s3tables_client, unique_tb_name

pytestmark = pytest.mark.skipif(not conftest.cluster_wanted(), reason="FLOE_TEST_CLUSTER not set")


def node_hits(floe, needle):
    return [node.log_text().count(needle) for node in floe.nodes]


def test_requests_rotate_over_every_node(floe, s3, bucket):
    assert len(floe.nodes) == conftest.CLUSTER_NODES
    key = "rr-%s" % uuid.uuid4().hex
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    for _ in range(3 * len(floe.nodes)):
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"x"
    hits = node_hits(floe, "/%s/%s " % (bucket, key))
    # one boto3 client, one keep-alive connection: HAProxy balances each request
    assert all(h >= 2 for h in hits), hits


def test_multipart_across_nodes(floe, s3, bucket):
    # with round-robin the create, each part, the listing and the complete go to
    # different nodes; the store holds the upload, not a node
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    parts = []
    bodies = [bytes([65 + i]) * (5 << 20) for i in range(2)] + [b"tail"]
    for i, body in enumerate(bodies, 1):
        parts.append({"PartNumber": i, "ETag": s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid,
                                                              PartNumber=i, Body=body)["ETag"]})
    for _ in floe.nodes:
        assert [p["PartNumber"] for p in s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)["Parts"]] == [1, 2, 3]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={"Parts": parts})
    for _ in floe.nodes:
        assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"".join(bodies)
    hits = node_hits(floe, "/%s/mp " % bucket)
    assert sum(1 for h in hits if h) == len(floe.nodes), hits


def test_each_node_sees_the_others_writes(floe):
    # straight to each node (not through the balancer): what node i created, node i+1 lists
    clients = [make_s3tables_client(n.catalog_port) for n in floe.nodes]
    arns = []
    for i, c in enumerate(clients):
        arns.append(c.create_table_bucket(name=unique_tb_name("node%d" % i))["arn"])
        nxt = clients[(i + 1) % len(clients)]
        ns = "ns_%d" % i
        nxt.create_namespace(tableBucketARN=arns[-1], namespace=[ns])
        assert [n["namespace"] for n in clients[i].list_namespaces(tableBucketARN=arns[-1])["namespaces"]] == [[ns]]
    for c in clients:
        listed = {b["arn"] for page in c.get_paginator("list_table_buckets").paginate()
                  for b in page["tableBuckets"]}
        assert set(arns) <= listed
    for i, arn in enumerate(arns):
        clients[(i + 2) % len(clients)].delete_namespace(tableBucketARN=arn, namespace="ns_%d" % i)
        clients[(i + 1) % len(clients)].delete_table_bucket(tableBucketARN=arn)
