#!/usr/bin/env bash
# The whole test suite: the Rust tests (unit, property, CLI, oracles, with the large reference
# files), then the Python package's tests (pytest), in a virtual environment that this script
# creates in target/venv and fills from PyPI (maturin builds the package; Dask and pandas for
# mtsum.dask). Needs Python 3.9 or newer with venv (PYTHON=... to choose the interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --release -- --include-ignored

python=${PYTHON:-python3}
venv=target/venv
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The package's Rust crate is a workspace of its own (see python/Cargo.toml); building it in
# this target directory reuses the library and the dependencies cargo test just compiled.
CARGO_TARGET_DIR="$PWD/target" "$venv/bin/python" -m pip install -q './python[dask,test]'
# The tests compare with the CLI that cargo test built (target/release/mtsum).
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
