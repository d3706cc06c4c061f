#!/usr/bin/env bash
# Builds the Debian package target/debian/mtsum_VERSION-1_ARCH.deb: the release binary, its man
# page and shell completions (made by `mtsum --generate`) in target/assets, then `cargo deb`,
# which Cargo.toml's [package.metadata.deb] tells where each file goes. Needs cargo-deb
# (`cargo install --locked cargo-deb`) and, for the package's dependencies, dpkg-shlibdeps
# (Debian's dpkg-dev). cargo deb prints the path of the package.
set -euo pipefail
cd "$(dirname "$0")/.."
# The assets are read from target/, where cargo deb also looks for the binary.
unset CARGO_TARGET_DIR

cargo build --release --locked --bin mtsum
mtsum=target/release/mtsum
assets=target/assets
mkdir -p "$assets"
"$mtsum" --generate man | gzip -9n > "$assets/mtsum.1.gz"
"$mtsum" --generate complete-bash > "$assets/mtsum.bash"
"$mtsum" --generate complete-zsh > "$assets/_mtsum"
"$mtsum" --generate complete-fish > "$assets/mtsum.fish"
cargo deb --locked --no-build --quiet
