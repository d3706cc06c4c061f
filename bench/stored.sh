#!/usr/bin/env bash
# bench/stored.sh: `mtsum --stored s3://BUCKET/PREFIX/` (a sum file of what the store keeps,
# no object's bytes read) against the two routes users take today: a boto3 script (list, then
# head_object with ChecksumMode per key, one after the other) and the AWS CLI (`aws s3api
# list-objects-v2`, then `aws s3api head-object --checksum-mode ENABLED` per key, a process
# each), on one S3 API server on loopback, moto, started here.
#
# The bucket holds BENCH_STORED_OBJECTS (1000) objects of 1000 bytes put one by one and
# BENCH_STORED_MULTIPART (20) of 11 MiB uploaded by boto3's transfer manager in 5 MiB parts.
# Each command runs BENCH_RUNS (3) times; the table gives the median wall time and the
# requests moto logged during one run. The AWS CLI, slow per key (a Python process each), runs
# on the first BENCH_STORED_CLI_KEYS (100) keys only, and its time per key is given.
#
#   bench/stored.sh
#
# Needs a Python with boto3 and moto[server] (BENCH_PYTHON, default target/venv/bin/python,
# which scripts/test.sh makes), and for the CLI row `aws` on PATH (AWS_CLI names another).
# moto is single-threaded Python: these are the costs of the requests against a slow server,
# not S3's latency; shared machines are noisy.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"
bench_binaries stored.sh
python=${BENCH_PYTHON:-$root/target/venv/bin/python}
mkdir -p -- "$dir"

PYTHONPATH="$root/bench${PYTHONPATH:+:$PYTHONPATH}" "$python" - "$dir" "$mtsum" <<'PY'
import os, shutil, statistics, subprocess, sys, time

import boto3
from boto3.s3.transfer import TransferConfig
from moto_server import moto_server

work, mtsum = sys.argv[1], sys.argv[2]
objects = int(os.environ.get("BENCH_STORED_OBJECTS", 1000))
multipart = int(os.environ.get("BENCH_STORED_MULTIPART", 20))
runs = int(os.environ.get("BENCH_RUNS", 3))
cli_keys = int(os.environ.get("BENCH_STORED_CLI_KEYS", 100))
aws = os.environ.get("AWS_CLI") or shutil.which("aws")
MIB = 1 << 20

log_path = os.path.join(work, "moto-stored.log")
with moto_server(log_path) as endpoint:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
               AWS_ENDPOINT_URL=endpoint)
    os.environ.update(env)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="bench")
    for i in range(objects):
        s3.put_object(Bucket="bench", Key=f"p/small/{i:06d}", Body=os.urandom(1000))
    part = os.path.join(work, "stored-part")
    with open(part, "wb") as f:
        f.write(os.urandom(11 * MIB))
    config = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    for i in range(multipart):
        s3.upload_file(part, "bench", f"p/multi/{i:04d}", Config=config)

    boto_route = (
        "import boto3\n"
        "s3 = boto3.client('s3')\n"
        "for page in s3.get_paginator('list_objects_v2').paginate(Bucket='bench', Prefix='p/'):\n"
        "    for o in page.get('Contents', []):\n"
        "        s3.head_object(Bucket='bench', Key=o['Key'], ChecksumMode='ENABLED')\n")
    cli_route = (
        f"{aws} s3api list-objects-v2 --bucket bench --prefix p/small/ --max-items {cli_keys} "
        "--query 'Contents[].Key' --output text | tr '\\t' '\\n' | head -n "
        f"{cli_keys} | while read -r key; do {aws} s3api head-object --bucket bench "
        "--key \"$key\" --checksum-mode ENABLED > /dev/null; done")
    commands = [
        ("mtsum --stored", [mtsum, "--stored", "s3://bench/p/"], objects + multipart),
        ("mtsum --stored --connections 1", [mtsum, "--stored", "--connections", "1",
                                            "s3://bench/p/"], objects + multipart),
        ("boto3 list + head_object", [sys.executable, "-c", boto_route], objects + multipart),
    ]
    if aws:
        commands.append(("aws s3api list + head-object", ["bash", "-c", cli_route], cli_keys))

    def requests() -> int:
        with open(log_path) as f:
            return sum(1 for line in f if '"GET ' in line or '"HEAD ' in line)

    print(f"{objects} objects of 1000 B and {multipart} of 11 MiB in 5 MiB parts, moto on "
          f"loopback, median of {runs}")
    print(f"{'command':34} {'keys':>6} {'seconds':>8} {'per key ms':>10} {'requests':>8}")
    for name, argv, keys in commands:
        times = []
        for _ in range(runs):
            before = requests()
            start = time.monotonic()
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
            times.append(time.monotonic() - start)
            made = requests() - before
        t = statistics.median(times)
        print(f"{name:34} {keys:>6} {t:>8.2f} {1000 * t / keys:>10.2f} {made:>8}")
PY
