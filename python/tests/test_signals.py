"""Ctrl-C reaches Python while the library hashes, and stops the hash. Not by timing: the
input is a FIFO whose writer never stops, or a sparse file far too large to read within the
limit, so the call can only end by the interrupt and the reading only by the cancel. A call
or a read that ignores them never ends: the child running it is then killed after a generous
limit (WATCHDOG), which fails the test rather than hanging it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Far longer than any of these children takes: only one that ignores the interrupt reaches it.
WATCHDOG = 120


# A process started in the background by a shell without job control (`cmd &` in a script,
# `nohup`) inherits SIGINT ignored, and Python then installs no handler for it: the child's
# Ctrl-C would vanish and the test would fail on the watchdog. The child installs Python's own.
RESTORE_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def run_child(script: str, cwd) -> list[str]:
    """The lines that `script` prints, run by a child Python in `cwd` that raises
    KeyboardInterrupt on SIGINT however it was started."""
    out = subprocess.run([sys.executable, "-c", RESTORE_SIGINT + textwrap.dedent(script)],
                         capture_output=True, text=True, cwd=cwd, timeout=WATCHDOG)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.parametrize("call", [
    "mtsum.file_digest(fifo, 'sha256', 'plain')",
    "mtsum.sum_files([fifo], 'sha256', 'plain')",
])
def test_ctrl_c_interrupts_the_hash_of_a_stream_that_does_not_end_and_closes_it(tmp_path, call):
    lines = run_child(f"""
        import os, signal, threading, mtsum
        fifo = "fifo"
        os.mkfifo(fifo)
        ended = []
        def feed():
            # The open returns once the library has opened the FIFO: the hash is under way.
            with open(fifo, "wb", buffering=0) as f:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                # Until the reader hangs up: BrokenPipeError (Python ignores SIGPIPE).
                try:
                    while True:
                        f.write(b"x" * 65536)
                except OSError as e:
                    ended.append(type(e).__name__)
        t = threading.Thread(target=feed, daemon=True)
        t.start()
        try:
            {call}
            print("returned")
        except KeyboardInterrupt:
            print("interrupted")
        t.join()
        print(*ended)
    """, tmp_path)
    assert lines == ["interrupted", "BrokenPipeError"]


def test_ctrl_c_interrupts_hash_range_and_the_file_is_closed(tmp_path):
    # 4 TiB of holes: minutes of hashing on any machine, so the file is closed in time only
    # if the read stops.
    lines = run_child("""
        import os, signal, threading, time, mtsum
        size = 4 << 40
        with open("big", "wb") as f:
            f.truncate(size)
        target = os.path.realpath("big")
        def opened():
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if os.readlink(f"/proc/self/fd/{fd}") == target:
                        return True
                except OSError:
                    pass
            return False
        def interrupt():
            while not opened():
                time.sleep(0.001)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            # The size given: the library opens the file once, to hash it.
            mtsum.hash_range("big", 0, size, "sha256", "plain", size=size)
            print("returned")
        except KeyboardInterrupt:
            print("interrupted")
        while opened():
            time.sleep(0.01)
        print("closed")
    """, tmp_path)
    assert lines == ["interrupted", "closed"]
