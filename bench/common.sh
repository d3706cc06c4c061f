# bench/common.sh: how every script in bench/ starts (sourced, never run on its own): the C
# locale, so that sort orders and decimal points are the ones the tables are written for;
# $root, the repository; $dir, the scratch directory (BENCH_DIR, default
# ${TMPDIR:-/tmp}/mtsum-bench).
export LC_ALL=C
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
dir=${BENCH_DIR:-${TMPDIR:-/tmp}/mtsum-bench}

# The binaries a before/after script times, as absolute paths: $mtsum (MTSUM, default
# target/release/mtsum, which must exist) and $before (MTSUM_BEFORE, empty when unset).
# $1 is the script's name, for the message when there is no mtsum.
bench_binaries() {
    mtsum=$(realpath -- "${MTSUM:-$root/target/release/mtsum}")
    before=${MTSUM_BEFORE:+$(realpath -- "$MTSUM_BEFORE")}
    [[ -x $mtsum ]] || { echo "$1: no mtsum at $mtsum (cargo build --release)" >&2; exit 1; }
}
