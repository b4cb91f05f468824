"""Fixtures and helpers for the OSS tests: Alibaba Cloud's own Python SDK
(PyPI alibabacloud-oss-v2) pointed at the session's `floe serve`.

Import with `from oss_fixtures import *`. The SDK picks path style on its own
for an IP endpoint; `oss_raw` signs a raw request with the SDK's signers (as
tables_fixtures.signed_request does with botocore's), so a test can change
what it sends after signing."""
import base64
import hashlib
from urllib.parse import quote, urlencode, urlsplit

import pytest
import requests

from conftest import ACCESS_KEY, REGION, SECRET_KEY

oss = pytest.importorskip("alibabacloud_oss_v2")
from alibabacloud_oss_v2 import tables as oss_tables  # noqa: E402
from alibabacloud_oss_v2.signer.tables_v4 import TablesSignerV4  # noqa: E402
from alibabacloud_oss_v2.signer.v4 import SignerV4  # noqa: E402
from alibabacloud_oss_v2.types import Credentials, HttpRequest, SigningContext  # noqa: E402

__all__ = ["oss", "oss_tables", "tm", "oss_config", "ossc", "osst", "oss_raw", "oss_error",
           "content_md5"]

tm = oss_tables.models


def oss_config(endpoint, access_key=ACCESS_KEY, secret=SECRET_KEY, **kw):
    cfg = oss.config.load_default()
    cfg.credentials_provider = oss.credentials.StaticCredentialsProvider(access_key, secret)
    cfg.region = REGION
    cfg.endpoint = endpoint
    cfg.retry_max_attempts = 1
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


@pytest.fixture(scope="session")
def ossc(floe):
    """The SDK's object client on the data plane."""
    return oss.Client(oss_config(floe.endpoint))


@pytest.fixture(scope="session")
def osst(floe):
    """The SDK's tables client on the catalog port."""
    return oss_tables.Client(oss_config("http://127.0.0.1:%d" % floe.catalog_port))


def content_md5(body):
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def oss_raw(port, method, path, params=None, headers=None, body=b"", tables=False, bucket=None,
            key=None, presign_expires=None, secret=SECRET_KEY, send_body=None, send_headers=None):
    """Signs with the SDK's signer (object: product oss, bucket/key as the SDK
    passes them; tables: product osstables, bucket = the table-bucket ARN, key
    = the path) and sends with requests. send_body / send_headers replace what
    goes on the wire after signing."""
    url = "http://127.0.0.1:%d%s" % (port, path)
    if params:
        url += "?" + urlencode(params, quote_via=quote)
    req = HttpRequest(method=method, url=url, headers=dict(headers or {}))
    ctx = SigningContext(product="osstables" if tables else "oss", region=REGION, bucket=bucket,
                         key=key, request=req, credentials=Credentials(ACCESS_KEY, secret))
    if presign_expires is not None:
        import datetime
        ctx.auth_method_query = True
        ctx.expiration_time = (datetime.datetime.now(datetime.timezone.utc) +
                               datetime.timedelta(seconds=presign_expires))
    (TablesSignerV4() if tables else SignerV4()).sign(ctx)
    hdrs = dict(req.headers)
    hdrs.update(send_headers or {})
    return requests.request(method, req.url, headers=hdrs,
                            data=body if send_body is None else send_body, timeout=30)


def oss_error(fn, *args, **kw):
    """Calls an SDK operation expecting a service error; returns the SDK's ServiceError."""
    with pytest.raises(oss.exceptions.OperationError) as ei:
        fn(*args, **kw)
    se = ei.value
    while not isinstance(se, oss.exceptions.ServiceError) and hasattr(se, "unwrap"):
        se = se.unwrap()
    assert isinstance(se, oss.exceptions.ServiceError), repr(ei.value)
    return se
