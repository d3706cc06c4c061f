"""Every layout x algorithm gives the CLI's digest, through every entry point of the binding:
file_digest, sum_files, Hasher fed in random pieces, and ranges hashed apart and combined."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import random
import subprocess

import pytest

import mtsum
from conftest import ALGORITHMS, LAYOUTS, cli, defined, random_bytes


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("layout,leaf", LAYOUTS)
def test_every_entry_point_gives_the_cli_digest(mtsum_bin, files, layout, leaf, algorithm):
    if not defined(layout, algorithm):
        with pytest.raises(ValueError):
            mtsum.Hasher(algorithm=algorithm, layout=layout, leaf_size=leaf)
        return
    expected = cli(mtsum_bin, files, algorithm, layout, leaf)
    assert len(expected) == len(files)
    kw = dict(algorithm=algorithm, layout=layout, leaf_size=leaf)

    assert [mtsum.file_digest(p, **kw) for p in files] == expected
    sums = mtsum.sum_files(files, **kw)
    assert [s.digest for s in sums.values()] == expected
    assert [s.bytes for s in sums.values()] == [p.stat().st_size for p in files]

    rng = random.Random(f"{layout}{leaf}{algorithm}")
    for path, want in zip(files, expected):
        data = path.read_bytes()
        h = mtsum.Hasher(**kw)
        at = 0
        while at < len(data):
            step = rng.choice([1, 7, 64, 4096, 100_000, 1 << 20, 3 << 20])
            h.update(memoryview(data)[at : at + step])
            at += step
        assert h.hexdigest() == want, path.name
        assert h.digest().hex() == want

        size = len(data)
        for parts in (1, 3, 1000):
            partials = [
                mtsum.hash_range(path, s, e, size=size, threads=2, **kw)
                for s, e in mtsum.plan(size, parts, **kw)
            ]
            rng.shuffle(partials)
            assert mtsum.combine(partials) == want, (path.name, parts)


@pytest.mark.parametrize("algorithm", ["sha256", "md5", "blake3"])
def test_a_file_of_several_mtsum_leaves_gives_the_cli_digest(mtsum_bin, big_sparse, algorithm):
    size = big_sparse.stat().st_size
    for layout, leaf in [("mtsum", None), ("rfc6962", "1M"), ("plain", None)]:
        kw = dict(algorithm=algorithm, layout=layout, leaf_size=leaf)
        [want] = cli(mtsum_bin, [big_sparse], algorithm, layout, leaf)
        assert mtsum.file_digest(big_sparse, **kw) == want
        assert mtsum.file_digest(big_sparse, threads=1, **kw) == want
        ranges = mtsum.plan(size, 7, **kw)
        partials = [mtsum.hash_range(big_sparse, s, e, **kw) for s, e in reversed(ranges)]
        assert mtsum.combine(partials) == want


def test_plain_digests_are_hashlibs(files):
    for path in files:
        data = path.read_bytes()
        for name in ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"]:
            want = hashlib.new(name, data).hexdigest()
            assert mtsum.file_digest(path, name, "plain") == want


def test_leaf_size_is_taken_as_bytes_or_as_the_cli_spells_it(files):
    path = files[-1]
    by_int = mtsum.file_digest(path, layout="rfc6962", leaf_size=4096)
    assert mtsum.file_digest(path, layout="rfc6962", leaf_size="4K") == by_int
    assert mtsum.file_digest(path, layout="rfc6962", leaf_size="4KiB") == by_int
    assert mtsum.file_digest(path, layout="rfc6962") == mtsum.file_digest(
        path, layout="rfc6962", leaf_size="1M"
    )


def test_the_digest_does_not_depend_on_the_thread_count(files):
    path = files[-1]
    digests = {mtsum.file_digest(path, "sha256", "rfc6962", 64, threads=t) for t in (1, 2, 5)}
    assert len(digests) == 1


@pytest.mark.parametrize("algorithm", ["md5", "sha256", "blake3", "crc32c"])
@pytest.mark.parametrize("layout", mtsum.LAYOUTS)
def test_every_listed_layout_gives_the_cli_digest_or_is_refused_as_by_the_cli(
    mtsum_bin, files, layout, algorithm
):
    # The largest file spans two parts of s3's default 8 MiB: a multipart ETag.
    args = [mtsum_bin, "--json", "-a", algorithm, "-t", layout]
    out = subprocess.run(args + [str(p) for p in files], capture_output=True, text=True)
    if out.returncode == 2:
        with pytest.raises(ValueError):
            mtsum.file_digest(files[0], algorithm, layout)
        with pytest.raises(ValueError):
            mtsum.Hasher(algorithm, layout)
        return
    results = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["path"] for r in results] == [str(p) for p in files]
    for path, result in zip(files, results):
        if "error" in result:
            # btv2 has no root for an empty file: the CLI's error, raised.
            with pytest.raises(ValueError) as raised:
                mtsum.file_digest(path, algorithm, layout)
            assert str(raised.value) == f"{path}: {result['error']}"
            continue
        want = result["digest"]
        assert mtsum.file_digest(path, algorithm, layout) == want, path.name
        h = mtsum.Hasher(algorithm, layout)
        h.update(path.read_bytes())
        assert h.value() == want, path.name
        size = path.stat().st_size
        partials = [
            mtsum.hash_range(path, s, e, algorithm, layout)
            for s, e in mtsum.plan(size, 3, algorithm, layout)
        ]
        assert mtsum.combine(partials) == want, path.name


def test_the_layouts_listed_are_the_ones_the_cli_knows(mtsum_bin):
    out = subprocess.run([mtsum_bin, "-t", "bogus"], capture_output=True, text=True)
    assert out.returncode == 2
    known = out.stderr.split("(known: ")[1].split(")")[0].split(", ")
    assert mtsum.LAYOUTS == known


def test_names_and_constants():
    assert mtsum.ALGORITHMS == ALGORITHMS
    assert mtsum.LAYOUTS == [
        "mtsum", "plain", "merkle", "rfc6962", "s3", "glacier", "dropbox", "btv2",
    ]
    assert mtsum.Hasher("sha256", "plain").name == "sha256"
    assert mtsum.Hasher("sha256").name == "mtsum-sha256"
    h = mtsum.Hasher("blake3", "rfc6962", "1M")
    assert (h.name, h.algorithm, h.layout, h.leaf_size) == ("rfc6962-blake3-1m", "blake3", "rfc6962", 1 << 20)
    assert mtsum.Hasher("xxh3", "plain").digest_size == 8
    assert mtsum.Hasher("sha512").digest_size == 64


class BytesPath:
    """A path-like object whose path is bytes, as ``os.fspath`` takes it."""

    def __init__(self, path: bytes):
        self.path = path

    def __fspath__(self) -> bytes:
        return self.path


def test_a_path_is_str_bytes_or_path_like_of_either_everywhere(tmp_path):
    data = random_bytes(5000, 4)
    # A name that is not UTF-8 can be given only as bytes.
    raw = os.fsencode(tmp_path) + b"/caf\xe9.bin"
    with open(raw, "wb") as f:
        f.write(data)
    want = mtsum.file_digest(os.fsdecode(raw))
    for path in [raw, BytesPath(raw), os.fsdecode(raw), pathlib.Path(os.fsdecode(raw))]:
        assert mtsum.file_digest(path) == want, path
        assert mtsum.sum_files([path])[os.fspath(path)] == (5000, want, None), path
        partials = [mtsum.hash_range(path, s, e) for s, e in mtsum.plan(5000, 2)]
        assert mtsum.combine(partials) == want, path
    missing = os.fsencode(tmp_path) + b"/missing"
    with pytest.raises(FileNotFoundError) as e:
        mtsum.file_digest(missing)
    assert e.value.filename == os.fsdecode(missing)
    assert mtsum.sum_files([missing])[missing].error.endswith("missing: No such file or directory")


def test_sum_files_takes_a_single_path_as_that_one_file(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"abc")
    want = {str(f): (3, mtsum.file_digest(f), None)}
    assert mtsum.sum_files(str(f)) == want
    assert mtsum.sum_files(f) == want
    assert mtsum.sum_files(BytesPath(os.fsencode(f))) == {os.fsencode(f): want[str(f)]}
    assert mtsum.sum_files(os.fsencode(f)) == {os.fsencode(f): want[str(f)]}


def test_the_default_algorithm_is_the_layouts_as_in_the_cli(mtsum_bin, files):
    """md5 for s3 (the ETag), sha256 for every other layout: ``mtsum -t LAYOUT`` without -a."""
    f = files[-1]  # two parts of s3's 8 MiB: a multipart ETag
    size = f.stat().st_size
    for layout in mtsum.LAYOUTS:
        out = subprocess.run([mtsum_bin, "--no-names", "-t", layout, str(f)],
                             check=True, capture_output=True, text=True)
        want = out.stdout.strip()
        assert mtsum.file_digest(f, layout=layout) == want, layout
        assert mtsum.sum_files([f], layout=layout)[str(f)].digest == want, layout
        partials = [mtsum.hash_range(f, s, e, layout=layout) for s, e in mtsum.plan(size, 3, layout=layout)]
        assert mtsum.combine(partials) == want, layout
        h = mtsum.Hasher(layout=layout)
        h.update(f.read_bytes())
        assert h.value() == want, layout
        assert h.algorithm == ("md5" if layout == "s3" else "sha256")
