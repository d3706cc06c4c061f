"""One version for the crate, the wheel and the CLI: what a bug report quotes must be the code
that ran."""

from __future__ import annotations

import subprocess
from importlib.metadata import version

import mtsum


def test_the_package_version_is_the_crates_and_the_installed_wheels():
    # __version__ comes from the Rust library; the wheel's metadata from python/Cargo.toml.
    assert mtsum.__version__ == version("mtsum")
    assert mtsum.__version__.count(".") == 2


def test_the_cli_prints_the_same_version(mtsum_bin: str):
    out = subprocess.run([mtsum_bin, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.split()[:2] == ["mtsum", mtsum.__version__]
