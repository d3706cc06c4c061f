"""mtsum.dask on a real LocalCluster of two worker processes (real serialisation): one file in
ranges, many files in batches and ranges, and a worker killed in the middle of a run."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys

import pytest

distributed = pytest.importorskip("distributed")
pandas = pytest.importorskip("pandas")
import cloudpickle  # noqa: E402  (a dependency of distributed)

import mtsum  # noqa: E402
import mtsum.dask  # noqa: E402
from conftest import random_bytes, without_blocking  # noqa: E402

# The worker plugin below travels by value: the workers cannot import this test module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

JOB = 4 << 20


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    p = tmp_path_factory.mktemp("dask") / "big.bin"
    p.write_bytes(random_bytes(10 * JOB + 77, 11))
    return p


@pytest.mark.parametrize(
    "layout,leaf,algorithm",
    [("mtsum", None, "sha256"), ("rfc6962", 64, "sha256"), ("merkle", "1M", "md5"),
     ("plain", None, "blake3"), ("plain", None, "sha1")],
)
def test_one_file_on_the_cluster_gives_the_local_digest(client, big, layout, leaf, algorithm):
    kw = dict(algorithm=algorithm, layout=layout, leaf_size=leaf)
    want = mtsum.file_digest(big, **kw)
    assert mtsum.dask.file_digest(big, client=client, **kw) == want
    assert mtsum.dask.file_digest(big, client=client, parts=7, **kw) == want
    assert mtsum.dask.file_digest(str(big), client=client, parts=1, **kw) == want


def test_the_default_client_is_the_current_one(client, big):
    assert mtsum.dask.file_digest(big) == mtsum.file_digest(big)


def test_errors_are_raised_before_any_task(client, tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        mtsum.dask.file_digest(tmp_path / "missing", client=client)
    with pytest.raises(IsADirectoryError):
        mtsum.dask.file_digest(tmp_path, client=client)
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(ValueError, match="unknown algorithm"):
        mtsum.dask.file_digest(tmp_path / "f", client=client, algorithm="sha3")


class DieAfterFirstPart(distributed.WorkerPlugin):
    """Kills the worker that first finishes a range, once in the cluster's life (the marker
    file says it happened): the scheduler must run its lost and pending tasks elsewhere."""

    def __init__(self, marker: str):
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        if finish != "memory" or "_hash_part" not in str(key):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_during_a_run_does_not_change_the_digest(client, big, tmp_path):
    kw = dict(algorithm="sha256", layout="rfc6962", leaf_size="4K")
    want = mtsum.file_digest(big, **kw)
    marker = tmp_path / "killed"
    client.register_plugin(DieAfterFirstPart(str(marker)), name="die-after-first-part")
    try:
        got = mtsum.dask.file_digest(big, client=client, parts=11, **kw)
    finally:
        client.unregister_worker_plugin("die-after-first-part")
    assert marker.exists(), "no worker was killed"
    assert got == want
    client.wait_for_workers(2)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """30 small files in nested directories, two larger ones, an empty one."""
    root = tmp_path_factory.mktemp("tree")
    paths = []
    for i in range(30):
        d = root / f"d{i % 3}" / ("sub" if i % 2 else "")
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"file {i:02d}.bin"
        p.write_bytes(random_bytes(i * 1000 + i % 7, i))
        paths.append(p)
    for name, size in [("large-a", 5 * JOB + 1), ("large-b", 3 * JOB), ("empty", 0)]:
        p = root / name
        p.write_bytes(random_bytes(size, size))
        paths.append(p)
    return root, paths


def test_many_files_on_the_cluster_in_batches_and_ranges(client, tree, monkeypatch):
    root, paths = tree
    # Small parts, so that the large files go in ranges and the small ones in several batches.
    monkeypatch.setattr(mtsum.dask, "PART_BYTES", 2 * JOB)
    monkeypatch.setattr(mtsum.dask, "BATCH_FILES", 7)
    kw = dict(algorithm="sha256", layout="rfc6962", leaf_size=1024)
    missing = root / "missing"
    listed = [*paths, missing, root / "d0"]
    frame = mtsum.dask.sum_files(listed, client=client, **kw)
    assert list(frame.columns) == ["path", "bytes", "digest", "error"]
    assert list(frame["path"]) == [str(p) for p in listed]
    local = mtsum.sum_files(listed, **kw)
    for row in frame.itertuples():
        got = tuple(None if pandas.isna(v) else v for v in (row.bytes, row.digest, row.error))
        assert got == local[row.path], row.path
    assert frame["error"].notna().sum() == 2
    assert frame.loc[frame["path"] == str(missing), "error"].item() == f"{missing}: No such file or directory"


def test_a_glob_gives_its_files_in_byte_order(client, tree):
    root, paths = tree
    frame = mtsum.dask.sum_files(str(root / "**" / "*.bin"), client=client)
    files = sorted((str(p) for p in paths if p.suffix == ".bin"), key=os.fsencode)
    assert list(frame["path"]) == files
    assert frame["error"].isna().all()
    assert list(frame["digest"]) == [s.digest for s in mtsum.sum_files(files).values()]
    assert list(frame["bytes"]) == [os.path.getsize(f) for f in files]


def test_a_glob_that_matches_nothing_is_an_empty_frame_only_if_allowed(client, tmp_path):
    with pytest.raises(FileNotFoundError):
        mtsum.dask.sum_files(str(tmp_path / "*.none"), client=client)
    frame = mtsum.dask.sum_files(str(tmp_path / "*.none"), client=client, allow_empty=True)
    assert list(frame.columns) == ["path", "bytes", "digest", "error"]
    assert len(frame) == 0
    assert mtsum.sum_files([]) == {}


def test_an_existing_path_with_glob_characters_is_that_file(client, tmp_path):
    f = tmp_path / "run[1].nc"
    f.write_bytes(b"data")
    for given in [str(f), f, os.fsencode(f)]:
        frame = mtsum.dask.sum_files(given, client=client)
        assert list(frame["path"]) == [os.fspath(given) if not isinstance(given, bytes) else given]
        assert list(frame["digest"]) == [mtsum.file_digest(f)]
    assert mtsum.dask.file_digest(os.fsencode(f), client=client) == mtsum.file_digest(f)


def test_the_default_algorithm_is_the_layouts(client, big):
    assert mtsum.dask.file_digest(big, layout="s3") == mtsum.file_digest(big, "md5", "s3")
    frame = mtsum.dask.sum_files([big], client=client, layout="s3")
    assert list(frame["digest"]) == [mtsum.file_digest(big, "md5", "s3")]


def test_a_fifo_never_blocks_the_client_or_a_worker(client, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "a").write_bytes(b"a")
    with pytest.raises(io.UnsupportedOperation) as e:
        without_blocking(fifo, lambda: mtsum.dask.file_digest(fifo, client=client))
    assert e.value.filename == str(fifo)
    # Found by a glob, it is left out, as mtsum -r leaves it out; named, it is a row with its
    # error.
    frame = without_blocking(fifo, lambda: mtsum.dask.sum_files(str(tmp_path / "*"), client=client))
    assert list(frame["path"]) == [str(tmp_path / "a")]
    frame = without_blocking(fifo, lambda: mtsum.dask.sum_files([fifo], client=client))
    assert frame["error"].item().startswith(f"{fifo}: cannot hash a range of a stream")


def test_a_typo_in_a_glob_raises_instead_of_an_empty_frame(client, tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        mtsum.dask.sum_files(str(tmp_path / "datset" / "**" / "*.nc"), client=client)
    assert e.value.filename == str(tmp_path / "datset")
    missing = str(tmp_path / "run[1].nc")
    with pytest.raises(FileNotFoundError) as e:
        mtsum.dask.sum_files(missing, client=client)
    assert e.value.filename == missing
    frame = mtsum.dask.sum_files([missing], client=client)
    assert frame["error"].item() == f"'{missing}': No such file or directory"


def test_relative_paths_join_with_the_local_results(client, tree, monkeypatch):
    root, _ = tree
    monkeypatch.chdir(root)
    for given in [["d0/file 00.bin", "./large-a", "missing"], "**/*.bin"]:
        frame = mtsum.dask.sum_files(given, client=client)
        local = mtsum.sum_files(given)
        assert list(frame["path"]) == list(local)
        for row in frame.itertuples():
            assert local[row.path].error == (None if row.error is pandas.NA else row.error)
            assert local[row.path].digest == (None if row.digest is pandas.NA else row.digest)
    with pytest.raises(FileNotFoundError) as e:
        mtsum.dask.file_digest("missing", client=client)
    assert e.value.filename == "missing"


def test_recursive_gives_the_files_of_mtsum_r_in_a_frame_with_bytes_and_na(client, tree, mtsum_bin):
    root, _ = tree
    frame = mtsum.dask.sum_files(root, client=client, recursive=True)
    out = subprocess.run([mtsum_bin, "-r", str(root)], capture_output=True, text=True, check=True)
    names = [line.split("  ", 1)[1] for line in out.stdout.splitlines()]
    assert list(frame["path"]) == names
    assert list(frame.columns) == ["path", "bytes", "digest", "error"]
    assert list(frame["bytes"]) == [os.path.getsize(n) for n in names]
    assert frame["error"].iloc[0] is pandas.NA
    failed = mtsum.dask.sum_files([root / "missing"], client=client)
    assert failed["bytes"].iloc[0] is pandas.NA
    assert failed["digest"].iloc[0] is pandas.NA


def test_an_error_in_a_task_is_raised_here_and_not_logged_by_the_worker(client, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="an empty file has no btv2 pieces root"):
        mtsum.dask.file_digest(empty, client=client, layout="btv2")
    logs = client.get_worker_logs()
    assert not any("Compute Failed" in line for lines in logs.values() for _, line in lines)
