"""Shared fixtures: the CLI binary the digests are compared with, and files to hash.

The CLI is `target/release/mtsum` of this repository (built by `cargo test --release` in the
test script), or the binary named by MTSUM_BIN; failing both, it is built here with cargo.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Every layout with the leaf sizes worth trying: the default (1 MiB, so 4 MiB jobs), one
# leaf per 64 bytes (many leaves per job), and 4 KiB.
LAYOUTS = [
    ("mtsum", None),
    ("plain", None),
    ("merkle", None),
    ("merkle", 64),
    ("rfc6962", "4K"),
    ("rfc6962", 64),
    ("rfc6962", None),
]
ALGORITHMS = [
    "md5",
    "sha1",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
    "blake3",
    "xxh3",
    "xxh128",
    "crc32",
    "crc32c",
    "crc64nvme",
]
CRCS = {"crc32", "crc32c", "crc64nvme"}


def defined(layout: str, algorithm: str) -> bool:
    """Whether the layout is defined with the algorithm: a CRC builds no tree (the CLI and
    the binding refuse it with a tree layout)."""
    return layout == "plain" or algorithm not in CRCS

# 0, 1, around the 64-byte leaves, the 4 KiB leaves, the 1 MiB spool of the mtsum Hasher, and
# the 4 MiB jobs of the fixed-leaf layouts and plain BLAKE3.
SIZES = [0, 1, 63, 64, 65, 4095, 4097, (1 << 20) + 1, (4 << 20) - 1, (4 << 20) + 1, (8 << 20) + 3]


def random_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.fixture(scope="session")
def mtsum_bin() -> str:
    explicit = os.environ.get("MTSUM_BIN")
    if explicit:
        return explicit
    binary = ROOT / "target" / "release" / "mtsum"
    if not binary.exists():
        cargo = shutil.which("cargo")
        if cargo is None:
            pytest.skip("no mtsum binary to compare with: set MTSUM_BIN or install cargo")
        subprocess.run([cargo, "build", "--release", "--bin", "mtsum"], cwd=ROOT, check=True)
    return str(binary)


@pytest.fixture(scope="session")
def files(tmp_path_factory) -> list[Path]:
    """One file of each size of SIZES, random content."""
    d = tmp_path_factory.mktemp("sizes")
    out = []
    for i, n in enumerate(SIZES):
        p = d / f"f{n:09d}"
        p.write_bytes(random_bytes(n, i))
        out.append(p)
    return out


@pytest.fixture(scope="session")
def big_sparse(tmp_path_factory) -> Path:
    """300 MiB, mostly a hole, with random bytes around the mtsum layout's leaf boundaries
    (three leaves: 128 MiB, 86 and 86 MiB): the mtsum layout's several leaves and the ranges
    of several jobs, cheaply."""
    p = tmp_path_factory.mktemp("big") / "sparse.bin"
    size = 300 << 20
    with open(p, "wb") as f:
        f.truncate(size)
        for k, at in enumerate([0, (128 << 20) - 5, (214 << 20) - 5, size - 100]):
            f.seek(at)
            f.write(random_bytes(100, 1000 + k))
    return p


def cli(mtsum_bin: str, paths, algorithm: str, layout: str, leaf, *extra: str) -> list[str]:
    """The digests the CLI prints for `paths`, in order."""
    args = [mtsum_bin, "--no-names", "-a", algorithm, "-t", layout]
    if leaf is not None:
        args += ["-l", str(leaf)]
    out = subprocess.run(args + list(extra) + [str(p) for p in paths], check=True,
                         capture_output=True, text=True)
    return out.stdout.split()


def without_blocking(fifo, call):
    """`call()`'s result or exception, failing the test if it waits on `fifo` for a writer.

    The call runs in a thread; one that has not returned after a minute (it needs a stat, not
    a read) is taken to be waiting, is released by opening the FIFO for writing, and the
    test fails. The minute is a guard against hanging the suite, not a measurement.
    """
    import threading

    outcome: list = []

    def run():
        try:
            outcome.append(("value", call()))
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome.append(("error", e))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    if thread.is_alive():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        thread.join(60)
        pytest.fail(f"blocked on the FIFO {fifo}")
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value
