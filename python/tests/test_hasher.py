"""mtsum.Hasher in hashlib's shape: the same digests as hashlib for the plain layout, fed in
random pieces of any buffer type, with copy(); the spooling of the mtsum layout."""

from __future__ import annotations

import array
import base64
import hashlib
import hmac
import pydoc
import random
import re
import warnings

import pytest

import mtsum
from conftest import random_bytes

PLAIN = ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"]


@pytest.mark.parametrize("name", PLAIN)
def test_plain_hasher_fed_in_random_pieces_is_hashlib(name):
    rng = random.Random(name)
    for size in [0, 1, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097, 200_000]:
        data = random_bytes(size, size)
        ours, theirs = mtsum.Hasher(name, "plain"), hashlib.new(name)
        at = 0
        while at < size:
            step = rng.randint(1, max(1, size // 3))
            piece = data[at : at + step]
            kind = rng.choice([bytes, bytearray, memoryview])
            ours.update(kind(piece))
            theirs.update(piece)
            at += step
        assert ours.hexdigest() == theirs.hexdigest(), size
        assert ours.digest() == theirs.digest()
        assert ours.digest_size == theirs.digest_size


@pytest.mark.parametrize("name", PLAIN)
def test_copy_is_independent_and_update_goes_on_after_digest(name):
    ours, theirs = mtsum.Hasher(name, "plain"), hashlib.new(name)
    for h in (ours, theirs):
        h.update(b"abc" * 1000)
    assert ours.hexdigest() == theirs.hexdigest()
    ours_copy, theirs_copy = ours.copy(), theirs.copy()
    for h in (ours, theirs):
        h.update(b"more")
    assert ours.hexdigest() == theirs.hexdigest()
    assert ours_copy.hexdigest() == theirs_copy.hexdigest()
    assert ours_copy.hexdigest() != ours.hexdigest()


def test_any_buffer_is_taken_without_a_copy_of_its_type():
    data = random_bytes(10_000, 7)
    want = hashlib.sha256(data).hexdigest()
    for buffer in [data, bytearray(data), memoryview(data), array.array("B", data),
                   memoryview(array.array("I", data[:8000]))]:
        h = mtsum.Hasher("sha256", "plain")
        h.update(buffer)
        expected = want if len(bytes(buffer)) == len(data) else hashlib.sha256(bytes(buffer)).hexdigest()
        assert h.hexdigest() == expected


def test_a_string_or_a_non_contiguous_buffer_is_refused_as_hashlib_refuses_it():
    h = mtsum.Hasher("sha256", "plain")
    with pytest.raises(TypeError, match="Strings must be encoded before hashing"):
        h.update("abc")
    with pytest.raises(TypeError):
        h.update(12)
    with pytest.raises(BufferError):
        h.update(memoryview(b"abcdef")[::2])
    assert h.hexdigest() == hashlib.sha256().hexdigest()


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, (3 << 20) + 5])
def test_the_mtsum_layout_spools_and_gives_the_files_digest(tmp_path, size):
    """Below 1 MiB the spool is in memory, above in a file; both give file_digest's root,
    whatever the pieces, and copy() copies the spool."""
    data = random_bytes(size, size)
    path = tmp_path / "f"
    path.write_bytes(data)
    want = mtsum.file_digest(path, "sha256", "mtsum")
    h = mtsum.Hasher("sha256", "mtsum")
    rng = random.Random(size)
    at = 0
    while at < size:
        step = rng.choice([1, 1000, 300_000, 2 << 20])
        h.update(data[at : at + step])
        at += step
    assert h.hexdigest() == want
    assert h.hexdigest() == want  # digest() leaves the spool as it was
    copy = h.copy()
    h.update(b"x")
    path.write_bytes(data + b"x")
    assert h.hexdigest() == mtsum.file_digest(path, "sha256", "mtsum")
    assert copy.hexdigest() == want


def one_shot(data: bytes) -> str:
    h = mtsum.Hasher("sha256", "mtsum")
    h.update(data)
    return h.hexdigest()


@pytest.mark.parametrize("size", [(1 << 20) - 1, 1 << 20, (1 << 20) + 1, 2 << 20, (3 << 20) + 5])
@pytest.mark.parametrize("tail", [b"tail", random_bytes(3 << 20, 9)])
def test_a_copy_of_a_spooled_hasher_goes_on_from_the_same_bytes(size, tail):
    """Around the spool's 1 MiB in memory, then in a file: the copy and the original each
    go on from the bytes fed before the copy, with more bytes of their own."""
    data = random_bytes(size, size)
    h = mtsum.Hasher("sha256", "mtsum")
    h.update(data)
    copy = h.copy()
    copy.update(tail)
    h.update(b"other")
    assert copy.hexdigest() == one_shot(data + tail)
    assert h.hexdigest() == one_shot(data + b"other")
    # A copy of the copy, after the copy's spool grew.
    again = copy.copy()
    again.update(b"!")
    assert again.hexdigest() == one_shot(data + tail + b"!")
    assert copy.hexdigest() == one_shot(data + tail)


def test_a_hasher_used_by_two_threads_takes_their_updates_in_turn():
    import threading

    piece = random_bytes(1 << 20, 3)
    h = mtsum.Hasher("sha256", "rfc6962", 1)  # one-byte leaves: each update hashes for a while
    threads = [threading.Thread(target=lambda: [h.update(piece) for _ in range(4)]) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    whole = mtsum.Hasher("sha256", "rfc6962", 1)
    whole.update(piece * 8)
    # Every piece is the same, so any interleaving of whole updates gives this digest; a torn
    # update would not.
    assert h.hexdigest() == whole.hexdigest()


@pytest.mark.parametrize("algorithm", ["md5", "sha256", "crc32c"])
@pytest.mark.parametrize("size", [5, (8 << 20) + 3])
def test_hexdigest_is_the_digests_hex_and_value_is_the_storage_systems(tmp_path, algorithm, size):
    """hexdigest() is digest().hex(), with ``-N`` after a value that has a part count (S3's
    multipart values); value() is the value as the CLI prints it and file_digest returns
    it: base64 for S3's checksums."""
    data = random_bytes(size, 2)
    path = tmp_path / "f"
    path.write_bytes(data)
    h = mtsum.Hasher(algorithm, "s3")
    h.update(data)
    parts = "-2" if size > 8 << 20 else ""
    assert h.hexdigest() == h.digest().hex() + parts
    assert h.digest_size == len(h.digest())
    shown = h.digest().hex() if algorithm == "md5" else base64.b64encode(h.digest()).decode()
    assert h.value() == shown + parts == mtsum.file_digest(path, algorithm, "s3")
    plain = mtsum.Hasher(algorithm, "plain")
    plain.update(data)
    assert plain.hexdigest() == plain.digest().hex() == plain.value()


def test_hasher_is_final_at_run_time_as_in_its_stub():
    with pytest.raises(TypeError):
        type("Sub", (mtsum.Hasher,), {})


def test_block_size_is_hashlibs_so_that_hmac_pads_keys_right():
    for name in ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"]:
        assert mtsum.Hasher(name, "plain").block_size == hashlib.new(name).block_size, name
    assert mtsum.Hasher("sha512", "merkle").block_size == 128
    for name in ["blake3", "xxh3", "xxh128"]:
        assert mtsum.Hasher(name, "plain").block_size == 64
    key = b"k" * 100  # longer than sha256's block, shorter than sha512's: hashed or padded
    for name in ["sha256", "sha384", "sha512"]:
        def hasher(data=b"", name=name):
            h = mtsum.Hasher(name, "plain")
            h.update(data)
            return h
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours = hmac.new(key, b"message", digestmod=hasher)
        assert ours.hexdigest() == hmac.new(key, b"message", name).hexdigest(), name


def test_help_of_filesum_describes_its_fields():
    text = pydoc.render_doc(mtsum.FileSum, renderer=pydoc.plaintext)
    assert "Alias for field number" not in text
    assert "number of bytes hashed" in mtsum.FileSum.bytes.__doc__
    assert mtsum.FileSum._fields == ("bytes", "digest", "error")


def test_a_non_contiguous_numpy_array_raises_what_the_docstring_says():
    numpy = pytest.importorskip("numpy")
    assert re.search(r"BufferError for a\s+non-contiguous buffer", mtsum.Hasher.__doc__)
    h = mtsum.Hasher("sha256", "plain")
    with pytest.raises(BufferError):
        h.update(numpy.arange(100)[::2])
    h.update(numpy.ascontiguousarray(numpy.arange(100)[::2]))
    assert h.hexdigest() == hashlib.sha256(numpy.arange(100)[::2].tobytes()).hexdigest()
