"""mtsum --stored s3://BUCKET/PREFIX/ against a real S3 API server on loopback (moto, started as
test_s3.py starts it, with IAM authentication on): the sum file of what the store keeps for each
object, then mtsum -c in the local copy. Objects are uploaded by boto3's transfer manager (the
AWS CLI's engine) at its default 8 MiB parts and at 5 and 15 MiB, with and without a
ChecksumAlgorithm, and part by part where the parts differ in size."""

from __future__ import annotations

import os
import subprocess

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")
from boto3.s3.transfer import TransferConfig  # noqa: E402
from botocore.config import Config  # noqa: E402

from conftest import random_bytes  # noqa: E402
import mtsum  # noqa: E402
from test_s3 import (  # noqa: E402, F401  (server: the fixture)
    run, server, storage_options, writer_client, writer_env,
)

MIB = 1 << 20
BUCKET = "stored"


def sizes(part: int) -> list[int]:
    """0, 1, around one part, and several parts."""
    return [0, 1, part - 1, part, part + 1, 2 * part + 3]


@pytest.fixture(scope="module")
def s3(server):  # noqa: F811
    return writer_client(*server, BUCKET)


def upload(s3, local, prefix, name, data, part=8 * MIB, **extra):
    """Writes `data` to local/name and uploads it as the AWS CLI would, in parts of `part`
    bytes from `part` bytes on (the transfer manager's threshold is inclusive)."""
    path = local / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    config = TransferConfig(multipart_threshold=part, multipart_chunksize=part)
    s3.upload_file(str(path), BUCKET, f"{prefix}/{name}", Config=config, ExtraArgs=extra or None)


def stored(mtsum_bin, server, prefix):  # noqa: F811
    return run(mtsum_bin, "--stored", f"s3://{BUCKET}/{prefix}/", env=writer_env(server))


def check(mtsum_bin, local, sums: str) -> subprocess.CompletedProcess:
    (local / "SUMS").write_text(sums)
    return subprocess.run([mtsum_bin, "-c", "SUMS"], cwd=local, capture_output=True, text=True)


def ok_names(out: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit(": ", 1)[0] for line in out.stdout.splitlines() if line.endswith(": OK")}


@pytest.mark.parametrize("part", [8 * MIB, 5 * MIB, 15 * MIB])
def test_stored_then_check_passes_in_the_local_copy_at_every_size(
        mtsum_bin, server, s3, tmp_path, part):  # noqa: F811
    local = tmp_path / "copy"
    prefix = f"parts{part // MIB}"
    names = []
    for i, n in enumerate(sizes(part)):
        # Below a "directory", and a name that signing must encode (space, plus, non-ASCII).
        name = f"d/{n:09d}" if i % 2 else f"{n:09d}"
        name = f"{name} +é" if i == 2 else name
        upload(s3, local, prefix, name, random_bytes(n, i), part=part)
        names.append(name)
    out = stored(mtsum_bin, server, prefix)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # One line per value, tagged, the name relative to the prefix; the ETag of a multipart
    # upload names the part size the store told, and a file of exactly one part was one.
    tag = f"S3-MD5-{part // MIB}M"
    etags = {line.split(" (")[1].split(") = ")[0]: line for line in lines if "-MD5" in line
             or line.startswith("MD5 ")}
    assert sorted(etags) == sorted(names)
    for name, n in zip(names, sizes(part)):
        if n >= part:
            assert etags[name].startswith(f"{tag} ("), etags[name]
            assert etags[name].endswith("-1" if n == part else f"-{-(-n // part)}")
        else:
            assert etags[name].startswith("MD5 ("), etags[name]
    verdict = check(mtsum_bin, local, out.stdout)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    assert ok_names(verdict) == set(names)


def test_a_byte_flipped_in_the_copy_fails_its_check(mtsum_bin, server, s3, tmp_path):  # noqa: F811
    local = tmp_path / "copy"
    for name, n in [("small", 100), ("big", 11 * MIB)]:
        upload(s3, local, "flip", name, random_bytes(n, 7), part=5 * MIB)
    out = stored(mtsum_bin, server, "flip")
    for name in ["small", "big"]:
        data = bytearray((local / name).read_bytes())
        data[len(data) // 2] ^= 1
        (local / name).write_bytes(bytes(data))
    verdict = check(mtsum_bin, local, out.stdout)
    assert verdict.returncode == 1
    assert ok_names(verdict) == set()
    assert "big: FAILED" in verdict.stdout and "small: FAILED" in verdict.stdout


@pytest.mark.parametrize("algorithm", ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"])
def test_with_each_checksum_algorithm_stored_then_check_passes_at_every_size(
        mtsum_bin, server, s3, tmp_path, algorithm):  # noqa: F811
    if algorithm in ("CRC32C", "CRC64NVME"):
        pytest.importorskip("awscrt")  # botocore computes these with the AWS CRT
    local = tmp_path / "copy"
    prefix = f"alg-{algorithm}"
    part = 5 * MIB
    names = {f"{n:09d}": n for n in sizes(part)}
    for i, (name, n) in enumerate(names.items()):
        upload(s3, local, prefix, name, random_bytes(n, 30 + i), part=part,
               ChecksumAlgorithm=algorithm)
    out = stored(mtsum_bin, server, prefix)
    assert out.returncode == 0, out.stderr
    # A single upload's checksum is the full object's, a line of its own; a multipart one's is
    # a comment on moto (see the next test), whose objects the ETag checks.
    for name, n in names.items():
        assert (f"{algorithm} ({name}) = " in out.stdout) == (n < part), (name, out.stdout)
    verdict = check(mtsum_bin, local, out.stdout)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    assert ok_names(verdict) == set(names)
    for name, n in names.items():
        assert verdict.stdout.count(f"{name}: OK") == (2 if n < part else 1), name


def test_moto_composite_checksums_are_not_s3s_so_they_are_comments(
        mtsum_bin, server, s3, tmp_path):  # noqa: F811
    # moto's known quirk: a multipart object's CRC/SHA checksum comes without its part count
    # (-N) and without x-amz-checksum-type, and its CRC32C is the CRC32. Such a value could be
    # of the full object or composite: --stored says so in a comment and checks the object by
    # its ETag. The composite values themselves are tested against their definition and
    # published vectors in tests/storage.rs (s3_matches_the_python_restatement_at_every_boundary,
    # s3_etag_reproduces_cloudflares_example), not against moto.
    pytest.importorskip("awscrt")
    local = tmp_path / "copy"
    data = random_bytes(11 * MIB, 5)
    for algorithm in ["SHA256", "CRC32C"]:
        upload(s3, local, "quirk", algorithm, data, part=5 * MIB, ChecksumAlgorithm=algorithm)
    out = stored(mtsum_bin, server, "quirk")
    assert out.returncode == 0, out.stderr
    comments = [line for line in out.stdout.splitlines() if line.startswith("#")]
    assert len(comments) == 2 and all("did not say" in c for c in comments), comments
    # What moto sent is the definition's value without "-3" (SHA-256), and for CRC32C the
    # CRC32's.
    path = str(local / "SHA256")
    for algorithm, computed_as in [("SHA256", "sha256"), ("CRC32C", "crc32")]:
        composite = run(mtsum_bin, "-t", "s3", "--part-size", "5M", "-a", computed_as, path)
        value = composite.stdout.split()[0]
        assert value.endswith("-3")
        assert f"# {algorithm}: {algorithm.lower()} checksum {value[:-2]}:" in out.stdout
    verdict = check(mtsum_bin, local, out.stdout)
    assert verdict.returncode == 0 and ok_names(verdict) == {"SHA256", "CRC32C"}


def upload_parts(s3, local, key, parts: list[bytes], algorithm=None):
    """A multipart upload of exactly these parts, as a client of its own would make it (with
    a checksum of each part if `algorithm` names one)."""
    (local / key.split("/")[-1]).write_bytes(b"".join(parts))
    extra = {"ChecksumAlgorithm": algorithm} if algorithm else {}
    upload_id = s3.create_multipart_upload(Bucket=BUCKET, Key=key, **extra)["UploadId"]
    done = []
    for number, body in enumerate(parts, 1):
        answer = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload_id, PartNumber=number,
                                Body=body, **extra)
        part = {"ETag": answer["ETag"], "PartNumber": number}
        if algorithm:
            part[f"Checksum{algorithm}"] = answer[f"Checksum{algorithm}"]
        done.append(part)
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload_id,
                                 MultipartUpload={"Parts": done})


def test_parts_of_any_size_the_store_tells_check_even_where_they_differ(
        mtsum_bin, server, s3, tmp_path):  # noqa: F811
    local = tmp_path / "copy"
    local.mkdir()
    # Parts of 6 MiB and a short last one: no client's size, told by the store.
    upload_parts(s3, local, "odd/six", [random_bytes(6 * MIB, 1), random_bytes(6 * MIB, 2),
                                       random_bytes(100, 3)])
    # 6, 5, 5 MiB: the first part is not the size of the others; no part size gives it, the
    # store tells each.
    upload_parts(s3, local, "odd/mixed", [random_bytes(6 * MIB, 4), random_bytes(5 * MIB, 5),
                                         random_bytes(5 * MIB, 6)])
    out = stored(mtsum_bin, server, "odd")
    assert out.returncode == 0, out.stderr
    assert "S3-MD5-6M (six) = " in out.stdout
    assert "S3-MD5-6M,5Mx2 (mixed) = " in out.stdout
    verdict = check(mtsum_bin, local, out.stdout)
    assert verdict.returncode == 0 and ok_names(verdict) == {"six", "mixed"}


def compare(mtsum_bin, server, local, prefix, *args):  # noqa: F811
    return run(mtsum_bin, "--compare", *args, str(local), f"s3://{BUCKET}/{prefix}/",
               env=writer_env(server))


@pytest.mark.parametrize("algorithm", [None, "SHA256", "CRC32"])
def test_parts_of_5_7_5_mib_and_1_byte_are_checked_part_by_part_and_a_flipped_byte_differs(
        mtsum_bin, server, s3, tmp_path, algorithm):  # noqa: F811
    local = tmp_path / "copy"
    local.mkdir()
    prefix = f"uneven-{algorithm}"
    sizes = [5 * MIB, 7 * MIB, 5 * MIB, 1]
    upload_parts(s3, local, f"{prefix}/f", [random_bytes(n, 40 + i) for i, n in enumerate(sizes)],
                 algorithm)
    out = stored(mtsum_bin, server, prefix)
    assert out.returncode == 0, out.stderr
    etag = [line for line in out.stdout.splitlines() if line.startswith("S3-MD5-")]
    assert len(etag) == 1 and etag[0].startswith("S3-MD5-5M,7M,5M,1 (f) = "), out.stdout
    # The value the store computed (moto's ETag), not ours: hashing the file cut so gives it.
    mine = run(mtsum_bin, "-t", "s3", "--part-size", "5M,7M,5M,1", str(local / "f"))
    assert mine.stdout.split()[0] == etag[0].split(" = ")[1], (mine.stdout, etag)
    verdict = check(mtsum_bin, local, out.stdout)
    (local / "SUMS").unlink()
    assert verdict.returncode == 0 and ok_names(verdict) == {"f"}, verdict.stdout
    same = compare(mtsum_bin, server, local, prefix)
    assert (same.returncode, same.stdout) == (0, "ok  f\n"), same.stderr
    [record] = mtsum.compare(local, f"s3://{BUCKET}/{prefix}/",
                             storage_options=storage_options(server))
    assert (record.status, record.layout, record.leaf_size) == ("ok", "s3", None), record
    assert record.part_sizes == sizes, record
    # A byte of the second part flipped, size and mtime kept.
    path = local / "f"
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[6 * MIB] ^= 1
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    verdict = check(mtsum_bin, local, out.stdout)
    (local / "SUMS").unlink()
    assert verdict.returncode == 1 and "f: FAILED" in verdict.stdout, verdict.stdout
    flipped = compare(mtsum_bin, server, local, prefix)
    assert (flipped.returncode, flipped.stdout) == (1, "differs  f\n"), flipped.stderr


def test_middle_parts_that_differ_unseen_are_told_with_every_part(
        mtsum_bin, server, s3, tmp_path):  # noqa: F811
    local = tmp_path / "copy"
    local.mkdir()
    # 6, 7, 5, 6 MiB: the count and the last part are those of 6 MiB parts.
    parts = [random_bytes(n * MIB, 50 + n) for n in [6, 7, 5, 6]]
    upload_parts(s3, local, "inside/f", parts)
    seen = stored(mtsum_bin, server, "inside")
    assert "S3-MD5-6M (f) = " in seen.stdout
    # The first and last parts cannot tell: the line fails rather than passes.
    assert check(mtsum_bin, local, seen.stdout).returncode == 1
    told = run(mtsum_bin, "--stored", "--every-part", f"s3://{BUCKET}/inside/",
               env=writer_env(server))
    assert told.returncode == 0 and "S3-MD5-6M,7M,5M,6M (f) = " in told.stdout, told.stdout
    verdict = check(mtsum_bin, local, told.stdout)
    assert verdict.returncode == 0 and ok_names(verdict) == {"f"}


def test_an_sse_kms_etag_is_no_md5_and_is_said_not_dropped(mtsum_bin, server, s3):  # noqa: F811
    # No checksum either: boto3 adds a CRC32 to uploads unless told to add none.
    bare = writer_client(*server, config=Config(request_checksum_calculation="when_required"))
    bare.put_object(Bucket=BUCKET, Key="kms/secret", Body=b"secret", ServerSideEncryption="aws:kms")
    out = stored(mtsum_bin, server, "kms")
    assert out.returncode == 1
    assert out.stdout.startswith("# secret: ETag "), out.stdout
    assert "aws:kms is no MD5" in out.stdout
    assert out.stderr.startswith(f"mtsum: s3://{BUCKET}/kms/secret: no value to check"), out.stderr


def test_refusals_are_one_line_with_the_url_and_usage_errors_exit_2(
        mtsum_bin, server, s3):  # noqa: F811
    out = run(mtsum_bin, "--stored", "s3://no-such-bucket/", env=writer_env(server))
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == "mtsum: s3://no-such-bucket/: no such bucket (404)\n"
    endpoint, keys = server
    nobody = writer_env(server)
    nobody.update(AWS_ACCESS_KEY_ID=keys["nobody"][0], AWS_SECRET_ACCESS_KEY=keys["nobody"][1])
    out = run(mtsum_bin, "--stored", f"s3://{BUCKET}/", env=nobody)
    assert out.returncode == 1
    assert out.stderr.startswith(f"mtsum: s3://{BUCKET}/: access denied (403)"), out.stderr
    assert len(out.stderr.splitlines()) == 1
    for args in [["--stored"], ["--stored", f"s3://{BUCKET}/key"], ["--stored", "."],
                 ["--stored", "-c", f"s3://{BUCKET}/"], ["--stored", "-t", "s3", f"s3://{BUCKET}/"]]:
        out = run(mtsum_bin, *args, env=writer_env(server))
        assert out.returncode == 2, (args, out.stderr)
        assert out.stdout == "" and len(out.stderr.splitlines()) == 1, (args, out.stderr)
