"""mtsum --stored s3://BUCKET/PREFIX/ against a real S3 API server on loopback (moto, started as
test_s3.py starts it, with IAM authentication on): the sum file of what the store keeps for each
object, then mtsum -c in the local copy. Objects are uploaded by boto3's transfer manager (the
AWS CLI's engine) at its default 8 MiB parts and at 5 and 15 MiB, with and without a
ChecksumAlgorithm, and part by part where the parts differ in size."""

from __future__ import annotations

import json
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


def flip(path, offset):
    """Flips a bit of the byte at `offset` of the file at `path`, keeping its size and mtime."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 1
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


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
    from_python = mtsum.file_digest(local / "f", layout="s3", leaf_size="5M,7M,5M,1")
    assert from_python == etag[0].split(" = ")[1]
    # Cut into ranges (as Dask workers hash them), the parts' own ends kept: the same value.
    kw = dict(layout="s3", leaf_size="5M,7M,5M,1")
    size = sum(sizes)
    ranges = mtsum.plan(size, 8, **kw)
    assert len(ranges) > 1 and all(start in {0, 5 * MIB, 12 * MIB, 17 * MIB}
                                   for start, _ in ranges), ranges
    partials = [mtsum.hash_range(local / "f", start, end, size=size, **kw)
                for start, end in ranges]
    assert mtsum.combine(partials) == from_python
    with pytest.raises(ValueError, match="invalid part sizes '4M,1': part 1 of 2 is 4M"):
        mtsum.file_digest(local / "f", layout="s3", leaf_size="4M,1")
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
    flip(local / "f", 6 * MIB)
    verdict = check(mtsum_bin, local, out.stdout)
    (local / "SUMS").unlink()
    assert verdict.returncode == 1 and "f: FAILED" in verdict.stdout, verdict.stdout
    flipped = compare(mtsum_bin, server, local, prefix)
    assert (flipped.returncode, flipped.stdout) == (1, "differs  f\n"), flipped.stderr


def test_middle_parts_that_differ_unseen_are_told_with_every_part_and_asked_by_compare(
        mtsum_bin, server, s3, tmp_path):  # noqa: F811
    local = tmp_path / "copy"
    local.mkdir()
    # 6, 7, 5, 6 MiB: the count and the last part are those of 6 MiB parts.
    parts = [random_bytes(n * MIB, 50 + n) for n in [6, 7, 5, 6]]
    upload_parts(s3, local, "inside/f", parts)
    # A name after it: its line comes after f's, whose second look it waits for.
    upload_parts(s3, local, "inside/g", [random_bytes(1000, 7)])
    seen = stored(mtsum_bin, server, "inside")
    assert "S3-MD5-6M (f) = " in seen.stdout
    # The first and last parts cannot tell: the line fails rather than passes.
    assert check(mtsum_bin, local, seen.stdout).returncode == 1
    told = run(mtsum_bin, "--stored", "--every-part", f"s3://{BUCKET}/inside/",
               env=writer_env(server))
    assert told.returncode == 0 and "S3-MD5-6M,7M,5M,6M (f) = " in told.stdout, told.stdout
    verdict = check(mtsum_bin, local, told.stdout)
    (local / "SUMS").unlink()
    assert verdict.returncode == 0 and ok_names(verdict) == {"f", "g"}
    # --compare needs no --every-part: an ETag that does not match the 6 MiB parts inferred
    # makes it ask every part's size, and hash the file again at their ends.
    same = compare(mtsum_bin, server, local, "inside")
    assert (same.returncode, same.stdout) == (0, "ok  f\nok  g\n"), same.stderr
    record, _ = mtsum.compare(local, f"s3://{BUCKET}/inside/",
                              storage_options=storage_options(server))
    assert record.status == "ok", record
    assert record.part_sizes == [n * MIB for n in [6, 7, 5, 6]], record
    # A byte of the third part flipped, size and mtime kept: that still differs.
    flip(local / "f", 14 * MIB)
    flipped = compare(mtsum_bin, server, local, "inside")
    assert (flipped.returncode, flipped.stdout) == (1, "differs  f\nok  g\n"), flipped.stderr


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


def test_json_gives_the_same_values_as_the_lines(mtsum_bin, server, s3, tmp_path):  # noqa: F811
    local = tmp_path / "copy"
    upload(s3, local, "json", "small", b"hello", part=5 * MIB)
    upload_parts(s3, local, "json/odd", [random_bytes(6 * MIB, 8), random_bytes(5 * MIB, 9),
                                         random_bytes(7, 10)])
    bare = writer_client(*server, config=Config(request_checksum_calculation="when_required"))
    bare.put_object(Bucket=BUCKET, Key="json/kms", Body=b"x", ServerSideEncryption="aws:kms")
    lines = stored(mtsum_bin, server, "json")
    out = run(mtsum_bin, "--stored", "--json", f"s3://{BUCKET}/json/", env=writer_env(server))
    assert (out.returncode, out.stderr) == (lines.returncode, lines.stderr) == (1, out.stderr)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    # One object per value, in the order of the lines; the same values.
    assert len(records) == len(lines.stdout.splitlines())
    values = [r for r in records if "expected" in r]
    for r in values:
        assert f" ({r['path']}) = {r['expected']}" in lines.stdout, r
        assert r["url"] == f"s3://{BUCKET}/json/{r['path']}"
    etag = {r["path"]: r for r in values if r["source"] == "ETag"}
    assert (etag["small"]["layout"], etag["small"]["algorithm"]) == ("plain", "md5")
    assert etag["small"]["size"] == 5
    odd = etag["odd"]
    assert (odd["layout"], odd["leaf_size"], odd["part_sizes"]) == ("s3", None,
                                                                      [6 * MIB, 5 * MIB, 7])
    [kms] = [r for r in records if r["path"] == "kms"]
    assert "aws:kms" in kms["why"] and "expected" not in kms, kms


def make_user(server, name, policy) -> dict[str, str]:
    """The environment of a new user `name` with the IAM policy `policy` (its statements)."""
    endpoint, keys = server
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id=keys["writer"][0],
                       aws_secret_access_key=keys["writer"][1])
    iam.create_user(UserName=name)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": policy}))
    env = writer_env(server)
    env.update(AWS_ACCESS_KEY_ID=key["AccessKeyId"], AWS_SECRET_ACCESS_KEY=key["SecretAccessKey"])
    return env


def test_an_object_that_answers_403_is_one_line_and_the_others_are_still_told(
        mtsum_bin, server, s3, tmp_path):  # noqa: F811
    # moto honours a user's policy on HEAD and GET alike (a bucket policy only on GET): every
    # right but reading one key, as a real bucket policy would deny it.
    env = make_user(server, "half-reader", [
        {"Effect": "Allow", "Action": "*", "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{BUCKET}/denied/secret"}])
    local = tmp_path / "copy"
    upload(s3, local, "denied", "open", b"open", part=5 * MIB)
    upload(s3, local, "denied", "secret", b"secret", part=5 * MIB)
    prefix = f"s3://{BUCKET}/denied/"
    refused = f"mtsum: {prefix}secret: access denied (403)"
    for args in [["--stored", prefix], ["--compare", str(local), prefix], ["-r", prefix]]:
        out = run(mtsum_bin, *args, env=env)
        assert out.returncode == 1, (args, out.stderr)
        # One line names an object (--compare's summary follows it).
        [line] = [line for line in out.stderr.splitlines() if prefix in line]
        assert line.startswith(refused) and out.stderr.startswith(line), out.stderr
        assert "panicked" not in out.stderr
    assert "(open) = " in run(mtsum_bin, "--stored", prefix, env=env).stdout
    compared = run(mtsum_bin, "--compare", str(local), prefix, env=env).stdout
    assert compared == "ok  open\nunreadable  secret\n", compared
    hashed = run(mtsum_bin, "-r", prefix, env=env).stdout
    assert hashed.endswith(f"  {prefix}open\n") and len(hashed.splitlines()) == 1, hashed


class RefusingProxy:
    """An HTTP proxy on loopback in front of the S3 server that answers a HEAD or GET of the
    object at path `refused` sent without an SSE-C key as S3 answers it for an object
    encrypted with a customer key: 400 and no body (a HEAD has none). moto keeps no SSE-C
    key, so it serves such objects to anyone; everything else is passed on as it came
    (signatures hold, the Host header is kept)."""

    def __init__(self, endpoint, refused):
        import http.client
        import http.server
        import threading
        target = endpoint.split("//", 1)[1]

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self):
                key_header = "x-amz-server-side-encryption-customer-key"
                if self.path.split("?")[0].endswith(refused) and key_header not in self.headers:
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection(target, timeout=60)
                upstream.request(self.command, self.path, body=body, headers=dict(self.headers))
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                # A HEAD's Content-Length is the object's, of a body not sent.
                dropped = {"transfer-encoding", "connection"}
                if self.command != "HEAD":
                    dropped.add("content-length")
                    self.send_header("Content-Length", str(len(data)))
                for name, value in answer.getheaders():
                    if name.lower() not in dropped:
                        self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_an_sse_c_object_is_said_to_be_encrypted_with_a_customer_key(
        mtsum_bin, server, s3, tmp_path):  # noqa: F811
    key = os.urandom(32)
    local = tmp_path / "copy"
    local.mkdir()
    for name, extra in [("plain", {}), ("secret", {"SSECustomerAlgorithm": "AES256",
                                                   "SSECustomerKey": key})]:
        (local / name).write_bytes(b"data of " + name.encode())
        s3.put_object(Bucket=BUCKET, Key=f"ssec/{name}", Body=b"data of " + name.encode(),
                      **extra)
    proxy = RefusingProxy(server[0], f"/{BUCKET}/ssec/secret")
    try:
        env = dict(writer_env(server), AWS_ENDPOINT_URL=proxy.endpoint)
        prefix = f"s3://{BUCKET}/ssec/"
        out = run(mtsum_bin, "--stored", prefix, env=env)
        assert out.returncode == 1, out.stderr
        assert "# secret: encrypted with a customer key (SSE-C)" in out.stdout, out.stdout
        assert "(plain) = " in out.stdout
        assert out.stderr.startswith(f"mtsum: {prefix}secret: no value to check a copy against: "
                                     "encrypted with a customer key (SSE-C)"), out.stderr
        compared = run(mtsum_bin, "--compare", str(local), prefix, env=env)
        assert compared.returncode == 1
        lines = compared.stdout.splitlines()
        assert lines[0] == "ok  plain" and lines[1].startswith(
            "unverified  secret  (encrypted with a customer key (SSE-C)"), compared.stdout
        # Named as an operand, without a listing: the same cause, not a bare 400.
        hashed = run(mtsum_bin, f"{prefix}secret", env=env)
        assert hashed.returncode == 1 and hashed.stdout == "", hashed.stdout
        assert hashed.stderr == (f"mtsum: {prefix}secret: encrypted with a customer key "
                                 "(SSE-C): the store answers 400 to a HEAD without the key\n"), \
            hashed.stderr
    finally:
        proxy.close()
