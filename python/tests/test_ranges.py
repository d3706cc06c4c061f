"""plan / hash_range / combine: ranges hashed apart, in any order and split any way the plan
allows, give file_digest's root; wrong sets of partials are refused naming the bytes."""

from __future__ import annotations

import itertools
import random

import pytest

import mtsum
from conftest import random_bytes

KW = dict(algorithm="sha256", layout="rfc6962", leaf_size=64)
JOB = 4 << 20  # the fixed-leaf layouts' jobs: 4 MiB


@pytest.fixture(scope="module")
def file_of_five_jobs(tmp_path_factory):
    p = tmp_path_factory.mktemp("ranges") / "f"
    p.write_bytes(random_bytes(4 * JOB + 1000, 5))
    return p


def partials_of(path, ranges, **kw):
    return [mtsum.hash_range(path, s, e, **kw) for s, e in ranges]


def test_plan_cuts_at_job_boundaries_into_about_equal_ranges():
    size = 10 * JOB + 5
    assert mtsum.plan(size, 1, **KW) == [(0, size)]
    assert mtsum.plan(size, 2, **KW) == [(0, 5 * JOB), (5 * JOB, size)]
    assert mtsum.plan(size, 100, **KW) == [(i * JOB, min((i + 1) * JOB, size)) for i in range(11)]
    three = mtsum.plan(size, 3, **KW)
    assert [e - s for s, e in three] == [3 * JOB, 4 * JOB, 3 * JOB + 5]
    # Empty files and layouts that cannot be split.
    assert mtsum.plan(0, 5, **KW) == [(0, 0)]
    assert mtsum.plan(0, 5) == [(0, 0)]
    assert mtsum.plan(1, 5) == [(0, 1)]
    assert mtsum.plan(10 * JOB, 5, "sha256", "plain") == [(0, 10 * JOB)]
    assert len(mtsum.plan(10 * JOB, 5, "blake3", "plain")) == 5
    # The mtsum layout: leaves of at most 128 MiB; a 1 TiB file in 4096 parts of 256 MiB.
    assert mtsum.plan(300 << 20, 10) == [(i * 75 << 20, (i + 1) * 75 << 20) for i in range(4)]
    tera = mtsum.plan(1 << 40, 4096)
    assert len(tera) == 4096 and {e - s for s, e in tera} == {256 << 20}


def test_ranges_in_every_order_and_every_split_give_the_root(file_of_five_jobs):
    path = file_of_five_jobs
    size = path.stat().st_size
    want = mtsum.file_digest(path, **KW)
    jobs = mtsum.plan(size, 1000, **KW)
    assert len(jobs) == 5
    one_per_job = partials_of(path, jobs, **KW)
    for order in itertools.permutations(one_per_job):
        assert mtsum.combine(order) == want
    # Every way of grouping the 5 jobs into consecutive ranges (2^4 splits).
    cuts = [s for s, _ in jobs[1:]]
    for mask in range(1 << len(cuts)):
        chosen = [c for i, c in enumerate(cuts) if mask >> i & 1]
        ends = [0, *chosen, size]
        ranges = list(zip(ends, ends[1:]))
        partials = partials_of(path, ranges, **KW)
        random.Random(mask).shuffle(partials)
        assert mtsum.combine(partials) == want, ranges


def test_a_partial_is_one_line_naming_layout_size_and_range(file_of_five_jobs):
    size = file_of_five_jobs.stat().st_size
    line = mtsum.hash_range(file_of_five_jobs, JOB, 3 * JOB, **KW)
    magic, tag, got_size, rng, digests = line.split(" ")
    assert (magic, tag, int(got_size), rng) == ("MTSUM-PARTIAL/2", "RFC6962-SHA256-64", size, f"{JOB}-{3 * JOB}")
    assert len(digests) == 2 * 64 and "\n" not in line
    # Read back with surrounding white space, as from a file of lines.
    rest = partials_of(file_of_five_jobs, [(0, JOB), (3 * JOB, size)], **KW)
    assert mtsum.combine([line + "\n", *rest]) == mtsum.file_digest(file_of_five_jobs, **KW)


def test_wrong_sets_of_partials_are_refused_naming_the_bytes(file_of_five_jobs, tmp_path):
    path = file_of_five_jobs
    size = path.stat().st_size
    a, b, c = partials_of(path, [(0, JOB), (JOB, 3 * JOB), (3 * JOB, size)], **KW)
    with pytest.raises(ValueError, match=f"bytes {JOB}-{3 * JOB} are missing"):
        mtsum.combine([a, c])
    with pytest.raises(ValueError, match=f"bytes {3 * JOB}-{size} are missing"):
        mtsum.combine([a, b])
    with pytest.raises(ValueError, match="bytes 0-4194304 are missing"):
        mtsum.combine([b, c])
    overlapping = mtsum.hash_range(path, 2 * JOB, 4 * JOB, **KW)
    with pytest.raises(ValueError, match=f"partials overlap: bytes {JOB}-{3 * JOB} and {2 * JOB}-{4 * JOB}"):
        mtsum.combine([a, b, overlapping, c])
    with pytest.raises(ValueError, match="no partials"):
        mtsum.combine([])
    # The same partial twice counts once; the same range with other digests is refused.
    assert mtsum.combine([a, b, b, c]) == mtsum.file_digest(path, **KW)
    forged = b[:-1] + ("0" if b[-1] != "0" else "1")
    with pytest.raises(ValueError, match=f"two partials of bytes {JOB}-{3 * JOB} disagree"):
        mtsum.combine([a, b, forged, c])
    # Another layout, algorithm or size.
    other = mtsum.hash_range(path, 0, JOB, "sha256", "rfc6962", 128)
    with pytest.raises(ValueError, match="partials of different inputs: RFC6962-SHA256-64, .* and RFC6962-SHA256-128"):
        mtsum.combine([a, b, c, other])
    longer = tmp_path / "longer"
    longer.write_bytes(path.read_bytes() + b"x")
    with pytest.raises(ValueError, match=f"{size} bytes and RFC6962-SHA256-64, {size + 1} bytes"):
        mtsum.combine([a, b, mtsum.hash_range(longer, 3 * JOB, size + 1, **KW)])
    # Lines that are not partials, or lie about their digests.
    for junk in ["", "hello", a.replace("MTSUM-PARTIAL/2", "MTSUM-PARTIAL/1"), a + "0", a.replace(" 0-", " x-")]:
        with pytest.raises(ValueError, match="not a partial line"):
            mtsum.combine([junk])
    doubled = a + a.rsplit(" ", 1)[1]
    with pytest.raises(ValueError, match=f"the partial of bytes 0-{JOB} holds 2 digests where the range has 1 nodes"):
        mtsum.combine([doubled, b, c])


def test_a_range_off_the_plan_or_of_a_changed_file_is_refused(file_of_five_jobs, tmp_path):
    path = file_of_five_jobs
    size = path.stat().st_size
    for start, end in [(1, JOB), (0, JOB + 1), (JOB, JOB), (2 * JOB, JOB), (0, size + 1)]:
        with pytest.raises(ValueError, match=f"bytes {start}-{end} are not a range of the plan of RFC6962-SHA256-64, {size} bytes"):
            mtsum.hash_range(path, start, end, **KW)
    with pytest.raises(OSError, match=f"{path}: changed while being read"):
        mtsum.hash_range(path, 0, JOB, size=size - 1, **KW)


@pytest.mark.parametrize("size", [0, 1, 2, 3])
def test_tiny_files_are_one_range_and_combine(tmp_path, size):
    p = tmp_path / "tiny"
    p.write_bytes(random_bytes(size, size))
    for layout, leaf in [("mtsum", None), ("plain", None), ("merkle", 1), ("rfc6962", 1)]:
        kw = dict(algorithm="sha256", layout=layout, leaf_size=leaf)
        ranges = mtsum.plan(size, 4, **kw)
        partials = partials_of(p, ranges, **kw)
        assert mtsum.combine(reversed(partials)) == mtsum.file_digest(p, **kw), (layout, ranges)


@pytest.mark.parametrize(
    "call",
    [
        lambda path: mtsum.plan(2**63, 10**6),
        lambda path: mtsum.hash_range(path, 0, 2**62, size=2**62),
        lambda path: mtsum.combine(["MTSUM-PARTIAL/2 MTSUM-SHA256 1000000000000000000 0-0 -"]),
    ],
    ids=["plan", "hash_range", "combine of a forged line"],
)
def test_a_size_of_more_jobs_than_a_plan_holds_is_a_value_error_not_an_abort(tmp_path, call):
    """Billions of jobs would be made in memory before anything else is checked."""
    path = tmp_path / "f"
    path.write_bytes(b"small")
    with pytest.raises(ValueError, match=r"^MTSUM-SHA256, \d+ bytes is too large to plan: \d+ jobs, at most 16777216$"):
        call(path)
