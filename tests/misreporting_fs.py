"""A FUSE file system whose files report another size than the bytes they hold, as some
network and FUSE file systems do (tests/misreported_size.rs mounts it).

    misreporting_fs.py MOUNTPOINT NAME:REPORTED:HELD ...

Each NAME is a read-only file that `stat` says holds REPORTED bytes and whose reads give HELD
bytes: byte i is (i * 7 + i // 251) % 256. The files are opened with direct_io, so that the
kernel passes every read to us instead of stopping at the reported size (what a file system
of dynamic content does, and why `cat` reads such a file to its end). Runs in the foreground
until unmounted or sent SIGTERM.
"""

import errno
import stat
import sys

try:  # Debian's python3-fusepy names the module fusepy, PyPI's fusepy names it fuse.
    from fusepy import FUSE, FuseOSError, Operations
except ImportError:
    from fuse import FUSE, FuseOSError, Operations

MTIME = 1_700_000_000


def pattern(n):
    return bytes((i * 7 + i // 251) % 256 for i in range(n))


class Misreporting(Operations):
    def __init__(self, specs):
        self.files = {}
        for spec in specs:
            name, reported, held = spec.split(":")
            self.files["/" + name] = (int(reported), pattern(int(held)))

    def getattr(self, path, fh=None):
        times = dict(st_mtime=MTIME, st_ctime=MTIME, st_atime=MTIME)
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, **times)
        if path not in self.files:
            raise FuseOSError(errno.ENOENT)
        reported, _ = self.files[path]
        return dict(st_mode=stat.S_IFREG | 0o444, st_nlink=1, st_size=reported, **times)

    def readdir(self, path, fh):
        return [".", ".."] + [name[1:] for name in self.files]

    def open(self, path, flags):
        if path not in self.files:
            raise FuseOSError(errno.ENOENT)
        return 0

    def read(self, path, size, offset, fh):
        return self.files[path][1][offset:offset + size]


if __name__ == "__main__":
    FUSE(Misreporting(sys.argv[2:]), sys.argv[1], foreground=True, direct_io=True, ro=True)
