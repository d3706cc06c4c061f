#!/usr/bin/env bash
# Checks mtsum as users install it (run by .ci/run after the tests; anyone can run it):
# - the licences of every dependency (cargo deny check licenses, deny.toml), of the crate and
#   of the Python package's crate;
# - the Debian package (scripts/deb.sh): installed with dpkg -i, `man -w mtsum` finds the
#   page, `mtsum --version` runs from /usr/bin, and bash completes `mtsum --aud` to `--audit`
#   through the installed completion; the package is removed again unless it was installed
#   before;
# - the wheel in a clean virtual environment (scripts/wheel.sh).
# cargo-deny and cargo-deb are built from crates.io into target/tools where they are missing
# (about 4 and 2 minutes of CPU). Installing the package needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

tools=$PWD/target/tools
export PATH="$tools/bin:$PATH"
install_tool() { # NAME VERSION: cargo NAME from crates.io, unless it is on PATH
    command -v "$1" >/dev/null 2>&1 && return
    # No fat LTO and one codegen unit as cargo-deny's release profile asks: a quarter less
    # time to build on 2 cores, and the checks take seconds either way.
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        cargo install --quiet --locked --root "$tools" "$1" --version "$2"
}
install_tool cargo-deny 0.20.2
install_tool cargo-deb 3.8.0

echo "== licences"
cargo deny check licenses
cargo deny --manifest-path python/Cargo.toml check licenses

echo "== Debian package"
deb=$(scripts/deb.sh | tail -n 1)
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! dpkg-query -W -f='${Status}' mtsum 2>/dev/null | grep -q "install ok installed"; then
    trap 'as_root dpkg -r mtsum >/dev/null' EXIT
fi
as_root dpkg -i "$deb"
man -w mtsum
/usr/bin/mtsum --version
# zsh and fish find these by their paths; each must offer --audit (fish writes `-l audit`).
for check in "--audit /usr/share/zsh/vendor-completions/_mtsum" \
             "-l audit /usr/share/fish/vendor_completions.d/mtsum.fish"; do
    grep -q -- "${check% *}" "${check##* }" || { echo "package-check: no ${check% *} in ${check##* }" >&2; exit 1; }
done
# What bash does on `mtsum --aud<TAB>`, with the completion the package installed.
completion=/usr/share/bash-completion/completions/mtsum
reply=$(bash --norc --noprofile -c '
    source "$1"
    complete -p mtsum >&2
    COMP_WORDS=(mtsum --aud); COMP_CWORD=1
    _mtsum mtsum --aud mtsum
    echo "${COMPREPLY[*]}"' bash "$completion")
[ "$reply" = "--audit" ] || { echo "package-check: mtsum --aud completes to '$reply'" >&2; exit 1; }
echo "bash: mtsum --aud completes to $reply"

echo "== wheel"
scripts/wheel.sh
echo "package-check: licences, .deb, man page, completion and wheel are fine"
