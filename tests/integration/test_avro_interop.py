"""Avro container interop: fastavro writes, floe reads; floe writes, fastavro reads.
Every codec (null, deflate, snappy, zstandard) on {long id, string name, optional double score}.
floe's side is tests/integration/avro_tool.c, compiled here against build/libfloe_core.a
(src/format/avro.c is compiled in directly so the check always covers the current source).
Needs no server."""
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

fastavro = pytest.importorskip("fastavro")

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "build" / "libfloe_core.a"
CODECS = ["null", "deflate", "snappy", "zstandard"]
SCHEMA = {
    "type": "record", "name": "rec",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": ["null", "double"], "default": None},
    ],
}


def records(n=1500):
    out = []
    for i in range(n):
        out.append({
            "id": [0, -1, 2**63 - 1, -2**63][i] if i < 4 else i * 7919 - 10**6,
            "name": ("é名\"\\\n" if i % 5 == 0 else "") + f"n{i}",
            "score": None if i % 3 == 0 else (i / 7.0 if i % 4 else -1.5e300),
        })
    return out


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    if not LIB.exists():
        pytest.skip(f"{LIB} missing: build floe first (cmake --build build)")
    cc = os.environ.get("CC", "cc")
    libs = subprocess.run(
        ["pkg-config", "--libs", "libcrypto", "sqlite3", "expat", "jansson", "zlib", "libcurl",
         "libzstd", "snappy", "liblz4", "libpq"], check=True, capture_output=True, text=True).stdout.split()
    exe = tmp_path_factory.mktemp("avro_tool") / "avro_tool"
    cmd = [cc, "-std=gnu17", "-D_GNU_SOURCE", "-I", str(ROOT / "src"),
           str(ROOT / "tests/integration/avro_tool.c"), str(ROOT / "src/format/avro.c"),
           str(LIB), *libs, "-lpthread", "-lm", "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"compiling avro_tool failed:\n{' '.join(cmd)}\n{r.stderr}"
    return exe


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x["id"] == y["id"] and x["name"] == y["name"], (x, y)
        if x["score"] is None or y["score"] is None:
            assert x["score"] is None and y["score"] is None, (x, y)
        else:
            assert x["score"] == y["score"] or (math.isnan(x["score"]) and math.isnan(y["score"]))


@pytest.mark.parametrize("codec", CODECS)
def test_fastavro_writes_floe_reads(tool, tmp_path, codec):
    recs = records()
    path = tmp_path / f"fa-{codec}.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(SCHEMA), recs, codec=codec, sync_interval=2000,
                        metadata={"schema-id": "7", "content": "data"})
    r = subprocess.run([str(tool), "read", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    same(got, recs)
    m = subprocess.run([str(tool), "meta", str(path), "schema-id"], capture_output=True, text=True)
    assert m.returncode == 0 and m.stdout == "7", (m.stdout, m.stderr)
    m = subprocess.run([str(tool), "meta", str(path), "avro.codec"], capture_output=True, text=True)
    assert m.stdout == codec


@pytest.mark.parametrize("codec", CODECS)
def test_floe_writes_fastavro_reads(tool, tmp_path, codec):
    recs = records()
    path = tmp_path / f"floe-{codec}.avro"
    inp = "".join(json.dumps(r) + "\n" for r in recs)
    r = subprocess.run([str(tool), "write", codec, str(path)], input=inp, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    with open(path, "rb") as f:
        rd = fastavro.reader(f)
        got = list(rd)
        assert rd.metadata["floe.test"] == "interop"
        assert rd.metadata["avro.codec"] == codec
        assert rd.writer_schema["name"] == "rec"
    same(got, recs)
    with open(path, "rb") as f:
        blocks = sum(1 for _ in fastavro.block_reader(f))
    assert blocks > 10
