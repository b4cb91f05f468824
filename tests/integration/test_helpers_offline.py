"""Checks the test suite's own SigV4 / aws-chunked signer against the AWS
documentation vectors (reference/s3tables.md §3.6, §3.8). Needs no server."""
import hashlib

import s3helpers as h

AKID = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DATE = "20130524T000000Z"


def test_sigv4_get_with_range_vector():
    headers = {"Host": "examplebucket.s3.amazonaws.com", "Range": "bytes=0-9"}
    _, sig, scope, _ = h.sign("GET", "/test.txt", None, headers, h.EMPTY_SHA256, AKID, SECRET,
                              amz_date=DATE)
    assert scope == "20130524/us-east-1/s3/aws4_request"
    assert sig == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"


def test_sigv4_list_query_vector():
    headers = {"Host": "examplebucket.s3.amazonaws.com"}
    _, sig, _, _ = h.sign("GET", "/", [("max-keys", "2"), ("prefix", "J")], headers,
                          h.EMPTY_SHA256, AKID, SECRET, amz_date=DATE)
    assert sig == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"


def test_aws_chunked_vector():
    payload = b"a" * 66560
    headers = {
        "Host": "s3.amazonaws.com",
        "Content-Encoding": "aws-chunked",
        "Content-Length": "66824",
        "x-amz-decoded-content-length": "66560",
        "x-amz-storage-class": "REDUCED_REDUNDANCY",
    }
    _, seed, scope, date = h.sign("PUT", "/examplebucket/chunkObject.txt", None, headers,
                                  h.STREAMING, AKID, SECRET, amz_date=DATE)
    assert seed == "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
    skey = h.signing_key(SECRET, "20130524", "us-east-1", "s3")
    chunks = h.aws_chunked_body(payload, 65536, seed, skey, date, scope)
    sigs = [c[0].decode().split("=")[1].strip() for c in chunks]
    assert sigs == [
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ]
    assert len(h.encode_chunks(chunks)) == 66824 == h.encoded_length(66560, 65536)


def test_multipart_etag_rule():
    parts = [b"x" * 10, b"y" * 20]
    md5s = [hashlib.md5(p).hexdigest() for p in parts]
    assert h.multipart_etag(parts) == h.multipart_etag_from_md5s(md5s)
    assert h.multipart_etag(parts).endswith("-2")


def test_checksum_helpers_known_values():
    assert h.crc32_b64(b"hello world") == "DUoRhQ=="
    assert h.sha256_b64(b"") == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
