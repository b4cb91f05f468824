"""Real clients against floe: AWS CLI (v1, botocore), pyarrow's C++ S3
filesystem (AWS SDK for C++), s3cmd."""
import filecmp
import hashlib
import os
import re
import shutil
import subprocess

import pytest

import conftest
from conftest import ACCESS_KEY, REGION, SECRET_KEY, REPO, unique_bucket_name

MiB = 1024 * 1024
AWS = str(REPO / ".venv" / "bin" / "aws")


def sha256_file(p):
    d = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            d.update(chunk)
    return d.hexdigest()


# ---------------------------------------------------------------- AWS CLI

def aws(env, endpoint, *args, check=True, timeout=180):
    cmd = [AWS, "--endpoint-url", endpoint] + list(args)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, "%s\nrc=%d\nstdout:%s\nstderr:%s" % (" ".join(cmd), r.returncode, r.stdout,
                                                                      r.stderr[-3000:])
    return r


def test_aws_cli_config_is_path_style(tools_env):
    txt = open(tools_env["AWS_CONFIG_FILE"]).read()
    assert "addressing_style = path" in txt


def test_aws_cli_flow(floe, tools_env, tmp_path, s3):
    ep = floe.endpoint
    b = unique_bucket_name("awscli")
    s3url = "s3://%s" % b
    aws(tools_env, ep, "s3", "mb", s3url)
    assert b in aws(tools_env, ep, "s3", "ls").stdout

    small = tmp_path / "small.txt"
    small.write_bytes(b"hello from the aws cli\n" * 10)
    big = tmp_path / "big.bin"
    block = os.urandom(MiB)
    with open(big, "wb") as f:
        for i in range(60):
            f.write(block[i:] + block[:i])
    aws(tools_env, ep, "s3", "cp", str(small), s3url + "/small.txt")
    aws(tools_env, ep, "s3", "cp", str(big), s3url + "/big.bin")
    head = s3.head_object(Bucket=b, Key="big.bin")
    assert head["ContentLength"] == 60 * MiB
    assert re.fullmatch(r'"[0-9a-f]{32}-[0-9]+"', head["ETag"]), \
        "60 MiB cp should be multipart: %s" % head["ETag"]

    out = aws(tools_env, ep, "s3", "ls", s3url + "/").stdout
    assert "small.txt" in out and "big.bin" in out
    assert str(60 * MiB) in out

    tree = tmp_path / "tree"
    files = {"a.txt": b"a", "sub/b.txt": b"bb" * 1000, "sub/deeper/c d.txt": b"ccc", "sub/ü+%.bin": os.urandom(5000),
             "empty.dat": b""}
    for rel, data in files.items():
        p = tree / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    aws(tools_env, ep, "s3", "sync", str(tree), s3url + "/tree")
    listing = aws(tools_env, ep, "s3", "ls", "--recursive", s3url + "/tree/").stdout
    for rel in files:
        assert "tree/" + rel in listing, listing
    # a second sync uploads nothing
    again = aws(tools_env, ep, "s3", "sync", str(tree), s3url + "/tree").stdout
    assert "upload:" not in again, again

    back = tmp_path / "back"
    aws(tools_env, ep, "s3", "sync", s3url + "/tree", str(back))
    for rel, data in files.items():
        assert (back / rel).read_bytes() == data, rel
    aws(tools_env, ep, "s3", "cp", s3url + "/big.bin", str(tmp_path / "big.back"))
    aws(tools_env, ep, "s3", "cp", s3url + "/small.txt", str(tmp_path / "small.back"))
    assert filecmp.cmp(str(small), str(tmp_path / "small.back"), shallow=False)
    assert sha256_file(big) == sha256_file(tmp_path / "big.back")

    aws(tools_env, ep, "s3", "rm", s3url + "/small.txt")
    out = aws(tools_env, ep, "s3", "ls", s3url + "/").stdout
    assert "small.txt" not in out and "big.bin" in out
    r = aws(tools_env, ep, "s3", "rb", s3url, check=False)
    assert r.returncode != 0, "rb of a non-empty bucket must fail"
    assert "BucketNotEmpty" in r.stderr
    aws(tools_env, ep, "s3", "rm", "--recursive", s3url)
    aws(tools_env, ep, "s3", "rb", s3url)
    assert b not in aws(tools_env, ep, "s3", "ls").stdout


def test_aws_cli_s3api(floe, tools_env, tmp_path, bucket):
    ep = floe.endpoint
    aws(tools_env, ep, "s3api", "put-object", "--bucket", bucket, "--key", "api.txt", "--body",
        str(_write(tmp_path / "api.txt", b"s3api body")), "--metadata", "k=v")
    out = aws(tools_env, ep, "s3api", "head-object", "--bucket", bucket, "--key", "api.txt").stdout
    assert '"k": "v"' in out
    assert hashlib.md5(b"s3api body").hexdigest() in out
    r = aws(tools_env, ep, "s3api", "head-object", "--bucket", bucket, "--key", "nope", check=False)
    assert r.returncode != 0 and "404" in r.stderr


def _write(p, data):
    p.write_bytes(data)
    return p


# ---------------------------------------------------------------- pyarrow

@pytest.fixture
def arrow_fs(floe):
    from pyarrow import fs
    return fs.S3FileSystem(endpoint_override="127.0.0.1:%d" % floe.s3_port, scheme="http",
                           access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)


def test_pyarrow_parquet_roundtrip(arrow_fs, bucket, s3):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs
    n = 1000
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "name": pa.array(["name-%d" % i for i in range(n)]),
                      "v": pa.array([i * 0.5 for i in range(n)])})
    path = "%s/warehouse/db/t/data/part-0.parquet" % bucket
    pq.write_table(table, path, filesystem=arrow_fs)
    back = pq.read_table(path, filesystem=arrow_fs)
    assert back.equals(table)
    info = arrow_fs.get_file_info(path)
    assert info.type == fs.FileType.File
    assert info.size == s3.head_object(Bucket=bucket, Key="warehouse/db/t/data/part-0.parquet")["ContentLength"]
    assert arrow_fs.get_file_info("%s/warehouse/nope.parquet" % bucket).type == fs.FileType.NotFound
    assert arrow_fs.get_file_info("%s/warehouse/db" % bucket).type == fs.FileType.Directory
    # listing
    pq.write_table(table.slice(0, 10), "%s/warehouse/db/t/data/part-1.parquet" % bucket, filesystem=arrow_fs)
    infos = arrow_fs.get_file_info(fs.FileSelector("%s/warehouse/db/t" % bucket, recursive=True))
    files = sorted(i.path for i in infos if i.type == fs.FileType.File)
    assert files == ["%s/warehouse/db/t/data/part-0.parquet" % bucket, "%s/warehouse/db/t/data/part-1.parquet" % bucket]
    top = arrow_fs.get_file_info(fs.FileSelector("%s/warehouse/db/t" % bucket))
    assert [(i.path, i.type) for i in top] == [("%s/warehouse/db/t/data" % bucket, fs.FileType.Directory)]
    # dataset read over both files
    import pyarrow.dataset as ds
    d = ds.dataset("%s/warehouse/db/t/data" % bucket, filesystem=arrow_fs, format="parquet")
    assert d.count_rows() == n + 10


def test_pyarrow_large_stream_and_random_read(arrow_fs, bucket, s3):
    data = os.urandom(23 * MiB + 5)  # above pyarrow's 5/10 MiB part size -> multipart
    path = "%s/blob.bin" % bucket
    with arrow_fs.open_output_stream(path) as out:
        for i in range(0, len(data), 3 * MiB):
            out.write(data[i:i + 3 * MiB])
    assert s3.head_object(Bucket=bucket, Key="blob.bin")["ContentLength"] == len(data)
    with arrow_fs.open_input_file(path) as f:
        assert f.size() == len(data)
        f.seek(len(data) - 100)
        assert f.read(100) == data[-100:]
        assert f.read_at(1000, 12 * MiB) == data[12 * MiB:12 * MiB + 1000]
    with arrow_fs.open_input_stream(path) as f:
        assert hashlib.sha256(f.read()).hexdigest() == hashlib.sha256(data).hexdigest()
    arrow_fs.delete_file(path)
    from pyarrow import fs
    assert arrow_fs.get_file_info(path).type == fs.FileType.NotFound


def test_pyarrow_dirs_and_move(arrow_fs, bucket):
    from pyarrow import fs
    arrow_fs.create_dir("%s/newdir/sub" % bucket)
    assert arrow_fs.get_file_info("%s/newdir/sub" % bucket).type == fs.FileType.Directory
    with arrow_fs.open_output_stream("%s/newdir/sub/f" % bucket) as out:
        out.write(b"moved")
    arrow_fs.move("%s/newdir/sub/f" % bucket, "%s/newdir/g" % bucket)
    with arrow_fs.open_input_stream("%s/newdir/g" % bucket) as f:
        assert f.read() == b"moved"
    assert arrow_fs.get_file_info("%s/newdir/sub/f" % bucket).type == fs.FileType.NotFound
    arrow_fs.delete_dir_contents("%s/newdir" % bucket)
    left = arrow_fs.get_file_info(fs.FileSelector("%s/newdir" % bucket, recursive=True, allow_not_found=True))
    assert [i for i in left if i.type == fs.FileType.File] == []


# ---------------------------------------------------------------- s3cmd

@pytest.fixture
def s3cmd_cfg(floe, tmp_path):
    if not shutil.which("s3cmd"):
        pytest.skip("s3cmd not installed")
    p = tmp_path / "s3cfg"
    p.write_text("\n".join([
        "[default]",
        "access_key = %s" % ACCESS_KEY,
        "secret_key = %s" % SECRET_KEY,
        "host_base = 127.0.0.1:%d" % floe.s3_port,
        "host_bucket = 127.0.0.1:%d" % floe.s3_port,
        "use_https = False",
        "signature_v2 = False",
        "bucket_location = us-east-1",
        "check_ssl_certificate = False",
        "multipart_chunk_size_mb = 5",
        "",
    ]))
    return str(p)


def s3cmd(cfg, *args, check=True):
    cmd = ["s3cmd", "-c", cfg, "--no-progress"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=dict(os.environ, HOME="/tmp"))
    if check:
        assert r.returncode == 0, "%s\nrc=%d\nstdout:%s\nstderr:%s" % (" ".join(cmd), r.returncode, r.stdout,
                                                                      r.stderr[-3000:])
    return r


def test_s3cmd_flow(s3cmd_cfg, tmp_path, s3):
    b = unique_bucket_name("s3cmd")
    s3cmd(s3cmd_cfg, "mb", "s3://%s" % b)
    s3.head_bucket(Bucket=b)
    small = tmp_path / "small file.txt"
    small.write_bytes(b"s3cmd says hi\n")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(12 * MiB + 3))  # > 5 MiB chunk -> multipart
    s3cmd(s3cmd_cfg, "put", str(small), "s3://%s/dir/small file.txt" % b)
    s3cmd(s3cmd_cfg, "put", str(big), "s3://%s/big.bin" % b)
    assert s3.get_object(Bucket=b, Key="dir/small file.txt")["Body"].read() == small.read_bytes()
    out = s3cmd(s3cmd_cfg, "ls", "s3://%s" % b).stdout
    assert "s3://%s/big.bin" % b in out and "DIR" in out
    out = s3cmd(s3cmd_cfg, "ls", "-r", "s3://%s" % b).stdout
    assert "s3://%s/dir/small file.txt" % b in out
    s3cmd(s3cmd_cfg, "get", "s3://%s/dir/small file.txt" % b, str(tmp_path / "small.back"))
    s3cmd(s3cmd_cfg, "get", "s3://%s/big.bin" % b, str(tmp_path / "big.back"))
    assert (tmp_path / "small.back").read_bytes() == small.read_bytes()
    assert sha256_file(tmp_path / "big.back") == sha256_file(big)
    s3cmd(s3cmd_cfg, "del", "s3://%s/dir/small file.txt" % b)
    s3cmd(s3cmd_cfg, "del", "s3://%s/big.bin" % b)
    assert s3.list_objects_v2(Bucket=b)["KeyCount"] == 0
    s3cmd(s3cmd_cfg, "rb", "s3://%s" % b)
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


def test_pyarrow_bucket_create_and_delete(floe, s3):
    from pyarrow import fs
    afs = fs.S3FileSystem(endpoint_override="127.0.0.1:%d" % floe.s3_port, scheme="http",
                          access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                          allow_bucket_creation=True, allow_bucket_deletion=True)
    b = unique_bucket_name("pyarrow-mk")
    afs.create_dir(b)
    s3.head_bucket(Bucket=b)
    assert afs.get_file_info(b).type == fs.FileType.Directory
    with afs.open_output_stream("%s/x" % b) as out:
        out.write(b"x")
    afs.delete_dir(b)
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]
