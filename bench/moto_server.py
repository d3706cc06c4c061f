"""moto's S3 API server on loopback for the bench scripts that talk to a store."""
import contextlib
import socket
import subprocess
import sys
import time


@contextlib.contextmanager
def moto_server(log_path):
    """Runs `python -m moto.server` on a free port of 127.0.0.1, its output in `log_path`,
    for as long as the block runs; yields the endpoint once the port accepts connections."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()
