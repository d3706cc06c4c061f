"""Hashing releases the GIL. Not by timing: with a switch interval of 1000 s, another thread
runs only while the running one releases the GIL (or blocks), so a counter that moves during
one update proves the release, and a FIFO whose writer is a Python thread can only be read to
its end if file_digest releases it (else the two deadlock: the child running it is then killed
after a generous limit, which fails the test rather than hanging it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import mtsum


def test_update_releases_the_gil():
    data = bytes(300 << 20)
    h = mtsum.Hasher("sha256", "plain")
    counter = 0
    stop = threading.Event()

    def count():
        nonlocal counter
        while not stop.is_set():
            counter += 1
            stop.wait(0.0001)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:
        t = threading.Thread(target=count)
        t.start()
        before = counter
        h.update(data)
        during = counter - before
        stop.set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert during > 0


def test_two_threads_hash_at_once():
    """While one thread is inside one long update, another thread's updates finish (with the
    switch interval at 1000 s it can only run while the first has released the GIL)."""
    long_piece, short_piece = bytes(300 << 20), bytes(1 << 20)
    inside = threading.Event()
    finished = threading.Event()
    done_while_inside = 0

    def other():
        nonlocal done_while_inside
        h = mtsum.Hasher("sha256", "plain")
        inside.wait()
        while not finished.is_set():
            h.update(short_piece)
            done_while_inside += not finished.is_set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:
        t = threading.Thread(target=other)
        t.start()
        h = mtsum.Hasher("sha256", "plain")
        inside.set()
        h.update(long_piece)
        finished.set()
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert done_while_inside > 0


def test_file_digest_of_a_fifo_fed_by_a_python_thread(tmp_path):
    fifo = tmp_path / "fifo"
    script = textwrap.dedent(f"""
        import hashlib, os, threading, mtsum
        fifo = {str(fifo)!r}
        os.mkfifo(fifo)
        piece = bytes(range(256)) * 256
        def write():
            with open(fifo, "wb", buffering=0) as f:
                for _ in range(128):  # 8 MiB, 128 writes: the pipe holds 64 KiB
                    f.write(piece)
        t = threading.Thread(target=write)
        t.start()
        digest = mtsum.file_digest(fifo, "sha256", "plain")
        t.join()
        assert digest == hashlib.sha256(piece * 128).hexdigest(), digest
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
