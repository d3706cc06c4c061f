"""Ctrl-C reaches Python while the library hashes. Not by timing: the file hashed is a FIFO
whose writer never stops until the call has returned or raised, so the call can only end by
the interrupt (a call that ignores it never ends: the child running it is then killed after a
generous limit, which fails the test rather than hanging it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_ctrl_c_interrupts_file_digest_of_a_stream_that_does_not_end(tmp_path):
    fifo = tmp_path / "fifo"
    script = textwrap.dedent(f"""
        import os, signal, threading, mtsum
        fifo = {str(fifo)!r}
        os.mkfifo(fifo)
        stop = threading.Event()
        def feed():
            # The open returns once file_digest has opened the FIFO: the hash is under way.
            with open(fifo, "wb", buffering=0) as f:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                while not stop.wait(0.01):
                    f.write(b"x" * 4096)
        t = threading.Thread(target=feed, daemon=True)
        t.start()
        try:
            mtsum.file_digest(fifo, "sha256", "plain")
            print("returned")
        except KeyboardInterrupt:
            print("interrupted")
        stop.set()
        t.join()
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "interrupted"
