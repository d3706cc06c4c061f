"""s3:// operands against a real S3 API server on loopback: moto in server mode, started here
on a free port of 127.0.0.1 with IAM authentication on, objects uploaded by boto3's transfer
manager (the AWS CLI's engine, multipart from 8 MiB). The CLI and the Python API read them by
range GETs and must give the digest of the same bytes in a local file; the store's refusals
are one line each."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")
from boto3.s3.transfer import TransferConfig  # noqa: E402

import mtsum  # noqa: E402
from conftest import random_bytes  # noqa: E402

MIB = 1 << 20
# 0, 1, around a range GET and the transfer manager's part (both 8 MiB), several of each.
SIZES = [0, 1, 8 * MIB - 1, 8 * MIB, 8 * MIB + 1, 20 * MIB + 3]
LAYOUTS = [
    ("mtsum", ["sha256", "blake3"]),
    ("plain", ["sha256", "md5", "crc64nvme"]),
    ("merkle", ["sha256"]),
    ("rfc6962", ["xxh3"]),
    ("s3", ["md5", "crc32c"]),
    ("glacier", ["sha256"]),
    ("dropbox", ["sha256"]),
    ("btv2", ["sha256"]),
]
BUCKET = "data"

# Where the credential chain would ask an instance's metadata service when a test gives no
# keys: a closed port on loopback instead of the link-local address of EC2's.
NO_METADATA = "http://127.0.0.1:9"
os.environ["AWS_METADATA_ENDPOINT"] = NO_METADATA


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(log_dir: Path, *args: str, **env: str) -> tuple[subprocess.Popen, str]:
    """moto's server on a free port of 127.0.0.1 (with the further arguments `args`), and
    its endpoint, once it accepts; what it logs goes to LOG_DIR/log."""
    port = free_port()
    log = open(log_dir / "log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port), *args],
        env=dict(os.environ, **env), stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("moto did not start")
            time.sleep(0.1)


def start_moto_with_users(log_dir: Path) -> tuple[subprocess.Popen, str, dict]:
    """moto on 127.0.0.1 with authentication on after the first five requests, which make
    the user `writer` (every right) and the user `nobody` (none): the server, its endpoint,
    and each user's (key, secret)."""
    proc, endpoint = start_moto(log_dir, INITIAL_NO_AUTH_ACTION_COUNT="5")
    try:
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="x")
        keys = {}
        for user in ["writer", "nobody"]:
            iam.create_user(UserName=user)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            keys[user] = (key["AccessKeyId"], key["SecretAccessKey"])
            if user == "writer":
                iam.put_user_policy(UserName=user, PolicyName="all", PolicyDocument=(
                    '{"Version": "2012-10-17", "Statement": '
                    '[{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'))
    except BaseException:
        proc.kill()
        raise
    return proc, endpoint, keys


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """moto with the users `writer` and `nobody` (start_moto_with_users): endpoint, keys."""
    proc, endpoint, keys = start_moto_with_users(tmp_path_factory.mktemp("moto"))
    try:
        yield endpoint, keys
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def writer_client(endpoint, keys, bucket=None, **config):
    """boto3's client as the writer user (creating `bucket` if named): the uploader of the tests."""
    key, secret = keys["writer"]
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=key, aws_secret_access_key=secret, **config)
    if bucket is not None:
        client.create_bucket(Bucket=bucket)
    return client


@pytest.fixture(scope="module")
def s3(server):
    return writer_client(*server, BUCKET)


@pytest.fixture(scope="module")
def objects(s3, tmp_path_factory):
    """One object per size of SIZES, uploaded by the transfer manager from local files:
    (local path, url) pairs."""
    d = tmp_path_factory.mktemp("objects")
    out = []
    for i, n in enumerate(SIZES):
        p = d / f"o{n:09d}"
        p.write_bytes(random_bytes(n, 100 + i))
        s3.upload_file(str(p), BUCKET, f"sizes/{p.name}", Config=TransferConfig())
        out.append((p, f"s3://{BUCKET}/sizes/{p.name}"))
    return out


def run(mtsum_bin, *args, env=None):
    return subprocess.run([mtsum_bin, *args], capture_output=True, text=True, env=env)


def writer_env(server, **extra) -> dict[str, str]:
    """The environment of a user of the AWS CLI pointed at the server: key, secret, endpoint."""
    endpoint, keys = server
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=keys["writer"][0], AWS_SECRET_ACCESS_KEY=keys["writer"][1],
               AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1",
               AWS_METADATA_ENDPOINT=NO_METADATA, **extra)
    return env


def storage_options(server, user="writer"):
    endpoint, keys = server
    key, secret = keys[user]
    return {"key": key, "secret": secret, "endpoint_url": endpoint, "region": "us-east-1"}


def digests(out: subprocess.CompletedProcess) -> list[str]:
    return [line.split()[0] for line in out.stdout.splitlines()]


@pytest.mark.parametrize("layout,algorithms", LAYOUTS)
def test_every_object_has_the_digest_of_its_bytes_in_a_file(
        mtsum_bin, server, objects, layout, algorithms):
    env = writer_env(server)
    for algorithm in algorithms:
        args = ["-t", layout, "-a", algorithm]
        local = run(mtsum_bin, *args, *[str(p) for p, _ in objects])
        remote = run(mtsum_bin, *args, *[url for _, url in objects], env=env)
        # btv2 has no root for an empty file: both say so, and go on.
        assert remote.returncode == local.returncode, remote.stderr
        assert digests(remote) == digests(local), (layout, algorithm)
        assert [line.split("  ")[1] for line in remote.stdout.splitlines()] == [
            url for (p, url) in objects if not (layout == "btv2" and p.stat().st_size == 0)]


def test_the_s3_layout_gives_the_etag_the_transfer_manager_made(mtsum_bin, server, s3, objects):
    # At every size, the file of exactly one part (8 MiB) included: the transfer manager's
    # threshold is inclusive, so it uploads that file as one part of a multipart upload (the
    # md5 of the md5, "-1"), and -t s3 prints that, for the object and for the local file.
    env = writer_env(server)
    etags = [s3.head_object(Bucket=BUCKET, Key=url.split("/", 3)[3])["ETag"].strip('"')
             for _, url in objects]
    assert digests(run(mtsum_bin, "-t", "s3", *[url for _, url in objects], env=env)) == etags
    assert digests(run(mtsum_bin, "-t", "s3", *[str(p) for p, _ in objects])) == etags
    assert [e.endswith("-1") for e in etags] == [n == 8 * MIB for n in SIZES]


def test_a_large_object_in_any_number_of_connections(mtsum_bin, server, s3, tmp_path):
    p = tmp_path / "large"
    p.write_bytes(os.urandom(300 * MIB + 7))
    s3.upload_file(str(p), BUCKET, "large", Config=TransferConfig())
    url = f"s3://{BUCKET}/large"
    env = writer_env(server)
    for layout in ["plain", "mtsum", "s3"]:
        local = digests(run(mtsum_bin, "-t", layout, str(p)))
        for connections in ["1", "16"]:
            out = run(mtsum_bin, "-t", layout, "--connections", connections, url, env=env)
            assert out.returncode == 0, out.stderr
            assert digests(out) == local, (layout, connections)
    assert mtsum.file_digest(url, storage_options=storage_options(server)) == \
        mtsum.file_digest(p)


def test_recursion_hashes_the_objects_below_a_prefix_by_key(mtsum_bin, server, objects):
    out = run(mtsum_bin, "-r", f"s3://{BUCKET}/sizes/", env=writer_env(server))
    assert out.returncode == 0, out.stderr
    want = run(mtsum_bin, *[str(p) for p, _ in objects])
    assert digests(out) == digests(want)
    assert [line.split("  ")[1] for line in out.stdout.splitlines()] == [u for _, u in objects]


def test_check_reads_sum_lines_that_name_urls(mtsum_bin, server, objects, tmp_path):
    env = writer_env(server)
    sums = tmp_path / "sums"
    sums.write_text(run(mtsum_bin, "--tag", *[u for _, u in objects], env=env).stdout)
    out = run(mtsum_bin, "-c", str(sums), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{u}: OK" for _, u in objects]


def test_credentials_and_endpoint_come_from_a_profile(mtsum_bin, server, objects, tmp_path):
    endpoint, keys = server
    (tmp_path / "credentials").write_text(
        f"[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"
        f"[test]\naws_access_key_id = {keys['writer'][0]}\n"
        f"aws_secret_access_key = {keys['writer'][1]}\n")
    (tmp_path / "config").write_text(
        f"[profile test]\nregion = us-east-1\nendpoint_url = {endpoint}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
               AWS_CONFIG_FILE=str(tmp_path / "config"), AWS_METADATA_ENDPOINT=NO_METADATA)
    p, url = objects[1]
    want = digests(run(mtsum_bin, str(p)))
    assert digests(run(mtsum_bin, url, env=dict(env, AWS_PROFILE="test"))) == want
    assert digests(run(mtsum_bin, "--profile", "test", url, env=env)) == want


@pytest.mark.parametrize("case", ["object", "bucket", "credentials", "denied"])
def test_refusals_are_one_line_each_and_the_other_objects_go_on(
        mtsum_bin, server, objects, case):
    endpoint, keys = server
    p, good = objects[1]
    bad = {
        "object": f"s3://{BUCKET}/sizes/missing",
        "bucket": "s3://no-such-bucket/key",
    }.get(case, good)
    env = writer_env(server)
    if case == "credentials":
        env.update(AWS_SECRET_ACCESS_KEY="not-the-secret")
    if case == "denied":
        env.update(AWS_ACCESS_KEY_ID=keys["nobody"][0], AWS_SECRET_ACCESS_KEY=keys["nobody"][1])
    out = run(mtsum_bin, bad, good, env=env)
    assert out.returncode == 1
    cause = {
        "object": "no such object (404)",
        "bucket": "no such bucket (404)",
        "credentials": "credentials refused (SignatureDoesNotMatch, 403)",
        "denied": "access denied (403)",
    }[case]
    lines = out.stderr.splitlines()
    assert lines[0].startswith(f"mtsum: {bad}: {cause}"), out.stderr
    if case in ("object", "bucket"):
        assert len(lines) == 1
        assert digests(out) == digests(run(mtsum_bin, str(p)))


def test_a_prefix_that_cannot_be_listed_is_one_line(mtsum_bin, server):
    out = run(mtsum_bin, "-r", "s3://no-such-bucket/dir/", env=writer_env(server))
    assert out.returncode == 1
    assert out.stderr == "mtsum: s3://no-such-bucket/dir/: no such bucket (404)\n"


def test_python_hashes_urls_with_storage_options(server, objects):
    options = storage_options(server)
    for p, url in objects:
        assert mtsum.file_digest(url, storage_options=options) == mtsum.file_digest(p)
    sums = mtsum.sum_files([u for _, u in objects] + [f"s3://{BUCKET}/missing"],
                           algorithm="md5", layout="s3", storage_options=options)
    local = mtsum.sum_files([p for p, _ in objects], algorithm="md5", layout="s3")
    assert [s.digest for s in list(sums.values())[:-1]] == [s.digest for s in local.values()]
    assert sums[f"s3://{BUCKET}/missing"].error == f"s3://{BUCKET}/missing: no such object (404)"
    with pytest.raises(FileNotFoundError) as e:
        mtsum.file_digest(f"s3://{BUCKET}/missing", storage_options=options)
    assert (e.value.filename, e.value.strerror) == ("s3://data/missing", "no such object (404)")
    with pytest.raises(ValueError, match="unknown storage option"):
        mtsum.file_digest(objects[0][1], storage_options={"secret_key": "x"})


def test_a_range_of_an_object_replaced_since_it_was_planned_is_refused(server, s3, tmp_path):
    options = storage_options(server)
    url = f"s3://{BUCKET}/replaced"
    s3.put_object(Bucket=BUCKET, Key="replaced", Body=b"first version")
    size, version = mtsum._mtsum._stat(url, options)
    assert size == 13
    s3.put_object(Bucket=BUCKET, Key="replaced", Body=b"other version")
    with pytest.raises(OSError, match="changed while being read"):
        mtsum.hash_range(url, 0, size, size=size, storage_options=options, version=version)


def test_dask_workers_read_their_own_ranges_from_the_store(server, s3, objects, tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pandas")
    import mtsum.dask

    options = storage_options(server)
    p = tmp_path / "big"
    p.write_bytes(random_bytes(40 * MIB + 11, 9))
    s3.upload_file(str(p), BUCKET, "dask/big", Config=TransferConfig())
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        url = f"s3://{BUCKET}/dask/big"
        for layout in ["mtsum", "rfc6962"]:
            got = mtsum.dask.file_digest(url, client=client, parts=4, layout=layout,
                                         storage_options=options)
            assert got == mtsum.file_digest(p, layout=layout)
        frame = mtsum.dask.sum_files(f"s3://{BUCKET}/sizes/", client=client,
                                     storage_options=options)
        assert list(frame.path) == [u for _, u in objects]
        assert list(frame.digest) == [mtsum.file_digest(p) for p, _ in objects]
        assert frame.error.isna().all()


def test_no_sign_request_reads_a_public_bucket_without_credentials(mtsum_bin, tmp_path):
    # A server without authentication (any key signs), an object anyone may read, and no keys
    # anywhere for mtsum: signed requests find no credentials; unsigned ones read the object.
    proc, endpoint = start_moto(tmp_path)
    try:
        owner = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                             aws_access_key_id="any", aws_secret_access_key="any")
        owner.create_bucket(Bucket="public")
        owner.put_object(Bucket="public", Key="k", Body=b"hello", ACL="public-read")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_METADATA_ENDPOINT=NO_METADATA, AWS_SHARED_CREDENTIALS_FILE=os.devnull,
                   AWS_CONFIG_FILE=os.devnull)
        url = "s3://public/k"
        out = run(mtsum_bin, "--endpoint-url", endpoint, "--no-sign-request", url, env=env)
        assert out.returncode == 0, out.stderr
        local = tmp_path / "k"
        local.write_bytes(b"hello")
        assert digests(out) == digests(run(mtsum_bin, str(local)))
        signed = run(mtsum_bin, "--endpoint-url", endpoint, url, env=env)
        assert signed.returncode == 1
        assert signed.stderr.startswith(f"mtsum: {url}: no credentials ("), signed.stderr
        assert len(signed.stderr.splitlines()) == 1
        assert mtsum.file_digest(url, storage_options={"anon": True, "endpoint_url": endpoint}) \
            == mtsum.file_digest(local)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
