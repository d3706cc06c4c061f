#!/usr/bin/env bash
# bench/compare.sh: measure mtsum against the limits of this machine and against its peers.
#
# In one run: the one-core hash rates (`openssl speed`), the page-cache read rate (`dd`), every
# mtsum layout/algorithm with -p 1 and -p N, the installed peers (coreutils *sum, openssl dgst,
# rhash, b3sum, xxhsum, the C++ mtsum), peak RSS, optionally cold-cache reads, and many small
# files (`mtsum -r` over a directory against the peers on the same files). Prints the tables
# and writes them between markers into docs/performance.md. See bench/README.md.
#
#   bench/compare.sh                    # 4 GiB file + 10000 files of 64 KiB, 5 runs per command
#   BENCH_QUICK=1 bench/compare.sh      # 256 MiB + 1000 files, 2 runs, fewer commands: a smoke test
#   BENCH_SECTIONS=leaves bench/compare.sh  # only the per-layout, per-leaf-size table
#
# Sections (BENCH_SECTIONS, default all): warm (every algorithm and layout, cold-cache reads),
# leaves (the default layout against rfc6962 at BENCH_LEAF_SIZES leaves, for BENCH_LEAF_ALGS at
# -p 1 and -p N: does any leaf size fall off a cliff?), many (many small files). The one-core
# limits (openssl speed, dd) are always measured.
#
# Settings (environment): BENCH_QUICK BENCH_SIZE BENCH_FILE BENCH_DIR BENCH_RUNS BENCH_WARMUP BENCH_RECACHE
# BENCH_SPEED_SECONDS BENCH_THREADS BENCH_ALGS BENCH_COLD BENCH_MANY_FILES BENCH_MANY_SIZE
# BENCH_SECTIONS BENCH_LEAF_ALGS BENCH_LEAF_SIZES BENCH_OUT BENCH_INSTALL MTSUM MTSUM_REFERENCE.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

say() { printf '%s\n' "$*" >&2; }
die() {
    say "compare.sh: $*"
    exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

# ---------------------------------------------------------------------------------------------
# Settings
quick=${BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
    def_size=256M def_runs=2 def_warmup=0 def_speed=1 def_cold=0 def_many=1000
    def_algs="md5 sha256 blake3 xxh3"
else
    def_size=4G def_runs=5 def_warmup=1 def_speed=3 def_cold=auto def_many=10000
    def_algs="md5 sha1 sha256 sha512 blake3 xxh3 xxh128"
fi
size_arg=${BENCH_SIZE:-$def_size}
runs=${BENCH_RUNS:-$def_runs}
warmup=${BENCH_WARMUP:-$def_warmup}
# Some virtual machines drop pages of cached files even with most of their memory free, so a
# "cached" run may read part of the file from disk: re-read it before every timed run.
recache=${BENCH_RECACHE:-1}
speed_seconds=${BENCH_SPEED_SECONDS:-$def_speed}
cold=${BENCH_COLD:-$def_cold}
threads=${BENCH_THREADS:-$(nproc)}
algs=${BENCH_ALGS:-$def_algs}
algs=${algs//,/ }
many_files=${BENCH_MANY_FILES:-$def_many}
many_size_arg=${BENCH_MANY_SIZE:-64K}
if [[ -n ${BENCH_OUT:-} ]]; then
    out=$BENCH_OUT
elif [[ $quick == 1 ]]; then
    out=$dir/performance-quick.md # a smoke test does not overwrite the published figures
else
    out=$root/docs/performance.md
fi
reference=${MTSUM_REFERENCE:-}
sections=${BENCH_SECTIONS:-warm leaves many}
sections=${sections//,/ }
leaf_algs=${BENCH_LEAF_ALGS:-md5 sha256 sha512}
leaf_algs=${leaf_algs//,/ }
leaf_sizes=${BENCH_LEAF_SIZES:-1K 4K 64K 1M 16M 64M}
leaf_sizes=${leaf_sizes//,/ }
for s in $sections; do
    case $s in warm | leaves | many) ;; *) die "unknown section '$s' in BENCH_SECTIONS (known: warm leaves many)" ;; esac
done
want() { [[ " $sections " == *" $1 "* ]]; } # SECTION: whether BENCH_SECTIONS selects it
want many || many_files=0
warm_algs=$algs
want warm || { warm_algs= cold=0; }

[[ $runs =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, not '$runs'"
[[ $warmup =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be an integer, not '$warmup'"
[[ $speed_seconds =~ ^[1-9][0-9]*$ ]] || die "BENCH_SPEED_SECONDS must be a positive integer"
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "BENCH_THREADS must be a positive integer"
case $cold in 0 | 1 | auto | direct) ;; *) die "BENCH_COLD must be 0, 1, auto or direct, not '$cold'" ;; esac
[[ $many_files =~ ^[0-9]+$ ]] || die "BENCH_MANY_FILES must be an integer (0: no many-files section), not '$many_files'"

# "4G", "512M", "1GiB", "100k", "12345" -> bytes (binary units)
to_bytes() {
    local s=${1^^} mult=1 n
    s=${s%IB}
    s=${s%B}
    case $s in
    *K) mult=1024 ;;
    *M) mult=$((1024 ** 2)) ;;
    *G) mult=$((1024 ** 3)) ;;
    *T) mult=$((1024 ** 4)) ;;
    esac
    n=${s%[KMGT]}
    [[ $n =~ ^[0-9]+$ ]] || die "bad size '$1' (use e.g. 4G, 512M, 1000000)"
    echo $((n * mult))
}
want_size=$(to_bytes "$size_arg")
((want_size > 0)) || die "BENCH_SIZE must not be 0"
file=${BENCH_FILE:-$dir/random-$want_size.bin}
many_size=$(to_bytes "$many_size_arg")
((many_size > 0)) || die "BENCH_MANY_SIZE must not be 0"
many_total=$((many_files * many_size))
many_dir=$dir/many-${many_files}x$many_size

work=$(mktemp -d "${TMPDIR:-/tmp}/mtsum-compare.XXXXXX")
partial=
cleanup() {
    rm -rf -- "$work"
    if [[ -n $partial ]]; then rm -rf -- "$partial"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Tools: hyperfine (required), /usr/bin/time (peak RSS, optional), openssl (test data, limits)
install_pkg() { # PACKAGE: apt-get install, when allowed and possible
    [[ ${BENCH_INSTALL:-1} == 1 && $(id -u) == 0 ]] && have apt-get || return 1
    say "installing the Debian package '$1' with apt-get..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$1" >/dev/null 2>&1 && return 0
    apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$1" >/dev/null 2>&1
}

if ! have hyperfine; then
    install_pkg hyperfine || true
    have hyperfine || die "hyperfine is needed and could not be installed:
  Debian/Ubuntu: sudo apt-get install hyperfine;  elsewhere: cargo install hyperfine"
fi
timer=/usr/bin/time
if [[ ! -x $timer ]]; then
    install_pkg time || true
    [[ -x $timer ]] || say "note: $timer (GNU time, Debian package 'time') is missing: no peak RSS"
fi
have openssl || die "openssl is needed (test data and the one-core limits): apt-get install openssl"
have python3 || die "python3 is needed to read hyperfine's JSON"

hf_opts=(--style none)
if hyperfine --help 2>/dev/null | grep -q -- '--shell=none'; then
    hf_opts+=(-N) # no intermediate shell: nothing to subtract
fi

# ---------------------------------------------------------------------------------------------
# mtsum
if [[ -n ${MTSUM:-} ]]; then
    mtsum=$MTSUM
    [[ -x $mtsum ]] || die "MTSUM=$mtsum is not an executable"
    built="given as MTSUM"
else
    have cargo || die "cargo is needed to build mtsum (or set MTSUM=/path/to/mtsum)"
    say "building mtsum (cargo build --release)..."
    (cd -- "$root" && cargo build --release --quiet)
    target_dir=${CARGO_TARGET_DIR:-$root/target}
    [[ $target_dir == /* ]] || target_dir=$root/$target_dir
    mtsum=$target_dir/release/mtsum
    [[ -x $mtsum ]] || die "cargo build did not produce $mtsum"
    built="built with cargo build --release"
    if rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
        if [[ -n $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
            rev="$rev + uncommitted changes"
        fi
        built="$built from commit $rev"
    fi
fi
if [[ -n $reference && ! -x $reference ]]; then
    die "MTSUM_REFERENCE=$reference is not an executable"
fi
mtsum_help=$("$mtsum" --help 2>&1 || true)
mtsum_has_direct=0
if grep -q -- '--direct' <<<"$mtsum_help"; then mtsum_has_direct=1; fi

# ---------------------------------------------------------------------------------------------
# The test file: incompressible (AES-CTR keystream), created once and kept for later runs
mkdir -p -- "$dir"
if [[ ! -e $file ]]; then
    mkdir -p -- "$(dirname -- "$file")"
    avail_kib=$(df -P -k -- "$(dirname -- "$file")" | awk 'NR == 2 { print $4 }')
    if [[ $avail_kib =~ ^[0-9]+$ ]] && ((avail_kib * 1024 < want_size + 64 * 1024 * 1024)); then
        die "not enough space for a $size_arg test file in $(dirname -- "$file") (set BENCH_DIR or BENCH_SIZE)"
    fi
    say "creating the test file $file ($want_size bytes of AES-CTR output)..."
    partial=$file.partial.$$
    { openssl enc -aes-128-ctr -pass pass:x -nosalt -pbkdf2 </dev/zero 2>/dev/null || true; } |
        head -c "$want_size" >"$partial"
    [[ $(stat -c %s -- "$partial") == "$want_size" ]] || die "could not write $want_size bytes to $partial"
    mv -- "$partial" "$file"
    partial=
fi
[[ -f $file ]] || die "$file is not a regular file"
size=$(stat -L -c %s -- "$file")
((size > 0)) || die "$file is empty"
fs_type=$(stat -f -L -c %T -- "$file" 2>/dev/null || echo unknown)

mem_avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null || echo 0)
cache_note=
if [[ $mem_avail_kib =~ ^[0-9]+$ ]] && ((mem_avail_kib > 0 && size > mem_avail_kib * 1024 * 8 / 10)); then
    cache_note="The test file is larger than 80 % of the available memory: the warm-cache figures are partly disk reads."
    say "warning: $cache_note"
fi

# The many-files directory: BENCH_MANY_FILES files of BENCH_MANY_SIZE bytes, cut from the test
# file (from the same AES-CTR stream when the file is too small), created once and kept
many_complete() { # the directory holds exactly the expected files, each of the expected size
    [[ -d $many_dir ]] || return 1
    find "$many_dir" -mindepth 1 -printf '%y %s\n' |
        awk -v n="$many_files" -v s="$many_size" '
            { all++; if ($1 == "f" && $2 == s) ok++ }
            END { exit !(all == n && ok == n) }'
}
if ((many_files > 0)) && ! many_complete; then
    if [[ -e $many_dir ]]; then
        say "$many_dir is incomplete or stale: creating it again"
        rm -rf -- "$many_dir"
    fi
    avail_kib=$(df -P -k -- "$dir" | awk 'NR == 2 { print $4 }')
    if [[ $avail_kib =~ ^[0-9]+$ ]] && ((avail_kib * 1024 < many_total + many_files * 4096 + 64 * 1024 * 1024)); then
        die "not enough space for $many_files files of $many_size bytes in $dir (set BENCH_DIR or BENCH_MANY_FILES)"
    fi
    say "creating $many_files files of $many_size bytes in $many_dir..."
    partial=$many_dir.partial.$$
    mkdir -- "$partial"
    suffix=${#many_files}
    ((suffix >= 5)) || suffix=5
    if ((size >= many_total)); then
        head -c "$many_total" -- "$file"
    else
        { openssl enc -aes-128-ctr -pass pass:x -nosalt -pbkdf2 </dev/zero 2>/dev/null || true; } |
            head -c "$many_total"
    fi | split -b "$many_size" -a "$suffix" -d - "$partial/x"
    mv -- "$partial" "$many_dir"
    partial=
    many_complete || die "could not create $many_files files of $many_size bytes in $many_dir"
fi

# ---------------------------------------------------------------------------------------------
# Measurements. Each row is recorded as one line of $records (tab-separated) for the report.
records=$work/records.tsv
limits=$work/limits.tsv
: >"$records"
: >"$limits"
row_no=0
failures=()
drop_caches_cmd="sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"

# label for the table: the file becomes FILE, the many-files directory DIR, the binaries their
# short names
label_of() {
    local a words=()
    for a in "$@"; do
        if [[ $a == *"$file"* ]]; then
            words+=("${a//"$file"/FILE}")
        elif [[ $a == *"$many_dir"* ]]; then
            words+=("${a//"$many_dir"/DIR}")
        elif [[ $a == "$mtsum" ]]; then
            words+=(mtsum)
        elif [[ -n $reference && $a == "$reference" ]]; then
            words+=(mtsum-cpp)
        else
            words+=("$a")
        fi
    done
    printf '%s' "${words[*]}"
}

# measure [--size BYTES] [--prepare CMD] SECTION KIND ALG DIGEST THREADS CMD...
#   SECTION warm | cold | direct | limit | many;  KIND mtsum | peer | limit;  DIGEST what the
#   command prints (commands with equal DIGEST must print the same value; "-" for none).
#   --size: the bytes the command reads, for GB/s (default: the test file's size);
#   --prepare: a command hyperfine runs before every run (cold: dropping the page cache).
# Runs CMD once under /usr/bin/time (checks that it works, takes its peak RSS and its output),
# then with hyperfine; a command that fails is reported and left out, never fatal.
measure() {
    local bytes=$size prepare=()
    while [[ $1 == --* ]]; do
        case $1 in
        --size) bytes=$2 ;;
        --prepare) prepare=(--prepare "$2") ;;
        *) die "measure: unknown option $1" ;;
        esac
        shift 2
    done
    local section=$1 kind=$2 alg=$3 digest=$4 nthreads=$5
    shift 5
    local label cmd json rss=- outf n
    label=$(label_of "$@")
    row_no=$((row_no + 1))
    n=$row_no
    json=$work/$n.json
    outf=$work/$n.out
    printf -v cmd '%q ' "$@"
    cmd=${cmd% }
    if [[ $section == cold ]]; then
        prepare=(--prepare "$drop_caches_cmd")
    elif [[ $recache == 1 && ($section == warm || $section == leaves) ]]; then
        prepare=(--prepare "dd if=$(printf '%q' "$file") of=/dev/null bs=16M status=none")
    fi
    if [[ -x $timer ]]; then
        if ! "$timer" -f %M -o "$work/$n.rss" "$@" >"$outf" 2>"$work/$n.err"; then
            say "  skipped (failed): $label: $(head -c 300 "$work/$n.err" | head -n 2)"
            failures+=("$label")
            return 0
        fi
        rss=$(tail -n 1 "$work/$n.rss")
        [[ $rss =~ ^[0-9]+$ ]] || rss=-
    elif ! "$@" >"$outf" 2>"$work/$n.err"; then
        say "  skipped (failed): $label: $(head -c 300 "$work/$n.err" | head -n 2)"
        failures+=("$label")
        return 0
    fi
    if ! hyperfine "${hf_opts[@]}" "${prepare[@]}" --warmup "$warmup" --runs "$runs" \
        --export-json "$json" "$cmd" >"$work/$n.hf" 2>&1; then
        say "  skipped (hyperfine failed): $label: $(tail -n 3 "$work/$n.hf")"
        failures+=("$label")
        return 0
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$section" "$kind" "$alg" "$digest" \
        "$nthreads" "$label" "$json" "$rss" "$outf" "$bytes" >>"$records"
    python3 - "$json" "$bytes" "$section" "$label" "$rss" <<'PY' >&2
import json, statistics, sys
path, size, section, label, rss = sys.argv[1:]
times = json.load(open(path))["results"][0]["times"]
med = statistics.median(times)
rss = f"{int(rss) / 1024:7.1f} MiB" if rss.isdigit() else ""
print(f"  {section:5} {med:8.3f} s {int(size) / med / 1e9:7.2f} GB/s {rss}  {label}")
PY
}

# One-core limits: openssl speed, single process, 1 MiB blocks
say "one-core limits: openssl speed -evp ALG -bytes 1048576 -seconds $speed_seconds"
speed_algs="md5 sha1 sha256 sha512"
for alg in sha224 sha384; do
    if [[ " $algs " == *" $alg "* ]]; then speed_algs+=" $alg"; fi
done
for alg in $speed_algs; do
    line=$(openssl speed -evp "$alg" -bytes 1048576 -seconds "$speed_seconds" 2>/dev/null | tail -n 1 || true)
    # last line: "sha256   1726767.90k" -- k = 1000 bytes per second
    kps=${line##* }
    kps=${kps%k}
    if [[ $kps =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
        gbps=$(python3 -c "import sys; print(f'{float(sys.argv[1]) * 1000 / 1e9:.4f}')" "$kps")
        printf '%s\t%s\t%s\n' "$alg" "$gbps" \
            "openssl speed -evp $alg -bytes 1048576 -seconds $speed_seconds" >>"$limits"
        say "  $alg $gbps GB/s"
    else
        say "  $alg: could not parse openssl speed's output: '$line'"
    fi
done

# The CPU features the kernels are chosen by: the figures mean little without them.
say "CPU features: $(grep -o -E 'avx512[a-z]*|avx2|sha_ni|vpclmulqdq' /proc/cpuinfo | sort -u | tr '\n' ' ')"

# Memory bandwidth: dd from the page cache (the file is read once first to cache it)
say "reading the test file into the page cache..."
cat -- "$file" >/dev/null
say "measuring (median of $runs runs, $warmup warm-up):"
measure limit limit mem - 1 dd if="$file" of=/dev/null bs=16M

# Warm cache: every algorithm; peers first, then mtsum. The page-cache read is measured again
# before each algorithm: the machine's speed can drift over the minutes of a run, and each row's
# "× page-cache read" is taken against the read measured just before it.
first_alg=1
for alg in $warm_algs; do
    if ((!first_alg)); then measure limit limit mem - 1 dd if="$file" of=/dev/null bs=16M; fi
    first_alg=0
    case $alg in
    md5 | sha1 | sha224 | sha256 | sha384 | sha512)
        if have "${alg}sum"; then measure warm peer "$alg" "$alg" 1 "${alg}sum" "$file"; fi
        measure warm peer "$alg" "$alg" 1 openssl dgst "-$alg" "$file"
        if have rhash; then measure warm peer "$alg" "$alg" 1 rhash "--$alg" "$file"; fi
        ;;
    blake3)
        if have b3sum; then
            measure warm peer blake3 blake3 1 b3sum --num-threads 1 "$file"
            measure warm peer blake3 blake3 "$threads" b3sum "$file"
        fi
        ;;
    xxh3 | xxh128)
        if have xxhsum; then measure warm peer "$alg" "$alg" 1 xxhsum "-H${alg#xxh}" "$file"; fi
        ;;
    *) die "unknown algorithm '$alg' in BENCH_ALGS" ;;
    esac
    if [[ -n $reference ]]; then
        measure warm peer "$alg" "$alg mtsum" 1 "$reference" -p 1 -a "$alg" "$file"
        if ((threads > 1)); then
            measure warm peer "$alg" "$alg mtsum" "$threads" "$reference" -p "$threads" -a "$alg" "$file"
        fi
    fi
    measure warm mtsum "$alg" "$alg mtsum" 1 "$mtsum" -p 1 -a "$alg" "$file"
    if ((threads > 1)); then
        measure warm mtsum "$alg" "$alg mtsum" "$threads" "$mtsum" -p "$threads" -a "$alg" "$file"
    fi
    # plain is one stream (one job) whatever -p is, but for blake3 (4 MiB subtrees, every worker:
    # so it is measured with one worker too, beside b3sum --num-threads 1)
    measure warm mtsum "$alg" "$alg" "$threads" "$mtsum" -p "$threads" -a "$alg" -t plain "$file"
    if [[ $alg == blake3 ]] && ((threads > 1)); then
        measure warm mtsum "$alg" "$alg" 1 "$mtsum" -p 1 -a "$alg" -t plain "$file"
    fi
    if [[ $quick != 1 || $alg == sha256 ]]; then
        measure warm mtsum "$alg" "$alg rfc6962 1M" "$threads" "$mtsum" -p "$threads" -a "$alg" -t rfc6962 "$file"
    fi
    if [[ $quick != 1 && $alg == sha256 ]]; then
        if ((threads > 1)); then
            measure warm mtsum "$alg" "$alg rfc6962 1M" 1 "$mtsum" -p 1 -a "$alg" -t rfc6962 "$file"
        fi
        measure warm mtsum "$alg" "$alg merkle 1M" "$threads" "$mtsum" -p "$threads" -a "$alg" -t merkle "$file"
    fi
done

# Leaf sizes: the default layout against rfc6962 at short, medium and long leaves, at -p 1 and
# -p N: many short leaves should be the SIMD lanes' best case, never a cliff.
if want leaves; then
    say "leaf sizes (default layout and rfc6962 -l ${leaf_sizes// //}):"
    for alg in $leaf_algs; do
        for p in 1 $((threads > 1 ? threads : 0)); do
            ((p > 0)) || continue
            measure leaves mtsum "$alg" "$alg" "$p" "$mtsum" -p "$p" -a "$alg" "$file"
            for leaf in $leaf_sizes; do
                measure leaves mtsum "$alg" "$alg rfc6962 $leaf" "$p" \
                    "$mtsum" -p "$p" -a "$alg" -t rfc6962 -l "$leaf" "$file"
            done
        done
    done
fi

# Many files: mtsum -r over the directory against the peers on the same files (find -exec feeds
# them every file, in as few processes as the argument limit allows). md5 and sha256 always (the
# targets name them), blake3 when BENCH_ALGS has it. The files are read into the page cache
# before every run.
if ((many_files > 0)); then
    # shellcheck disable=SC2016 # $0 is for that sh
    printf -v warm_many '%q ' sh -c 'find "$0" -type f -exec cat {} + >/dev/null' "$many_dir"
    warm_many=${warm_many% }
    many=(--size "$many_total" --prepare "$warm_many")
    many_algs="md5 sha256"
    if [[ " $algs " == *" blake3 "* ]]; then many_algs+=" blake3"; fi
    say "many files ($many_files files of $many_size bytes, cached before every run):"
    find "$many_dir" -type f -exec cat {} + >/dev/null
    for alg in $many_algs; do
        if [[ $alg == blake3 ]]; then
            if have b3sum; then
                measure "${many[@]}" many peer blake3 blake3 1 \
                    find "$many_dir" -type f -exec b3sum --num-threads 1 {} +
                measure "${many[@]}" many peer blake3 blake3 "$threads" find "$many_dir" -type f -exec b3sum {} +
            fi
        elif have "${alg}sum"; then
            measure "${many[@]}" many peer "$alg" "$alg" 1 find "$many_dir" -type f -exec "${alg}sum" {} +
        fi
        # rhash: only where it knows the algorithm (no blake3 before rhash 1.4.4)
        if have rhash && rhash "--$alg" - </dev/null >/dev/null 2>&1; then
            measure "${many[@]}" many peer "$alg" "$alg" 1 rhash "--$alg" -r "$many_dir"
        fi
        if ((threads > 1)); then
            measure "${many[@]}" many mtsum "$alg" "$alg" 1 "$mtsum" -p 1 -r -t plain -a "$alg" "$many_dir"
        fi
        measure "${many[@]}" many mtsum "$alg" "$alg" "$threads" \
            "$mtsum" -p "$threads" -r -t plain -a "$alg" "$many_dir"
    done
fi

# Cold cache: the page cache dropped before every run, where the machine allows it; otherwise
# (or besides) O_DIRECT reads, which bypass the cache.
cold_mode=off
if [[ $cold != 0 ]]; then
    if [[ $fs_type == tmpfs || $fs_type == ramfs ]]; then
        cold_mode=impossible
        say "cold cache: the test file is on $fs_type (always in memory): no cold-cache figures"
    elif [[ $cold != direct ]] && (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
        cold_mode=drop
    else
        cold_mode=direct
        if [[ $cold != direct ]]; then
            say "cold cache: cannot write /proc/sys/vm/drop_caches (not root?): O_DIRECT reads only"
        fi
    fi
fi
if [[ $cold_mode == drop ]]; then
    say "cold cache (page cache dropped before each run):"
    measure cold limit disk - 1 dd if="$file" of=/dev/null bs=16M iflag=direct
    measure cold limit disk-buffered - 1 dd if="$file" of=/dev/null bs=16M
    measure cold mtsum sha256 "sha256 mtsum" "$threads" "$mtsum" -p "$threads" -a sha256 "$file"
    measure cold mtsum sha256 sha256 "$threads" "$mtsum" -p "$threads" -a sha256 -t plain "$file"
    if have sha256sum; then measure cold peer sha256 sha256 1 sha256sum "$file"; fi
    if ((mtsum_has_direct)); then
        measure cold mtsum sha256 "sha256 mtsum" "$threads" "$mtsum" -p "$threads" -a sha256 --direct "$file"
        measure cold mtsum sha256 sha256 "$threads" "$mtsum" -p "$threads" -a sha256 -t plain --direct "$file"
    fi
elif [[ $cold_mode == direct ]]; then
    say "O_DIRECT reads (the page cache cannot be dropped here):"
    measure direct limit disk - 1 dd if="$file" of=/dev/null bs=16M iflag=direct
    if ((mtsum_has_direct)); then
        measure direct mtsum sha256 "sha256 mtsum" "$threads" "$mtsum" -p "$threads" -a sha256 --direct "$file"
        measure direct mtsum sha256 sha256 "$threads" "$mtsum" -p "$threads" -a sha256 -t plain --direct "$file"
    fi
fi

# ---------------------------------------------------------------------------------------------
# Report
cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
[[ -n $cpu_model ]] || cpu_model=$(uname -m)
cpu_flags=$(awk -F': *' '/^(flags|Features)/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
wanted_flags="sse4_1 sse4_2 ssse3 avx avx2 avx512f avx512vl avx512bw bmi2 sha_ni aes vaes pclmulqdq vpclmulqdq asimd sha1 sha2 sha3 sha512 pmull"
flags=
for f in $wanted_flags; do
    if [[ " $cpu_flags " == *" $f "* ]]; then flags+="$f "; fi
done

# the command line, with paths shortened (the figures are published)
cmdline=
for v in BENCH_QUICK BENCH_SIZE BENCH_RUNS BENCH_WARMUP BENCH_SPEED_SECONDS BENCH_THREADS \
    BENCH_ALGS BENCH_COLD BENCH_MANY_FILES BENCH_MANY_SIZE BENCH_FILE BENCH_DIR BENCH_OUT MTSUM \
    MTSUM_REFERENCE; do
    if [[ -n ${!v:-} ]]; then
        val=${!v}
        case $v in BENCH_FILE | BENCH_DIR | BENCH_OUT | MTSUM | MTSUM_REFERENCE) val=".../$(basename -- "$val")" ;; esac
        if [[ ! $val =~ ^[A-Za-z0-9_./:,+=-]+$ ]]; then
            val="'${val//\'/\'\\\'\'}'"
        fi
        cmdline+="$v=$val "
    fi
done
cmdline+="bench/compare.sh"

tool_version() { # COMMAND...: first line of its version output, or nothing
    local v
    v=$("$@" 2>&1 | head -n 1) || true
    printf '%s' "$v"
}
tools=("$(tool_version hyperfine --version)" "$(tool_version openssl version)")
if have sha256sum; then tools+=("$(tool_version sha256sum --version)"); fi
if have rhash; then tools+=("$(tool_version rhash --version)"); fi
if have b3sum; then tools+=("$(tool_version b3sum --version)"); fi
if have xxhsum; then tools+=("$(tool_version xxhsum --version)"); fi

export B_SIZE=$size B_RUNS=$runs B_WARMUP=$warmup B_THREADS=$threads B_CPU=$cpu_model
B_NPROC=$(nproc)
B_KERNEL=$(uname -sr)
B_MTSUM_VERSION=$(tool_version "$mtsum" --version)
export B_FLAGS=${flags% } B_NPROC B_KERNEL B_CMDLINE=$cmdline B_MTSUM_VERSION B_BUILT=$built B_FS=$fs_type
export B_COLD_MODE=$cold_mode B_CACHE_NOTE=$cache_note B_QUICK=$quick B_OUT=$out
export B_TOOLS B_FAILED B_MANY_FILES=$many_files B_MANY_SIZE=$many_size B_LEAF_SIZES="$leaf_sizes"
B_TOOLS=$(printf '%s\n' "${tools[@]}")
B_FAILED=$(printf '%s\n' "${failures[@]+"${failures[@]}"}")

python3 - "$records" "$limits" <<'PY'
import datetime, json, os, re, statistics, sys

records_path, limits_path = sys.argv[1:3]
E = os.environ
size = int(E["B_SIZE"])
threads = int(E["B_THREADS"])

rows = []
for line in open(records_path):
    section, kind, alg, digest, nthreads, label, jpath, rss, outp, nbytes = line.rstrip("\n").split("\t")
    times = json.load(open(jpath))["results"][0]["times"]
    med = statistics.median(times)
    with open(outp, errors="replace") as f:
        text = f.read()
    row = dict(section=section, kind=kind, alg=alg, digest=digest, threads=int(nthreads),
               label=label, seconds=med, bytes=int(nbytes), gbps=int(nbytes) / med / 1e9,
               rss=int(rss) / 1024 if rss.isdigit() else None, value=None)
    if section == "many":
        # one "DIGEST  NAME" line per file, in any order: (file name, digest) pairs
        row["files"] = [(os.path.basename(m.group(2)), m.group(1).lower()) for m in
                        re.finditer(r"^\\?([0-9a-fA-F]{16,128})\s+\*?(.+)$", text, re.M)]
    else:
        hexes = re.findall(r"(?<![0-9a-fA-F])[0-9a-fA-F]{16,128}(?![0-9a-fA-F])", text)
        row["value"] = max(hexes, key=len).lower() if hexes else None
    rows.append(row)

# one-core limits: openssl speed, else the best one-thread peer of the algorithm
one_core = {}
for line in open(limits_path):
    alg, gbps, source = line.rstrip("\n").split("\t")
    one_core[alg] = (float(gbps), f"`{source}`")
from_openssl = set(one_core)
for r in rows:
    if r["section"] == "warm" and r["kind"] == "peer" and r["threads"] == 1 \
            and r["digest"] == r["alg"] and r["alg"] not in from_openssl:
        best = one_core.get(r["alg"])
        if best is None or r["gbps"] > best[0]:
            one_core[r["alg"]] = (r["gbps"], f"`{r['label']}` (best one-thread peer; no `openssl speed`)")

def find(section, alg):
    return next((r for r in rows if r["section"] == section and r["alg"] == alg), None)

mems = [r for r in rows if r["section"] == "limit" and r["alg"] == "mem"]
mem = mems[0] if mems else None
# every row's page-cache read: the one measured last before it
mem_before = {}
last_mem = mem
for r in rows:
    if r["section"] == "limit" and r["alg"] == "mem":
        last_mem = r
    mem_before[id(r)] = last_mem
disk = find("cold", "disk") or find("direct", "disk")
warm = [r for r in rows if r["section"] == "warm"]

def best_peer(r):
    same = [p for p in warm if p["kind"] == "peer" and p["digest"] == r["digest"]]
    if same:
        return max(same, key=lambda p: p["gbps"]), ""
    other = [p for p in warm if p["kind"] == "peer" and p["alg"] == r["alg"]]
    if other:
        peer = max(other, key=lambda p: p["gbps"])
        return peer, f" (other digest: {digest_name(peer['digest'])})"
    return None, ""

def f2(x):
    return "" if x is None else f"{x:.2f}"

def mib(x):
    return "" if x is None else f"{x:.1f}"

def digest_name(d):
    parts = d.split()
    if len(parts) == 1:
        return f"{d} (plain)"
    return f"{parts[0]} {' '.join(parts[1:])}" + (" tree" if parts[1] == "mtsum" else " leaves")

out = []
w = out.append
date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
human = f"{size / 2**30:.3g} GiB" if size >= 2**30 else f"{size / 2**20:.4g} MiB"
w(f"Measured {date} by `bench/compare.sh`{' in quick (smoke-test) mode' if E['B_QUICK'] == '1' else ''}.")
w("")
w(f"- Command: `{E['B_CMDLINE']}`")
w(f"- CPU: {E['B_CPU']}; {E['B_NPROC']} cores available, mtsum `-p {threads}`; flags: {E['B_FLAGS'] or 'none of interest'}")
w(f"- Kernel: {E['B_KERNEL']}; test file: {human} ({size} bytes) of AES-CTR output on {E['B_FS']}")
w(f"- mtsum: {E['B_MTSUM_VERSION']}, {E['B_BUILT']}")
w(f"- Tools: " + "; ".join(t.strip() for t in E["B_TOOLS"].splitlines() if t.strip()))
w(f"- Each command: one run under `/usr/bin/time -f %M` (peak RSS, output check), then hyperfine "
  f"with {E['B_WARMUP']} warm-up and {E['B_RUNS']} runs; GB/s = file size / median time (10^9 bytes).")
if E["B_CACHE_NOTE"]:
    w(f"- **{E['B_CACHE_NOTE']}**")
w("")
w("### Limits of this machine")
w("")
w("| limit | GB/s | measured with |")
w("|---|---:|---|")
run_algs = {r["alg"] for r in warm}
hint = {"blake3": "`b3sum`", "xxh3": "`xxhsum` (Debian package `xxhash`)", "xxh128": "`xxhsum` (Debian package `xxhash`)"}
for alg in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake3", "xxh3", "xxh128"):
    if alg in one_core:
        g, src = one_core[alg]
        w(f"| {alg}, one core | {g:.2f} | {src} |")
    elif alg in run_algs:
        w(f"| {alg}, one core | | not measured: no `openssl speed` figure and no one-thread peer ({hint.get(alg, 'none known')}) |")
if mem:
    spread = ""
    if len(mems) > 1:
        g = sorted(m["gbps"] for m in mems)
        spread = f"; measured {len(mems)} times (before each algorithm), {g[0]:.2f}–{g[-1]:.2f}, this is the first"
    w(f"| page-cache read (memory bandwidth) | {mem['gbps']:.2f} | `{mem['label']}`, file cached{spread} |")
if disk:
    w(f"| disk, O_DIRECT | {disk['gbps']:.2f} | `{disk['label']}` |")
w("")
w(f"### Warm cache (file in the page cache)")
w("")
w("| command | digest | GB/s | × one core | × best peer | best peer | × page-cache read | peak RSS MiB |")
w("|---|---|---:|---:|---:|---|---:|---:|")
for r in warm:
    lim = one_core.get(r["alg"])
    peer, note = best_peer(r)
    w("| `{}` | {} | {:.2f} | {} | {} | {} | {} | {} |".format(
        r["label"], digest_name(r["digest"]), r["gbps"],
        f2(r["gbps"] / lim[0]) if lim else "",
        f2(r["gbps"] / peer["gbps"]) if peer else "",
        f"`{peer['label']}`{note}" if peer else "none installed",
        f2(r["gbps"] / mem_before[id(r)]["gbps"]) if mem else "",
        mib(r["rss"])))
w("")
w("- *× one core*: against the one-core limit of the algorithm in the table above (for blake3 and "
  "xxh3/xxh128, which `openssl speed` lacks, the best one-thread peer, which includes reading the file; "
  "blank when no such peer is installed).")
w("- *× page-cache read*: against the cached `dd` read measured last before the row (once before "
  "each algorithm's rows), so that a drift of the machine's speed during the run does not skew it.")
w("- *× best peer*: against the fastest installed peer that prints the same digest; where none does "
  "(the tree layouts, unless the C++ mtsum is given), against the fastest peer of the same algorithm, "
  "marked *other digest*.")
if any(r["label"].startswith("mtsum-cpp") for r in warm):
    w("- *mtsum-cpp*: the C++ mtsum (`MTSUM_REFERENCE`), whose digest is the `mtsum` tree.")

cold = [r for r in rows if r["section"] in ("cold", "direct")]
mode = E["B_COLD_MODE"]
if mode == "drop":
    w("")
    w("### Cold cache (page cache dropped before every run)")
elif mode == "direct":
    w("")
    w("### O_DIRECT reads (the page cache could not be dropped on this machine)")
if cold:
    w("")
    w("| command | GB/s | × `dd iflag=direct` | warm GB/s (same command) | peak RSS MiB |")
    w("|---|---:|---:|---:|---:|")
    for r in cold:
        wr = next((x for x in rows if x["section"] in ("warm", "limit") and x["label"] == r["label"]), None)
        w("| `{}` | {:.2f} | {} | {} | {} |".format(
            r["label"], r["gbps"], f2(r["gbps"] / disk["gbps"]) if disk else "",
            f2(wr["gbps"]) if wr else "", mib(r["rss"])))
    if mode == "direct":
        for r in warm:
            if r["digest"] in ("sha256", "sha256 mtsum") and r["threads"] in (1, threads) \
                    and (r["kind"] == "mtsum" and r["threads"] == threads or r["label"].startswith("sha256sum")):
                w("| `{}` (warm cache) | {:.2f} | {} | {:.2f} | {} |".format(
                    r["label"], r["gbps"], f2(r["gbps"] / disk["gbps"]) if disk else "",
                    r["gbps"], mib(r["rss"])))
        w("")
        w("The page cache could not be dropped, so the cold-file limit is the O_DIRECT read rate: "
          "where a command's warm-cache rate is above it, the disk limits that command on a cold file.")
elif mode == "impossible":
    w("")
    w("No cold-cache figures: the test file is on a file system held in memory.")
elif mode == "off":
    w("")
    w("Cold-cache figures were not measured (`BENCH_COLD=0`).")

leaves = [r for r in rows if r["section"] == "leaves"]
if leaves:
    w("")
    w("### Leaf sizes: the default layout against `-t rfc6962 -l SIZE`")
    w("")
    w("Seconds (median), and in brackets the time over the default layout's at the same `-p`: "
      "above 1.0 the fixed leaves are slower.")
    w("")
    sizes = E["B_LEAF_SIZES"].split()
    w("| | default layout | " + " | ".join(f"rfc6962 {l}" for l in sizes) + " |")
    w("|---|---:|" + "---:|" * len(sizes))
    for alg, p in dict.fromkeys((r["alg"], r["threads"]) for r in leaves):
        cell = {r["digest"]: r for r in leaves if r["alg"] == alg and r["threads"] == p}
        base = cell.get(alg)
        cells = [f"{base['seconds']:.2f}" if base else ""]
        for l in sizes:
            r = cell.get(f"{alg} rfc6962 {l}")
            ratio = f" ({r['seconds'] / base['seconds']:.2f})" if r and base else ""
            cells.append(f"{r['seconds']:.2f}{ratio}" if r else "")
        w(f"| {alg} -p {p} | " + " | ".join(cells) + " |")

many = [r for r in rows if r["section"] == "many"]
many_files, many_size = int(E["B_MANY_FILES"]), int(E["B_MANY_SIZE"])

def human_bytes(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**shift:
            return f"{n / 2**shift:.4g} {unit}"
    return f"{n} bytes"

# many files: every command prints one digest per file, and the commands of an algorithm agree
# file by file (outputs differ in order, so the (file, digest) pairs are compared)
many_bad = []
by_alg = {}
for r in many:
    names = {n for n, _ in r["files"]}
    if len(r["files"]) != many_files or len(names) != many_files:
        many_bad.append(f"`{r['label']}` printed {len(r['files'])} digests for {len(names)} distinct "
                        f"files, not {many_files}")
    by_alg.setdefault(r["alg"], []).append(r)
for alg, same in by_alg.items():
    ref = dict(same[0]["files"])  # the first measured: a peer when one is installed
    for r in same[1:]:
        got = dict(r["files"])
        diff = sorted(n for n in set(ref) | set(got) if ref.get(n) != got.get(n))
        if diff:
            many_bad.append(f"{alg}: `{r['label']}` and `{same[0]['label']}` disagree on "
                            f"{len(diff)} of {many_files} files (e.g. `{diff[0]}`)")

if many:
    total = many[0]["bytes"]
    w("")
    w(f"### Many files ({many_files} files of {human_bytes(many_size)}, in the page cache)")
    w("")
    w(f"`DIR` holds {many_files} files of {many_size} bytes ({total} bytes in all) of AES-CTR output "
      "(cut from the test file); they are read into the page cache (`find DIR -type f -exec cat {} +`) before every run. "
      "mtsum walks `DIR` itself (`-r`); the peers get the same files from `find DIR -type f -exec "
      "… {} +` or their own `-r`. GB/s = the bytes of the directory / median time.")
    w("")
    w("| command | seconds | GB/s | × best peer | best peer | peak RSS MiB |")
    w("|---|---:|---:|---:|---|---:|")
    for r in many:
        peers = [p for p in many if p["kind"] == "peer" and p["alg"] == r["alg"]]
        peer = max(peers, key=lambda p: p["gbps"]) if peers else None
        w("| `{}` | {:.3f} | {:.2f} | {} | {} | {} |".format(
            r["label"], r["seconds"], r["gbps"], f2(r["gbps"] / peer["gbps"]) if peer else "",
            f"`{peer['label']}`" if peer else "none installed", mib(r["rss"])))
    w("")
    w("- *× best peer*: against the fastest installed peer of the same algorithm on the same files "
      "(every command here prints the plain digest of each file, as `md5sum` does). The peers hash on "
      "one thread, except `b3sum` without `--num-threads 1`.")

# the same digest must be the same value
groups = {}
for r in rows:
    if r["value"] and r["digest"] != "-":
        groups.setdefault(r["digest"], {}).setdefault(r["value"], []).append(r["label"])
bad = {d: v for d, v in groups.items() if len(v) > 1}
w("")
if bad:
    w("**Digest mismatch:** " + "; ".join(
        f"{d}: " + " vs ".join(f"{', '.join(f'`{l}`' for l in ls)} → {v[:16]}…" for v, ls in vs.items())
        for d, vs in bad.items()))
else:
    w(f"Digests checked: the commands of each digest ({len(groups)} digests) printed the same value.")
if many_bad:
    w("")
    w("**Digest mismatch (many files):** " + "; ".join(many_bad) + ".")
elif many:
    w("")
    w(f"Digests checked (many files): every command printed {many_files} digests, one per file, and "
      f"the commands of each algorithm ({', '.join(by_alg)}) agree file by file.")
failed = [l for l in E["B_FAILED"].splitlines() if l]
if failed:
    w("")
    w("Left out (the command failed): " + ", ".join(f"`{l}`" for l in failed) + ".")

body = "\n".join(out) + "\n"
print()
print(body)

# write the section between the markers; text around it is kept
path = E["B_OUT"]
if path != "-":
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    section = f"{begin}\n<!-- written by bench/compare.sh: edits between these markers are overwritten -->\n\n{body}\n{end}\n"
    try:
        text = open(path).read()
    except FileNotFoundError:
        text = ("# Performance\n\n"
                "The figures below are measured by `bench/compare.sh` (see `bench/README.md`); "
                "rerun it to refresh them.\n\n")
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        rest = text[j + len(end):].lstrip("\n")
        text = text[:i] + section + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print(f"written to {path}", file=sys.stderr)
for m in many_bad:
    print(f"compare.sh: DIGEST MISMATCH (many files): {m}", file=sys.stderr)
if bad or many_bad:
    sys.exit(3)
PY
