"""`mtsum --compare`, `mtsum.compare` and `mtsum.dask.compare` of a local tree against a
bucket on a real S3 API server (moto in server mode, started here as test_s3.py starts it),
the tree uploaded by boto3's transfer manager (the AWS CLI's engine) in 5 MiB parts, the
smallest S3 takes: single and multipart uploads, with and without a ChecksumAlgorithm.

moto's composite (multipart) checksums are not S3's (no `-N`, no checksum type): the
comparison must not take them for values, and checks those objects by their ETags.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")
from boto3.s3.transfer import TransferConfig  # noqa: E402
from botocore.config import Config  # noqa: E402

import mtsum  # noqa: E402
from conftest import random_bytes  # noqa: E402
from test_s3 import start_moto  # noqa: E402

MIB = 1 << 20
PART = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
BUCKET = "compared"
# name: (size, ChecksumAlgorithm); CRC32 and SHA256 need no botocore[crt].
TREE = {
    "empty": (0, None),
    "one": (1, None),
    "small.txt": (100, "SHA256"),
    "part-1": (5 * MIB - 1, None),
    "part": (5 * MIB, None),
    "dir/multi.bin": (12 * MIB + 3, None),
    "dir/crc.bin": (11 * MIB, "CRC32"),
    "dir/crc-single": (1000, "CRC32"),
}


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    proc, endpoint = start_moto(tmp_path_factory.mktemp("moto"))
    try:
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def client(endpoint, checksums=True):
    """A client as the AWS CLI is one; without `checksums`, one that sends no checksum unless
    the call asks for one (as boto3 before 1.36 did)."""
    config = None if checksums else Config(request_checksum_calculation="when_required")
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="k", aws_secret_access_key="s", config=config)


def upload(endpoint, root, prefix):
    """Uploads the tree at `root` below s3://BUCKET/PREFIX as TREE says. (Not by CopyObject:
    moto copies a multipart object's composite checksum onto the single-part copy, where S3
    computes the copy's own.)"""
    with_sums, without = client(endpoint), client(endpoint, checksums=False)
    for name, (_, algorithm) in TREE.items():
        extra = {"ChecksumAlgorithm": algorithm} if algorithm else None
        s3 = with_sums if algorithm else without
        s3.upload_file(str(root / name), BUCKET, prefix + name, Config=PART, ExtraArgs=extra)


@pytest.fixture(scope="module")
def uploaded(endpoint, tmp_path_factory):
    """The local tree, and its upload below s3://BUCKET/tree/."""
    root = tmp_path_factory.mktemp("compare") / "tree"
    client(endpoint).create_bucket(Bucket=BUCKET)
    for i, (name, (size, _)) in enumerate(TREE.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(random_bytes(size, 300 + i))
    upload(endpoint, root, "tree/")
    return root


def env(endpoint):
    return dict(os.environ, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s",
                AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint)


def storage(endpoint):
    return {"key": "k", "secret": "s", "region": "us-east-1", "endpoint_url": endpoint}


def run(mtsum_bin, endpoint, *args):
    r = subprocess.run([mtsum_bin, "--compare", *map(str, args)], env=env(endpoint),
                       capture_output=True, text=True, timeout=120)
    assert "panicked" not in r.stderr
    return r


def statuses(stdout):
    return dict(reversed(line.split("  ", 1)) for line in stdout.splitlines())


def test_an_uploaded_tree_is_ok_from_the_stores_values_alone(mtsum_bin, endpoint, uploaded):
    r = run(mtsum_bin, endpoint, "--json", uploaded, f"s3://{BUCKET}/tree/")
    assert r.returncode == 0, r.stderr
    *records, summary = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["path"] for x in records] == sorted(TREE)
    assert all(x["status"] == "ok" for x in records), records
    # No remote byte read: every object was vouched for by what the store reports.
    assert all(x["method"] == "stored" for x in records), records
    assert summary["summary"]["by_stored"] == len(TREE)
    by_path = {x["path"]: x for x in records}
    # The cheapest value: a single upload's full-object CRC32 before its ETag.
    assert (by_path["dir/crc-single"]["layout"], by_path["dir/crc-single"]["algorithm"]) == (
        "plain", "crc32")
    # Multipart: the ETag over the part size the store told, no guessing.
    assert by_path["dir/multi.bin"]["leaf_size"] == 5 * MIB
    assert by_path["dir/multi.bin"].get("part_sizes_tried") is None
    # The file of exactly one part: the transfer manager's one-part upload, md5(md5)-1.
    assert by_path["part"]["expected"].endswith("-1")
    # moto's multipart CRC32 is no S3 composite value: the ETag checks that object.
    assert by_path["dir/crc.bin"]["algorithm"] == "md5"
    # The text output says the same, and how many were verified without reading remotely.
    text = run(mtsum_bin, endpoint, uploaded, f"s3://{BUCKET}/tree")
    assert statuses(text.stdout) == {name: "ok" for name in TREE}
    assert f"{len(TREE)} by the values the store reports" in text.stderr


def test_every_difference_with_the_bucket_is_told(mtsum_bin, endpoint, uploaded, tmp_path):
    local = tmp_path / "copy"
    shutil.copytree(uploaded, local)
    s3 = client(endpoint, checksums=False)
    prefix = "changed/"
    upload(endpoint, local, prefix)
    # Bit rot in the local copy: one byte, size and mtime kept.
    victim = local / "dir/multi.bin"
    stat = victim.stat()
    with open(victim, "r+b") as f:
        f.seek(6 * MIB)
        byte = f.read(1)
        f.seek(6 * MIB)
        f.write(bytes([byte[0] ^ 1]))
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    s3.delete_object(Bucket=BUCKET, Key=prefix + "one")
    s3.put_object(Bucket=BUCKET, Key=prefix + "extra", Body=b"only in the bucket")
    # Replaced in the bucket by other bytes of the same size.
    s3.put_object(Bucket=BUCKET, Key=prefix + "small.txt", Body=random_bytes(100, 999))
    r = run(mtsum_bin, endpoint, local, f"s3://{BUCKET}/{prefix}")
    assert r.returncode == 1
    expected = {name: "ok" for name in TREE}
    expected.update({"dir/multi.bin": "differs", "one": "only-local", "extra": "only-remote",
                     "small.txt": "differs"})
    assert statuses(r.stdout) == expected, r.stderr
    one_way = run(mtsum_bin, endpoint, "--one-way", "--quiet", local, f"s3://{BUCKET}/{prefix}")
    assert statuses(one_way.stdout) == {
        "dir/multi.bin": "differs", "one": "only-local", "small.txt": "differs"}
    # Two prefixes: by the values both stores report, no byte read (multi.bin was uploaded
    # before the local byte flipped).
    both = run(mtsum_bin, endpoint, "--json", f"s3://{BUCKET}/tree/", f"s3://{BUCKET}/{prefix}")
    records = [json.loads(line) for line in both.stdout.splitlines()[:-1]]
    expected["dir/multi.bin"] = "ok"
    assert {r["path"]: r["status"] for r in records} == expected, both.stderr
    assert all(r["method"] == "stored" for r in records if "method" in r)


def test_an_sse_kms_object_is_unverified_unless_its_bytes_are_read(
        mtsum_bin, endpoint, tmp_path):
    local = tmp_path / "kms"
    local.mkdir()
    (local / "secret").write_bytes(b"encrypted at rest")
    client(endpoint, checksums=False).put_object(
        Bucket=BUCKET, Key="kms/secret", Body=b"encrypted at rest", ServerSideEncryption="aws:kms")
    r = run(mtsum_bin, endpoint, local, f"s3://{BUCKET}/kms/")
    assert r.returncode == 1
    (line,) = r.stdout.splitlines()
    assert line.startswith("unverified  secret  (") and "aws:kms" in line, line
    assert "--read-remote reads their bytes" in r.stderr
    read = run(mtsum_bin, endpoint, "--read-remote", "--json", local, f"s3://{BUCKET}/kms/")
    assert read.returncode == 0, read.stderr
    record = json.loads(read.stdout.splitlines()[0])
    assert (record["status"], record["method"]) == ("ok", "read")


def test_python_compare_returns_the_records_of_the_json(mtsum_bin, endpoint, uploaded):
    records = mtsum.compare(uploaded, f"s3://{BUCKET}/tree/", storage_options=storage(endpoint))
    cli = run(mtsum_bin, endpoint, "--json", uploaded, f"s3://{BUCKET}/tree/")
    lines = [json.loads(line) for line in cli.stdout.splitlines()[:-1]]
    assert [r._asdict() for r in records] == [
        {field: line.get(field) for field in mtsum.Compared._fields} for line in lines]
    assert all(r.ok for r in records)
    with pytest.raises(FileNotFoundError):
        mtsum.compare(uploaded / "missing", f"s3://{BUCKET}/tree/",
                      storage_options=storage(endpoint))


def test_dask_compare_spreads_the_names_over_the_workers(endpoint, uploaded):
    distributed = pytest.importorskip("distributed")
    import mtsum.dask

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as dask_client:
        frame = mtsum.dask.compare(uploaded, f"s3://{BUCKET}/tree/", client=dask_client,
                                   storage_options=storage(endpoint))
    assert list(frame.columns) == list(mtsum.Compared._fields)
    assert list(frame.path) == sorted(TREE)
    assert (frame.status == "ok").all()
    assert (frame.method == "stored").all()
    assert frame.error.isna().all()
