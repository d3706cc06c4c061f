#!/usr/bin/env bash
# bench/bucket-compare.sh: `mtsum --compare DIR s3://BUCKET/PREFIX/` (the local files checked
# against the values the store reports, no object's bytes read) against the routes users take
# today: the AWS CLI's listing and a script that computes each ETag locally (it must know the
# part size), and `rclone check` (which cannot check an object uploaded in parts: "hashes could
# not be checked"), with `rclone check --download` and `mtsum --compare --read-remote=all`,
# which read every object's bytes; on one S3 API server on loopback, moto, started here.
#
# The tree holds BENCH_COMPARE_SMALL (1000) files of 1 byte to 64 KiB and BENCH_COMPARE_MULTI
# (1000) of 5 MiB + 8 bytes, uploaded by boto3's transfer manager in 5 MiB parts (two each),
# as the AWS CLI uploads them (with its default CRC32 checksums). Each command runs BENCH_RUNS
# (3) times; the table gives the median wall time, objects per second, and what each verified.
#
#   bench/bucket-compare.sh
#
# Needs a Python with boto3 and moto[server] (BENCH_PYTHON, default target/venv/bin/python,
# which scripts/test.sh makes), `aws` and `rclone` on PATH for their rows (left out without).
# moto is single-threaded Python: a HEAD costs it some 2.5 ms, which the objects' HEADs
# (2 for an object in parts: the part size) pay here; shared machines are noisy.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
bench_binaries bucket-compare.sh
python=${BENCH_PYTHON:-$root/target/venv/bin/python}
mkdir -p -- "$dir"

PYTHONPATH="$root/bench${PYTHONPATH:+:$PYTHONPATH}" "$python" - "$dir" "$mtsum" <<'PY'
import hashlib, json, os, random, shutil, statistics, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
from boto3.s3.transfer import TransferConfig
from moto_server import moto_server

work, mtsum = Path(sys.argv[1]), sys.argv[2]
small = int(os.environ.get("BENCH_COMPARE_SMALL", 1000))
multi = int(os.environ.get("BENCH_COMPARE_MULTI", 1000))
runs = int(os.environ.get("BENCH_RUNS", 3))
MIB = 1 << 20

with moto_server(work / "moto-compare.log") as endpoint:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
               AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint,
               RCLONE_CONFIG_BENCH_TYPE="s3", RCLONE_CONFIG_BENCH_PROVIDER="Other",
               RCLONE_CONFIG_BENCH_ENDPOINT=endpoint, RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="bench",
               RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="bench", RCLONE_CONFIG_BENCH_REGION="us-east-1")
    os.environ.clear()
    os.environ.update(env)
    tree = work / "compare-tree"
    shutil.rmtree(tree, ignore_errors=True)
    block = random.Random(1).randbytes(5 * MIB)
    files = []
    for i in range(small):
        p = tree / "small" / f"{i:05d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        rng = random.Random(i)
        p.write_bytes(rng.randbytes(rng.randint(1, 64 << 10)))
        files.append(p)
    for i in range(multi):
        p = tree / "multi" / f"{i:05d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(block + i.to_bytes(8, "big"))
        files.append(p)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="bench")
    config = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB,
                            max_concurrency=2)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: s3.upload_file(str(p), "bench", f"t/{p.relative_to(tree)}",
                                               Config=config), files))

    script = work / "etags.py"
    script.write_text(
        "import hashlib, json, os, sys\n"
        "listing, root, part = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])\n"
        "ok = 0\n"
        "for o in listing['Contents']:\n"
        "    etag = o['ETag'].strip('\"')\n"
        "    with open(os.path.join(root, o['Key'][2:]), 'rb') as f:\n"
        "        if '-' in etag:\n"
        "            parts = [hashlib.md5(c).digest() for c in iter(lambda: f.read(part), b'')]\n"
        "            mine = hashlib.md5(b''.join(parts)).hexdigest() + f'-{len(parts)}'\n"
        "        else:\n"
        "            mine = hashlib.md5(f.read()).hexdigest()\n"
        "    ok += mine == etag\n"
        "print(f'{ok} verified')\n")
    aws, rclone = shutil.which("aws"), shutil.which("rclone")
    listing = work / "listing.json"
    commands = [("mtsum --compare", [mtsum, "--compare", "--json", str(tree), "s3://bench/t/"])]
    if aws:
        commands.append(("aws s3api list-objects-v2 + ETag script", f"{aws} s3api list-objects-v2 "
                         f"--bucket bench --prefix t/ --output json > {listing} && "
                         f"{sys.executable} {script} {listing} {tree} {5 * MIB}"))
    if rclone:
        commands.append(("rclone check", [rclone, "check", str(tree), "bench:bench/t"]))
        commands.append(("rclone check --download", [rclone, "check", "--download", str(tree),
                                                     "bench:bench/t"]))
    commands.append(("mtsum --compare --read-remote=all",
                     [mtsum, "--compare", "--read-remote=all", "--json", str(tree), "s3://bench/t/"]))
    print(f"{small + multi} objects ({multi} in two parts, 5 MiB + 8 bytes), {runs} runs, median")
    print("| command | seconds | objects/s | verified |")
    print("|---|---:|---:|---|")
    for name, cmd in commands:
        times = []
        for _ in range(runs):
            start = time.monotonic()
            r = subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True)
            times.append(time.monotonic() - start)
        if name.startswith("mtsum"):
            s = json.loads(r.stdout.splitlines()[-1])["summary"]
            said = f"{s['ok']} ok: {s['by_stored']} by stored values, {s['by_read']} by reading"
        elif name.startswith("rclone"):
            said = "; ".join(l.split(": ", 2)[-1] for l in r.stderr.splitlines() if "NOTICE: S3" in l)
        else:
            said = r.stdout.strip()
        median = statistics.median(times)
        print(f"| `{name}` | {median:.2f} | {(small + multi) / median:.0f} | {said} |")
PY
