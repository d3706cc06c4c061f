"""Which files sum_files hashes and by what names: lists, single paths, glob patterns and
directories walked as `mtsum -r` walks them. mtsum.dask.sum_files follows the same rules
(test_dask.py checks that the two agree)."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

import mtsum


def cli_names(mtsum_bin, *args, cwd) -> list[str]:
    """The names `mtsum` prints for `args`, in order."""
    out = subprocess.run([mtsum_bin, *args], capture_output=True, text=True, cwd=cwd)
    return [line.split("  ", 1)[1] for line in out.stdout.splitlines()]


@pytest.fixture
def tree(tmp_path):
    """d/ with files at two depths, a name that sorts between `d` and `d/` (`d.bak`), a link
    to a file outside, a FIFO; and `outside`."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d.bak").mkdir()
    for name in ["d/b", "d/a", "d/sub/c", "d.bak/x", "outside"]:
        (tmp_path / name).write_bytes(name.encode())
    os.symlink(tmp_path / "outside", tmp_path / "d" / "link")
    os.mkfifo(tmp_path / "d" / "fifo")
    return tmp_path


def test_recursive_walks_a_directory_in_the_order_and_by_the_names_of_mtsum_r(
    mtsum_bin, tree, monkeypatch
):
    monkeypatch.chdir(tree)
    want = cli_names(mtsum_bin, "-r", "d", "d.bak", cwd=tree)
    assert want == ["d/a", "d/b", "d/sub/c", "d.bak/x"]
    sums = mtsum.sum_files(["d", "d.bak"], recursive=True)
    assert list(sums) == want
    assert all(s.ok for s in sums.values())
    assert sums["d/sub/c"].digest == mtsum.file_digest("d/sub/c")
    # Links below the directory are followed as with -L.
    followed = mtsum.sum_files("d", recursive=True, follow_symlinks=True)
    assert list(followed) == cli_names(mtsum_bin, "-r", "-L", "d", cwd=tree)
    assert followed["d/link"].digest == mtsum.file_digest("outside")
    # bytes in, bytes out; a path-like is its str.
    assert list(mtsum.sum_files(b"d", recursive=True)) == [os.fsencode(p) for p in want[:3]]
    assert list(mtsum.sum_files(tree / "d", recursive=True)) == [str(tree / p) for p in want[:3]]


def test_without_recursive_a_directory_is_an_error_row(tree):
    sums = mtsum.sum_files(tree / "d")
    assert sums[str(tree / "d")].error == f"{tree / 'd'}: Is a directory"


def test_a_glob_whose_directories_do_not_exist_raises_file_not_found(tmp_path):
    pattern = str(tmp_path / "datset" / "**" / "*.nc")
    with pytest.raises(FileNotFoundError) as e:
        mtsum.sum_files(pattern)
    assert e.value.filename == str(tmp_path / "datset")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(FileNotFoundError):
        mtsum.sum_files(pattern, allow_empty=True)


def test_a_glob_that_matches_nothing_raises_unless_allow_empty(tmp_path):
    pattern = str(tmp_path / "*.nc")
    with pytest.raises(FileNotFoundError) as e:
        mtsum.sum_files(pattern)
    assert e.value.filename == pattern
    assert mtsum.sum_files(pattern, allow_empty=True) == {}


def test_a_missing_path_with_glob_characters_is_never_silently_dropped(tmp_path):
    missing = str(tmp_path / "run[1].nc")
    # One path: a pattern that matches nothing, an error naming it.
    with pytest.raises(FileNotFoundError) as e:
        mtsum.sum_files(missing)
    assert e.value.filename == missing
    # In a list, paths are never patterns: its row says it is missing.
    assert mtsum.sum_files([missing])[missing].error == f"'{missing}': No such file or directory"


def test_a_glob_takes_regular_files_and_leaves_out_fifos_as_mtsum_r(tree, monkeypatch):
    monkeypatch.chdir(tree)
    assert list(mtsum.sum_files("d/*")) == ["d/a", "d/b", "d/link"]
    assert list(mtsum.sum_files("d*", recursive=True)) == ["d/a", "d/b", "d/sub/c", "d.bak/x"]


def test_relative_paths_are_reported_as_given(tree, monkeypatch):
    monkeypatch.chdir(tree)
    sums = mtsum.sum_files(["d/a", "./outside", "missing"])
    assert list(sums) == ["d/a", "./outside", "missing"]
    assert sums["missing"].error == "missing: No such file or directory"
