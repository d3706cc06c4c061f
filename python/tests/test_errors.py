"""Bad input raises the exception Python raises for the same cause, with the CLI's message
(`mtsum: NAME: cause` without `mtsum: `); one bad file never stops sum_files."""

from __future__ import annotations

import errno
import io
import os
import re
import subprocess
import sys
import threading

import pytest

import mtsum
from conftest import without_blocking


def cli_error(mtsum_bin, *args) -> str:
    """The CLI's error line for `args`, without `mtsum: `."""
    out = subprocess.run([mtsum_bin, *args], capture_output=True, text=True)
    assert out.returncode != 0
    line = out.stderr.strip().splitlines()[0]
    assert line.startswith("mtsum: ")
    return line[len("mtsum: ") :]


def test_a_missing_file_is_file_not_found_and_its_row_the_cli_message(mtsum_bin, tmp_path):
    missing = tmp_path / "no such file"
    with pytest.raises(FileNotFoundError) as e:
        mtsum.file_digest(missing)
    assert (e.value.errno, e.value.strerror) == (errno.ENOENT, "No such file or directory")
    error = mtsum.sum_files([missing])[str(missing)].error
    assert error == cli_error(mtsum_bin, str(missing))
    assert error == f"'{missing}': No such file or directory"
    with pytest.raises(FileNotFoundError):
        mtsum.hash_range(missing, 0, 0)


def test_a_directory_is_is_a_directory_error(mtsum_bin, tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        mtsum.file_digest(tmp_path)
    assert e.value.errno == errno.EISDIR
    error = mtsum.sum_files([tmp_path])[str(tmp_path)].error
    assert error == cli_error(mtsum_bin, str(tmp_path))


def test_bad_parameters_are_value_errors_with_the_librarys_messages(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"^unknown algorithm 'sha3' \(known: md5, sha1"):
        mtsum.file_digest(f, algorithm="sha3")
    with pytest.raises(ValueError, match=r"^unknown layout 'tree'"):
        mtsum.Hasher(layout="tree")
    with pytest.raises(ValueError, match="the mtsum layout has no leaf size"):
        mtsum.file_digest(f, layout="mtsum", leaf_size=64)
    with pytest.raises(ValueError, match="must be at least 1 byte"):
        mtsum.file_digest(f, layout="merkle", leaf_size=0)
    with pytest.raises(ValueError, match="invalid leaf size '-3'"):
        mtsum.plan(10, 2, layout="merkle", leaf_size=-3)
    with pytest.raises(ValueError, match="invalid leaf size '4Q'"):
        mtsum.sum_files([f], layout="merkle", leaf_size="4Q")
    with pytest.raises(ValueError, match="at least 1"):
        mtsum.file_digest(f, threads=0)
    with pytest.raises(ValueError, match="at least 1"):
        mtsum.plan(10, 0)


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert message and "\n" not in message, message
    return message


def test_negative_or_too_large_numbers_are_value_errors_as_zero_is(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    calls = {
        "threads": lambda n: mtsum.file_digest(f, threads=n),
        "sum_files threads": lambda n: mtsum.sum_files([f], threads=n),
        "size": lambda n: mtsum.plan(n, 2),
        "parts": lambda n: mtsum.plan(10, n),
        "start": lambda n: mtsum.hash_range(f, n, 1),
        "end": lambda n: mtsum.hash_range(f, 0, n),
        "hash_range size": lambda n: mtsum.hash_range(f, 0, 1, size=n),
        "hash_range threads": lambda n: mtsum.hash_range(f, 0, 1, threads=n),
    }
    for name, call in calls.items():
        # At most 2**64 parts is no limit: there are never that many jobs.
        for n in [-1, -(2**70)] + ([] if name == "parts" else [2**64]):
            with pytest.raises(ValueError) as e:
                call(n)
            one_line(e)
            assert not isinstance(e.value, OverflowError), (name, n)
    assert mtsum.plan(10, 2**64) == mtsum.plan(10, 100)
    for wrong in [1.0, True, "3"]:
        with pytest.raises(TypeError, match="^size must be an int, not"):
            mtsum.plan(wrong, 2)


def test_a_leaf_size_is_an_int_or_a_string_and_anything_else_a_one_line_error(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    with pytest.raises(ValueError, match=f"^invalid leaf size '{2**200}'") as e:
        mtsum.file_digest(f, layout="merkle", leaf_size=2**200)
    one_line(e)
    for wrong in [4096.0, True, b"4K", [4096]]:
        with pytest.raises(TypeError, match="^leaf_size must be an int or a str") as e:
            mtsum.file_digest(f, layout="merkle", leaf_size=wrong)
        one_line(e)
        with pytest.raises(TypeError, match="^leaf_size must be an int or a str"):
            mtsum.Hasher("sha256", "merkle", wrong)


def test_combine_takes_strings_only(tmp_path):
    with pytest.raises(TypeError) as e:
        mtsum.combine([1])
    one_line(e)
    with pytest.raises(TypeError):
        mtsum.combine("MTSUM-PARTIAL/2 MTSUM-SHA256 0 0-0 -")


def test_a_file_without_a_digest_in_the_layout_is_a_value_error_as_for_hasher(mtsum_bin, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    cause = "an empty file has no btv2 pieces root (BEP 52)"
    with pytest.raises(ValueError) as e:
        mtsum.file_digest(empty, layout="btv2")
    assert not isinstance(e.value, OSError)
    assert str(e.value) == cli_error(mtsum_bin, "-t", "btv2", str(empty)) == f"{empty}: {cause}"
    with pytest.raises(ValueError) as e:
        mtsum.Hasher(layout="btv2").hexdigest()
    assert str(e.value) == cause
    assert mtsum.sum_files([empty], layout="btv2")[str(empty)].error == f"{empty}: {cause}"


def test_sum_files_reports_each_bad_file_and_hashes_the_others(tmp_path):
    good = tmp_path / "good"
    good.write_bytes(b"abc")
    missing = tmp_path / "missing"
    result = mtsum.sum_files([good, missing, tmp_path, good])
    assert list(result) == [str(good), str(missing), str(tmp_path)]
    assert result[str(good)] == (3, mtsum.file_digest(good), None)
    assert result[str(good)].ok
    assert result[str(missing)] == (None, None, f"{missing}: No such file or directory")
    assert not result[str(missing)].ok
    assert result[str(tmp_path)].error == f"{tmp_path}: Is a directory"


def feed(fifo, data: bytes) -> threading.Thread:
    """A thread that writes `data` into `fifo` (opening it waits for the reader); a reader
    that hangs up early is no error."""
    def write():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass
    writer = threading.Thread(target=write)
    writer.start()
    return writer


def test_a_fifo_is_a_stream_that_the_mtsum_layout_holds_up_to_64_mib(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    copy = tmp_path / "copy"
    copy.write_bytes(b"abc")
    writer = feed(fifo, b"abc")
    assert mtsum.file_digest(fifo) == mtsum.file_digest(copy)
    writer.join()
    writer = feed(fifo, bytes((64 << 20) + 1))
    with pytest.raises(io.UnsupportedOperation,
                       match="cannot hash a stream of more than 64 MiB with the mtsum layout"):
        mtsum.file_digest(fifo)
    writer.join()


def unprivileged(script: str, cwd) -> subprocess.CompletedProcess | None:
    """Runs `script` in a child Python (in `cwd`, away from the sources beside the tests) that root's DAC override does not help (the
    capabilities dropped, else as nobody); None if neither can be arranged."""
    if os.geteuid() != 0:
        wrappers = [[]]
    else:
        wrappers = [
            ["setpriv", "--bounding-set=-dac_override,-dac_read_search"],
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
        ]
    for wrapper in wrappers:
        try:
            probe = subprocess.run(wrapper + [sys.executable, "-c", "import mtsum"],
                                   capture_output=True, cwd=cwd)
        except FileNotFoundError:
            continue
        if probe.returncode == 0:
            return subprocess.run(wrapper + [sys.executable, "-c", script],
                                  capture_output=True, text=True, cwd=cwd)
    return None


def test_an_unreadable_file_is_permission_error_with_the_cli_message(mtsum_bin, tmp_path):
    f = tmp_path / "secret"
    f.write_bytes(b"x")
    f.chmod(0)
    tmp_path.chmod(0o755)
    script = (
        "import mtsum, sys\n"
        "try:\n"
        f"    mtsum.file_digest({str(f)!r})\n"
        "except PermissionError as e:\n"
        "    print(e.errno, e.strerror, e.filename, sep='|')\n"
        "print(mtsum.sum_files([" + repr(str(f)) + "])[" + repr(str(f)) + "].error)\n"
    )
    out = unprivileged(script, tmp_path)
    if out is None:
        pytest.skip("cannot run a child without root's DAC override (setpriv missing or refused)")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"{errno.EACCES}|Permission denied|{f}"
    assert lines[1] == f"{f}: Permission denied"


def test_exceptions_carry_filename_and_strerror_as_open_does(tmp_path):
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError) as ours:
        mtsum.file_digest(missing)
    with pytest.raises(FileNotFoundError) as theirs:
        open(missing, "rb")
    for attribute in ["errno", "strerror", "filename"]:
        assert getattr(ours.value, attribute) == getattr(theirs.value, attribute), attribute
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(FileNotFoundError) as e:
        mtsum.hash_range(missing, 0, 0)
    assert (e.value.filename, e.value.strerror) == (str(missing), "No such file or directory")
    with pytest.raises(IsADirectoryError) as e:
        mtsum.file_digest(tmp_path)
    assert (e.value.filename, e.value.strerror) == (str(tmp_path), "Is a directory")


def test_a_cause_without_errno_has_filename_strerror_and_the_cli_message(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(io.UnsupportedOperation) as e:
        without_blocking(fifo, lambda: mtsum.hash_range(fifo, 0, 0, layout="plain"))
    assert e.value.filename == str(fifo)
    assert e.value.strerror.startswith("cannot hash a range of a stream")
    assert str(e.value) == f"{fifo}: {e.value.strerror}"
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(ValueError) as e:
        mtsum.file_digest(empty, layout="btv2")
    assert (e.value.filename, e.value.strerror) == (str(empty), "an empty file has no btv2 pieces root (BEP 52)")


def test_a_nul_in_a_name_is_value_error_embedded_null_byte_as_for_open(tmp_path):
    for name in ["a\0b", b"a\0b"]:
        for call in [mtsum.file_digest, lambda p: mtsum.hash_range(p, 0, 0),
                     lambda p: mtsum.sum_files([p])]:
            with pytest.raises(ValueError) as e:
                call(name)
            assert e.value.args == ("embedded null byte",)
            assert not isinstance(e.value, OSError)


def test_a_spool_without_its_temporary_directory_is_an_oserror_naming_it(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    monkeypatch.setenv("TMPDIR", str(gone))
    h = mtsum.Hasher()  # the mtsum layout spools past 1 MiB
    with pytest.raises(FileNotFoundError) as e:
        h.update(bytes(2 << 20))
    assert (e.value.errno, e.value.filename) == (errno.ENOENT, str(gone))
    assert e.value.strerror == "No such file or directory"


def test_messages_name_settings_by_their_python_keywords(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    cli_words = re.compile(r"(^|\s)-[a-zA-Z]\b|--[a-z]")
    cases = [
        (lambda: mtsum.file_digest(f, layout="mtsum", leaf_size="4K"), "leaf_size="),
        (lambda: mtsum.Hasher("crc32", "merkle"), 'layout="plain"'),
        (lambda: mtsum.Hasher("crc32", "merkle"), 'layout="s3"'),
        (lambda: mtsum.plan(10, 2, "crc64nvme", "s3"), 'layout="plain", algorithm="crc64nvme"'),
    ]
    for call, words in cases:
        with pytest.raises(ValueError) as e:
            call()
        assert words in str(e.value)
        assert not cli_words.search(str(e.value)), str(e.value)


def test_a_long_stream_with_the_mtsum_layout_suggests_python_layouts(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = feed(fifo, bytes((64 << 20) + 1))
    with pytest.raises(io.UnsupportedOperation) as e:
        mtsum.file_digest(fifo)
    writer.join()
    assert 'layout="plain", "merkle" or "rfc6962"' in str(e.value)
    assert "-t " not in str(e.value)
