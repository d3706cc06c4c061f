#!/usr/bin/env bash
# Builds the Python package's wheel into target/wheels (maturin build --release: abi3, one
# wheel for every CPython from 3.9 on), says which platform tag it got and the newest glibc
# symbols it needs (auditwheel show), then installs it into a new virtual environment whose
# PATH holds nothing but that environment (no cargo, no compiler: the wheel must not build
# anything) and checks that mtsum.file_digest gives the CLI's digests and that
# mtsum.__version__ is the CLI's version. Needs Python 3.9+ with venv (PYTHON=... to choose);
# maturin and auditwheel come from PyPI into target/wheel-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1

tools=target/wheel-tools
[ -x "$tools/bin/python" ] || "$python" -m venv "$tools"
"$tools/bin/python" -m pip install -q 'maturin>=1.9,<2' auditwheel

# The CLI the digests are compared with, and the library the wheel links, built once.
cargo build --release --locked --bin mtsum
rm -f target/wheels/mtsum-*.whl
CARGO_TARGET_DIR="$root/target" "$tools/bin/maturin" build --release --locked \
    --manifest-path python/Cargo.toml --out target/wheels
wheel=$(ls target/wheels/mtsum-*.whl)
echo "wheel: $wheel"
"$tools/bin/auditwheel" show "$wheel"

venv=$(mktemp -d "${TMPDIR:-/tmp}/mtsum-wheel.XXXXXX")
trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
# The environment of a user without Rust: only the venv on PATH, the wheel from the file.
clean=(env -i HOME="${HOME:-$venv}" PATH="$venv/bin" LANG=C.UTF-8)
if "${clean[@]}" sh -c 'command -v cargo || command -v rustc || command -v cc' 2>/dev/null; then
    echo "wheel.sh: a compiler is on the clean PATH" >&2
    exit 1
fi
"${clean[@]}" "$venv/bin/python" -m pip install -q --no-index --no-deps "$root/$wheel"
cd "$venv"
"${clean[@]}" "$venv/bin/python" - "$root/target/release/mtsum" <<'PY'
import os
import subprocess
import sys
from importlib.metadata import version

import mtsum

cli = sys.argv[1]
assert mtsum.__file__.startswith(sys.prefix), f"mtsum imported from {mtsum.__file__}"
path = os.path.join(os.getcwd(), "data.bin")
with open(path, "wb") as f:
    f.write(bytes(range(256)) * (12 << 12))  # 12 MiB: several leaves and jobs
for layout, algorithm in [("mtsum", "sha256"), ("plain", "sha256"), ("rfc6962", "blake3"), ("s3", "md5")]:
    ours = mtsum.file_digest(path, algorithm=algorithm, layout=layout)
    out = subprocess.run([cli, "--no-names", "-t", layout, "-a", algorithm, path],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert ours == out, (layout, algorithm, ours, out)
    print(f"{layout} {algorithm}: {ours} (as the CLI)")
cli_version = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout
assert cli_version.split()[1] == mtsum.__version__ == version("mtsum"), (cli_version, mtsum.__version__)
print(f"mtsum {mtsum.__version__} from {os.path.dirname(mtsum.__file__)}: the CLI's digests and version")
PY
