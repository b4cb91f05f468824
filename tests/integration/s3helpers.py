"""Raw S3 request helpers for the integration tests: an independent SigV4
signer (header auth, aws-chunked signed chunks), a tiny signed HTTP client
over http.client, checksum helpers and XML helpers.

The signer is checked against the AWS documentation vectors in
test_helpers_offline.py, so a failure against floe is floe's, not ours."""
import base64
import datetime as _dt
import hashlib
import hmac
import http.client
import os
import socket
import time
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED = "UNSIGNED-PAYLOAD"
STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
S3NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

_UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def uri_encode(value, keep_slash):
    if isinstance(value, str):
        value = value.encode("utf-8")
    out = []
    for b in value:
        if b in _UNRESERVED or (keep_slash and b == 0x2F):
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def key_path(bucket, key=None):
    """Wire path for path-style addressing (the same encoding botocore uses)."""
    p = "/" + uri_encode(bucket, True)
    if key is not None:
        p += "/" + uri_encode(key, True)
    return p


def amz_now(offset_s=0):
    t = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=offset_s)
    return t.strftime("%Y%m%dT%H%M%SZ")


def _hmac(key, msg):
    return hmac.new(key, msg.encode("utf-8") if isinstance(msg, str) else msg, hashlib.sha256).digest()


def signing_key(secret, date, region, service):
    k = _hmac(("AWS4" + secret).encode(), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, "aws4_request")


def canonical_query(query):
    """query: list of (name, value) decoded pairs, or None."""
    if not query:
        return ""
    enc = sorted((uri_encode(k, False), uri_encode(v, False)) for k, v in query)
    return "&".join("%s=%s" % kv for kv in enc)


def sign(method, raw_path, query, headers, payload_hash, access_key, secret,
         region="us-east-1", service="s3", amz_date=None, signed=None):
    """Adds x-amz-date, x-amz-content-sha256 and Authorization to headers (a
    dict, modified in place). raw_path is the path as sent on the wire.
    Returns (headers, seed_signature, scope, amz_date)."""
    amz_date = amz_date or amz_now()
    headers.setdefault("x-amz-date", amz_date)
    headers.setdefault("x-amz-content-sha256", payload_hash)
    lower = {}
    for k, v in headers.items():
        lower[k.lower()] = " ".join(str(v).strip().split())
    names = sorted(signed if signed is not None else lower.keys())
    # S3 canonical URI: decode the raw path and re-encode each byte once.
    canon_uri = uri_encode(urllib.parse.unquote_to_bytes(raw_path), True)
    creq = "\n".join([
        method,
        canon_uri,
        canonical_query(query),
        "".join("%s:%s\n" % (n, lower[n]) for n in names),
        ";".join(names),
        payload_hash,
    ])
    date = amz_date[:8]
    scope = "%s/%s/%s/aws4_request" % (date, region, service)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    sig = hmac.new(signing_key(secret, date, region, service), sts.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                                % (access_key, scope, ";".join(names), sig))
    return headers, sig, scope, amz_date


def chunk_signature(skey, amz_date, scope, prev_sig, data):
    sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev_sig,
                     EMPTY_SHA256, hashlib.sha256(data).hexdigest()])
    return hmac.new(skey, sts.encode(), hashlib.sha256).hexdigest()


def aws_chunked_body(payload, chunk_size, seed_sig, skey, amz_date, scope):
    """Returns the list of (header_line_bytes, data) chunks including the final
    zero chunk, signed as STREAMING-AWS4-HMAC-SHA256-PAYLOAD."""
    chunks = []
    prev = seed_sig
    pieces = [payload[i:i + chunk_size] for i in range(0, len(payload), chunk_size)] + [b""]
    for data in pieces:
        sig = chunk_signature(skey, amz_date, scope, prev, data)
        chunks.append((("%x;chunk-signature=%s\r\n" % (len(data), sig)).encode(), data))
        prev = sig
    return chunks


def encode_chunks(chunks):
    return b"".join(h + d + b"\r\n" for h, d in chunks)


def encoded_length(payload_len, chunk_size):
    n_full, rest = divmod(payload_len, chunk_size)
    total = 0
    sizes = [chunk_size] * n_full + ([rest] if rest else []) + [0]
    for s in sizes:
        total += len("%x;chunk-signature=" % s) + 64 + 2 + s + 2
    return total


class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def error_code(self):
        return error_code(self.body)

    def __repr__(self):
        return "Resp(%d, %r, %r)" % (self.status, self.headers, self.body[:500])


def error_code(body):
    if not body:
        return None
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return None
    el = root.find("Code")
    if el is None:
        el = root.find(S3NS + "Code")
    return el.text if el is not None else None


class RawClient:
    """Signed requests over http.client, for cases boto3 won't produce."""

    def __init__(self, host, port, access_key, secret, region="us-east-1"):
        self.host, self.port = host, port
        self.access_key, self.secret, self.region = access_key, secret, region

    @property
    def hostport(self):
        return "%s:%d" % (self.host, self.port)

    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, query=None, body=b"", headers=None, payload_hash=None,
                amz_date=None, secret=None, access_key=None, sign_it=True, send_body=None,
                timeout=60):
        """path: raw (encoded) path; query: list of (name, value) decoded pairs.
        payload_hash defaults to the SHA-256 of body. send_body: bytes actually
        sent (defaults to body) for tamper tests."""
        headers = dict(headers or {})
        headers["Host"] = self.hostport
        if sign_it:
            ph = payload_hash or hashlib.sha256(body).hexdigest()
            sign(method, path, query, headers, ph, access_key or self.access_key,
                 secret or self.secret, self.region, amz_date=amz_date)
        target = path
        if query:
            target += "?" + "&".join(
                uri_encode(k, False) + ("=" + uri_encode(v, False) if v != "" else "")
                for k, v in query)
        data = body if send_body is None else send_body
        if method not in ("GET", "HEAD", "DELETE") or data:
            headers.setdefault("Content-Length", str(len(data)))
        c = self.conn(timeout)
        try:
            c.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers.items():
                c.putheader(k, v)
            c.endheaders()
            if data:
                try:
                    c.send(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass
            r = c.getresponse()
            body_out = r.read() if method != "HEAD" else b""
            return Resp(r.status, r.getheaders(), body_out)
        finally:
            c.close()


# ---- checksums (base64 of the big-endian digest, as S3 sends them) ----

def b64(b):
    return base64.b64encode(b).decode()


def crc32_b64(data):
    return b64((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big"))


def crc32c_b64(data):
    from awscrt import checksums
    return b64(checksums.crc32c(data).to_bytes(4, "big"))


def crc64nvme_b64(data):
    from awscrt import checksums
    return b64(checksums.crc64nvme(data).to_bytes(8, "big"))


def sha1_b64(data):
    return b64(hashlib.sha1(data).digest())


def sha256_b64(data):
    return b64(hashlib.sha256(data).digest())


CHECKSUMS = {
    "CRC32": crc32_b64,
    "CRC32C": crc32c_b64,
    "CRC64NVME": crc64nvme_b64,
    "SHA1": sha1_b64,
    "SHA256": sha256_b64,
}


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def md5_b64(data):
    return b64(hashlib.md5(data).digest())


def multipart_etag(parts):
    """parts: list of bytes objects (or precomputed binary md5 digests via md5s=)."""
    digests = b"".join(hashlib.md5(p).digest() for p in parts)
    return "%s-%d" % (hashlib.md5(digests).hexdigest(), len(parts))


def multipart_etag_from_md5s(md5_hexes):
    digests = b"".join(bytes.fromhex(h) for h in md5_hexes)
    return "%s-%d" % (hashlib.md5(digests).hexdigest(), len(md5_hexes))


def pattern_block(seed, size=1 << 20):
    """Cheap deterministic pseudo-random bytes."""
    out = bytearray()
    h = hashlib.sha256(seed.encode() if isinstance(seed, str) else seed).digest()
    while len(out) < size:
        h = hashlib.sha256(h).digest()
        out += h * 64
    return bytes(out[:size])


def wait_port(host, port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def dir_usage(root, exclude_suffixes=(".db", ".db-wal", ".db-shm", "-journal", "-wal", "-shm")):
    """(total bytes, list of paths) of regular files under root, excluding
    SQLite files (their sizes move with checkpoints)."""
    total = 0
    files = []
    for dp, _dn, fns in os.walk(root):
        for fn in fns:
            p = os.path.join(dp, fn)
            if fn.endswith(exclude_suffixes):
                continue
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            total += st.st_size
            files.append(p)
    return total, sorted(files)


def tmp_files(root):
    """Files that look like upload temp files: anything under a directory named
    tmp/temp/incoming, or named *.tmp / tmp*."""
    found = []
    for dp, _dn, fns in os.walk(root):
        parts = set(os.path.relpath(dp, root).split(os.sep))
        for fn in fns:
            if parts & {"tmp", "temp", ".tmp", "incoming", "partial"} or fn.endswith((".tmp", ".part", ".partial")) \
                    or fn.startswith(("tmp", ".tmp")):
                found.append(os.path.join(dp, fn))
    return found
