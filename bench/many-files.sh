#!/usr/bin/env bash
# bench/many-files.sh: `mtsum -r` over many small files against one large file of the same
# bytes, the many-files target of the speed issue.
#
# The directory holds BENCH_MANY_FILES (20 000) files of exponentially distributed sizes (mean
# 64 KiB, capped at 1 MiB; seeded, so every run makes the same tree) in 8 subdirectories, about
# 1.3 GB; the large file holds as many bytes. Both are read into the page cache first (keep
# 3 GB of memory free). For each algorithm, layout and -p, hyperfine times `mtsum -r DIR` and `mtsum FILE`;
# the table gives the medians, the many-files throughput as a fraction of the large file's,
# and the CPU time (user + system) of each. With MTSUM_BEFORE, the same four commands of that
# binary run in the same hyperfine call, for a before/after table. `find DIR -type f | xargs
# cat` reads the files and nothing else; so does `examples/read_floor.rs` (built here), with
# one open, size, read and close per file and nothing more: run on DIR and on FILE, the
# difference of its CPU times is what the kernel charges for the many files over the one, and
# the table's "ceiling" is the DIR / FILE throughput that mtsum would reach if it paid only
# that on top of its FILE run's CPU time, spread over every core (at `-p` = cores).
#
#   bench/many-files.sh                          # md5 sha256 blake3, default/plain/rfc6962, -p N and -p 1
#   MTSUM=target/release/mtsum BENCH_ALGS=sha256 BENCH_LAYOUTS=mtsum bench/many-files.sh
#   MTSUM_BEFORE=/tmp/mtsum-main bench/many-files.sh   # before (that binary) and after
#
# Settings (environment): MTSUM (default target/release/mtsum), MTSUM_BEFORE, BENCH_DIR (default
# ${TMPDIR:-/tmp}/mtsum-bench), BENCH_MANY_FILES, BENCH_ALGS, BENCH_LAYOUTS (mtsum plain
# rfc6962 ...), BENCH_THREADS (default: nproc, then 1), BENCH_RUNS (7), BENCH_RECACHE (1: read
# each command's input again before every timed run, as some virtual machines drop cached pages
# with most of their memory free; 0: once at the start). Needs python3 and hyperfine. Shared
# machines are noisy: compare the ratios of one run.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
files=${BENCH_MANY_FILES:-20000}
algs=${BENCH_ALGS:-md5 sha256 blake3}
layouts=${BENCH_LAYOUTS:-mtsum plain rfc6962}
threads=${BENCH_THREADS:-"$(nproc) 1"}
runs=${BENCH_RUNS:-7}
recache=${BENCH_RECACHE:-1}
command -v hyperfine >/dev/null || { echo "many-files.sh: needs hyperfine" >&2; exit 1; }
bench_binaries many-files.sh
(cd -- "$root" && cargo build --quiet --release --example read_floor)
read_floor=$root/target/release/examples/read_floor

tree=$dir/many-exp-$files
big=$dir/many-exp-$files.bin
mkdir -p -- "$dir"
if [[ ! -s $big ]]; then
    echo "creating $tree and $big..." >&2
    rm -rf -- "$tree" "$big"
    python3 - "$tree" "$big" "$files" <<'PY'
import os, random, sys
tree, big, files = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(15)
block = rng.randbytes(2 << 20)
total = 0
for i in range(files):
    size = min(int(rng.expovariate(1 / 65536)), 1 << 20)
    sub = os.path.join(tree, f"d{i % 8}")
    os.makedirs(sub, exist_ok=True)
    at = rng.randrange(0, 1 << 20)
    with open(os.path.join(sub, f"f{i:05d}"), "wb") as f:
        f.write(block[at:at + size])
    total += size
with open(big + ".partial", "wb") as f:
    left = total
    while left:
        n = min(left, len(block))
        f.write(block[:n])
        left -= n
os.rename(big + ".partial", big)
PY
fi
bytes=$(stat -L -c %s -- "$big")
read_tree="sh -c 'find $tree -type f -exec cat {} + >/dev/null'"
read_big="cat $big"
sh -c "$read_tree"
cat -- "$big" >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/mtsum-many.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
n=0
hyperfine -N -w 1 -r "$runs" --export-json "$work/$((n++)).json" \
    -n 'find DIR -type f | xargs cat' "sh -c 'find $tree -type f | xargs cat >/dev/null'" \
    -n 'read_floor DIR' "$read_floor $tree" -n 'read_floor FILE' "$read_floor $big" >/dev/null
for p in $threads; do
    for alg in $algs; do
        for layout in $layouts; do
            commands=()
            for bin in $before $mtsum; do
                commands+=(--command-name="$bin -p $p -a $alg -t $layout: DIR"
                    "$bin -p $p -a $alg -t $layout -r $tree"
                    --command-name="$bin -p $p -a $alg -t $layout: FILE"
                    "$bin -p $p -a $alg -t $layout $big")
                if [[ $recache == 1 ]]; then
                    commands+=(--prepare "$read_tree" --prepare "$read_big")
                fi
            done
            hyperfine -N -w 1 -r "$runs" --export-json "$work/$((n++)).json" "${commands[@]}" >/dev/null
        done
    done
done

python3 - "$work" "$bytes" "$files" "$before" "$(nproc)" <<'PY'
import glob, json, os, statistics, sys
work, size, files, before, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
runs = [json.load(open(p))["results"]
        for p in sorted(glob.glob(os.path.join(work, "*.json")), key=lambda p: int(os.path.basename(p)[:-5]))]
print(f"{files} files, {size} bytes ({size / 1e9:.2f} GB); medians of hyperfine runs; CPU = user + system.\n")
med = lambda r: statistics.median(r["times"])
cpu = lambda r: r["user"] + r["system"]
for r in runs[0]:
    print(f"- `{r['command']}`: {med(r):.3f} s, CPU {cpu(r):.3f} s")
# What the kernel charges for reading the many files beyond reading the one large file.
extra = cpu(runs[0][1]) - cpu(runs[0][2])
print(f"- reading the {files} files costs {extra:.3f} s more CPU than reading FILE "
      f"({extra / files * 1e6:.1f} µs a file)\n")
runs.pop(0)
# DIR needs at least FILE's CPU time and `extra` more, on `cores` cores at best. Only where
# FILE keeps the cores busy too: not at `-p 1` (a reader hashes small files itself, one
# thread, but a large one beside its hasher, two), nor where FILE is one stream on one core
# (`plain` but for BLAKE3), which DIR outruns by hashing files side by side.
def ceiling(f):
    if f" -p {cores} " not in f["command"] or cpu(f) < 0.75 * int(cores) * med(f):
        return "—"
    return f"{med(f) * int(cores) / (cpu(f) + extra):.2f}"
if before:
    print("| command | DIR s before → after | FILE s | DIR / FILE throughput before → after | ceiling | DIR CPU s before → after | FILE CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
else:
    print("| command | DIR s | FILE s | DIR GB/s | FILE GB/s | DIR / FILE throughput | ceiling | DIR CPU s | FILE CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in runs:
    name = "mtsum " + r[-1]["command"].split(" ", 1)[1].rsplit(":", 1)[0]
    d, f = r[-2], r[-1]
    if before:
        bd, bf = r[0], r[1]
        print(f"| `{name}` | {med(bd):.3f} → {med(d):.3f} | {med(f):.3f} "
              f"| {med(bf) / med(bd):.2f} → {med(f) / med(d):.2f} | {ceiling(f)} | {cpu(bd):.2f} → {cpu(d):.2f} | {cpu(f):.2f} |")
    else:
        print(f"| `{name}` | {med(d):.3f} | {med(f):.3f} | {size / med(d) / 1e9:.2f} | {size / med(f) / 1e9:.2f} "
              f"| {med(f) / med(d):.2f} | {ceiling(f)} | {cpu(d):.3f} | {cpu(f):.3f} |")
PY
