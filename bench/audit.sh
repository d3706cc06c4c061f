#!/usr/bin/env bash
# bench/audit.sh: `mtsum --audit` against `mtsum -r` hashing the same tree with the same layout
# and algorithm (plain BLAKE3, the audit's default), the targets of the audit-speed issue.
#
# The tree holds BENCH_AUDIT_FILES (20 000) files of uniformly random sizes, 0 to 64 KiB
# (seeded: every run makes the same tree), in 100 subdirectories, about 650 MB. Each round runs,
# back to back: `mtsum -r -t plain -a blake3 TREE` (hash), then a verify of every file that
# changed nothing with the records in a database (`--db`), in extended attributes (where the
# file system has user attributes) and in a manifest, and a first record into a new database.
# The table gives the median wall time of each over the rounds, its ratio to the hash run's
# median, its CPU share and peak RSS (GNU time). With strace installed, one more verify with
# `--db` is counted by `strace -c -f`: pwrite64, fsync, write, futex and sched_yield calls.
# With MTSUM_BEFORE, the same commands of that binary run in the same rounds, for a
# before/after table.
#
# Where `chkbit` (PyPI chkbit, 4.x) and `bitrot` (PyPI bitrot) are on PATH, each verifies a copy
# of the tree of its own in the same rounds (chkbit with its defaults, blake3 and 5 workers;
# bitrot's default run, which checks and updates its database), against the verify with
# `--db`. With BENCH_AUDIT_BIG=1, one file of 2 GiB of random bytes is verified with `--db`
# against `mtsum -p 2` of the same layout, with `-t mtsum -a sha256` and with the default
# (plain BLAKE3), in the same rounds.
#
#   bench/audit.sh
#   MTSUM_BEFORE=/path/to/older/mtsum bench/audit.sh
#
# Settings (environment): MTSUM (default target/release/mtsum), MTSUM_BEFORE, BENCH_DIR (default
# ${TMPDIR:-/tmp}/mtsum-bench), BENCH_AUDIT_FILES, BENCH_RUNS (5), BENCH_AUDIT_BIG. Needs python3 and GNU time
# (/usr/bin/time). Shared machines are noisy: compare the ratios of one run.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
bench_binaries audit.sh
files=${BENCH_AUDIT_FILES:-20000}
runs=${BENCH_RUNS:-5}
[[ -x /usr/bin/time ]] || { echo "audit.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }
mkdir -p -- "$dir"

python3 - "$dir" "$files" "$runs" "$mtsum" "$before" "${BENCH_AUDIT_BIG:-}" <<'PY'
import os, random, shutil, subprocess, sys

work, files, runs, after, before = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
big = sys.argv[6] not in ("", "0")
tree = os.path.join(work, f"audit-{files}")
if not os.path.isdir(tree):
    print(f"creating {tree}...", file=sys.stderr)
    rng = random.Random(32)
    block = rng.randbytes(2 << 20)
    os.makedirs(tree + ".partial")
    for i in range(files):
        sub = os.path.join(tree + ".partial", f"d{i % 100:03d}")
        os.makedirs(sub, exist_ok=True)
        size, at = rng.randint(0, 64 << 10), rng.randrange(0, 1 << 20)
        with open(os.path.join(sub, f"f{i:05d}"), "wb") as f:
            f.write(block[at:at + size])
    os.rename(tree + ".partial", tree)
subprocess.run(["sh", "-c", f"find {tree} -type f -exec cat {{}} + >/dev/null"], check=True)

def xattrs_work():
    probe = os.path.join(work, "xattr-probe")
    open(probe, "w").close()
    try:
        os.setxattr(probe, "user.mtsum-probe", b"1")
        return True
    except OSError:
        return False
    finally:
        os.remove(probe)

binaries = [("after", after)] + ([("before", before)] if before else [])

def store(label, kind):
    return os.path.join(work, f"audit-{label}.{kind}")

def clear_xattrs():
    for d, _, names in os.walk(tree):
        for n in names:
            try:
                os.removexattr(os.path.join(d, n), "user.mtsum")
            except OSError:
                pass

def timed(argv):
    """Wall seconds, CPU share and peak RSS (KiB) of one run, by GNU time."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %P %M", *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    wall, cpu, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), cpu, int(rss)

def commands(label, binary):
    db, manifest = store(label, "db"), store(label, "manifest")
    cmds = {
        "hash -r -t plain -a blake3": [binary, "-r", "-t", "plain", "-a", "blake3", tree],
        "verify --db": [binary, "--audit", "--db", db, "-r", tree],
        "verify --manifest": [binary, "--audit", "--manifest", manifest, "-r", tree],
        "first record --db": None,
    }
    if xattrs_work():
        cmds["verify, extended attributes"] = [binary, "--audit", "-r", tree]
    return cmds

# Records to verify against: a database, a manifest, extended attributes.
for label, binary in binaries:
    for kind in ("db", "manifest"):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(store(label, kind) + suffix):
                os.remove(store(label, kind) + suffix)
    subprocess.run([binary, "--audit", "--db", store(label, "db"), "-r", tree], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([binary, "--audit", "--manifest", store(label, "manifest"), "-r", tree], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

# The peers, each on a copy of the tree of its own (each keeps its records beside the files).
peers = {}
for peer, argv in (("chkbit", ["chkbit", "-q", "."]), ("bitrot", ["bitrot"])):
    if shutil.which(peer):
        copy = os.path.join(work, f"audit-{files}-{peer}")
        if not os.path.isdir(copy):
            shutil.copytree(tree, copy)
            first = ["chkbit", "-u", "-q", "."] if peer == "chkbit" else argv
            subprocess.run(first, cwd=copy, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        peers[peer] = (copy, argv)

# One large file, recorded with each layout.
big_file = os.path.join(work, "audit-big-2g")
big_cmds = {}
if big:
    if not os.path.exists(big_file):
        with open(big_file + ".partial", "wb") as f:
            for _ in range(2048):
                f.write(os.urandom(1 << 20))
        os.rename(big_file + ".partial", big_file)
    subprocess.run(["cat", big_file], stdout=subprocess.DEVNULL, check=True)
    for label, binary in binaries:
        for short, name, spec in (("sha256", "-t mtsum -a sha256", ["-t", "mtsum", "-a", "sha256"]), ("default", "default", [])):
            db = store(label, f"big-{short}.db")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            subprocess.run([binary, "--audit", "--db", db, *spec, big_file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            layout = spec or ["-t", "plain", "-a", "blake3"]
            big_cmds[(label, name)] = ([binary, "-p", "2", *layout, big_file], [binary, "--audit", "--db", db, *spec, big_file])

results = {}
for _ in range(runs):
    for peer, (copy, argv) in peers.items():
        out = subprocess.run(["/usr/bin/time", "-f", "%e %P %M", *argv], cwd=copy, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        wall, cpu, rss = out.stderr.strip().splitlines()[-1].split()
        results.setdefault(("peer", peer), []).append((float(wall), cpu, int(rss)))
    for (label, name), (hash_argv, audit_argv) in big_cmds.items():
        results.setdefault((label, "2 GiB hash " + name), []).append(timed(hash_argv))
        results.setdefault((label, "2 GiB verify " + name), []).append(timed(audit_argv))
    for label, binary in binaries:
        for name, argv in commands(label, binary).items():
            if name == "verify, extended attributes":
                clear_xattrs()
                subprocess.run([binary, "--audit", "-r", tree], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if argv is None:
                fresh = store(label, "first.db")
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(fresh + suffix):
                        os.remove(fresh + suffix)
                argv = [binary, "--audit", "--db", fresh, "-r", tree]
            results.setdefault((label, name), []).append(timed(argv))

def median(label, name):
    """The run of median wall time: (wall, CPU share, RSS)."""
    rows = sorted(results[(label, name)])
    return rows[len(rows) // 2]

print(f"\n{files} files, {runs} rounds, medians; ratios to `hash -r` of the same binary in the same rounds\n")
print("| binary | command | wall s | ratio | CPU | RSS MiB |")
print("|---|---|---|---|---|---|")
for label, binary in binaries:
    base = median(label, "hash -r -t plain -a blake3")[0]
    for name in commands(label, binary):
        wall, cpu, rss = median(label, name)
        print(f"| {label} | {name} | {wall:.2f} | {wall / base:.2f} | {cpu} | {rss / 1024:.0f} |")

if peers:
    print("\nPeers, each verifying a copy of the tree; ratio: their time to mtsum's verify --db\n")
    print("| peer | wall s | mtsum is faster by | CPU | RSS MiB |")
    print("|---|---|---|---|---|")
    ours = median("after", "verify --db")[0]
    for peer in peers:
        wall, cpu, rss = median("peer", peer)
        print(f"| {peer} | {wall:.2f} | {wall / ours:.1f} x | {cpu} | {rss / 1024:.0f} |")

if big_cmds:
    print("\nOne 2 GiB file, verify --db against mtsum -p 2 of the same layout\n")
    print("| binary | layout | hash s | verify s | ratio | verify CPU |")
    print("|---|---|---|---|---|---|")
    for (label, name) in big_cmds:
        h = median(label, "2 GiB hash " + name)[0]
        v, cpu, _ = median(label, "2 GiB verify " + name)
        print(f"| {label} | {name} | {h:.2f} | {v:.2f} | {v / h:.2f} | {cpu} |")

if shutil.which("strace"):
    print("\n`strace -c -f` of one verify with --db\n")
    wanted = ["pwrite64", "fsync", "write", "futex", "sched_yield"]
    print("| binary | " + " | ".join(wanted) + " |")
    print("|---|" + "---|" * len(wanted))
    for label, binary in binaries:
        out = os.path.join(work, f"audit-{label}.strace")
        subprocess.run(["strace", "-c", "-f", "-o", out, binary, "--audit", "--db", store(label, "db"), "-r", tree],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        calls = {}
        for line in open(out):
            parts = line.split()
            if len(parts) >= 5 and parts[-1] in wanted:
                calls[parts[-1]] = parts[3]
        print(f"| {label} | " + " | ".join(calls.get(w, "0") for w in wanted) + " |")
PY
