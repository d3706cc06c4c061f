#!/usr/bin/env python3
"""The storage systems' digests restated from their published definitions, independently of
mtsum's Rust code, for tests/storage.rs.

    storage_oracle.py LAYOUT ALGORITHM PART_SIZE FILE...

prints one line per FILE: the value as the system shows it, or "none" where the layout has
no value for the file. LAYOUT is s3, glacier, dropbox, btv2, btv2-libtorrent (the pieces
root as libtorrent computes it) or plain (the CRCs); PART_SIZE matters only for s3.

CRC32 comes from zlib; CRC32C and CRC64NVME from crcmod where it is installed, else from a
table built here from the catalogue's parameters (the same CRCs, much slower).
"""

import base64
import hashlib
import os
import sys
import zlib

# name: (width in bits, reflected polynomial) of the reflected CRCs with all-ones init/xorout.
CRC_PARAMETERS = {
    "crc32c": (32, 0x82F63B78),
    "crc64nvme": (64, 0x9A6C9329AC4BC9B5),
}
CRCMOD_POLYNOMIALS = {"crc32c": 0x11EDC6F41, "crc64nvme": 0x1AD93D23594C93659}


def table_crc(width, poly):
    mask = (1 << width) - 1
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)

    def crc(data):
        value = mask
        for b in data:
            value = table[(value ^ b) & 0xFF] ^ (value >> 8)
        return value ^ mask

    return crc


def hash_function(name):
    """bytes -> digest bytes (big-endian for the CRCs)."""
    if name in ("md5", "sha1", "sha256"):
        return lambda data: hashlib.new(name, data).digest()
    if name == "crc32":
        return lambda data: zlib.crc32(data).to_bytes(4, "big")
    width, poly = CRC_PARAMETERS[name]
    try:
        import crcmod

        crc = crcmod.mkCrcFun(CRCMOD_POLYNOMIALS[name], initCrc=0, rev=True, xorOut=(1 << width) - 1)
    except ImportError:
        crc = table_crc(width, poly)
    return lambda data: crc(data).to_bytes(width // 8, "big")


def chunks(data, size):
    return [data[i : i + size] for i in range(0, len(data), size)]


def s3(h, part, data, encode):
    """As the AWS CLI uploads (threshold inclusive): a single upload below one part, the plain
    digest; else, from one part on, H(H(p1) || ... || H(pN))-N."""
    if len(data) < part:
        return encode(h(data))
    parts = chunks(data, part)
    return encode(h(b"".join(h(p) for p in parts))) + "-%d" % len(parts)


def glacier(data):
    """Amazon's tree hash: pairs hashed level by level, an odd last digest carried up."""
    sha = lambda b: hashlib.sha256(b).digest()
    level = [sha(c) for c in chunks(data, 1 << 20)]
    if not level:
        return sha(b"").hex()
    while len(level) > 1:
        level = [sha(level[i] + level[i + 1]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0].hex()


def dropbox(data):
    sha = lambda b: hashlib.sha256(b).digest()
    return sha(b"".join(sha(c) for c in chunks(data, 4 << 20))).hex()


def btv2(data):
    """BEP 52: 16 KiB blocks, leaf count padded to a power of two with zero digests."""
    sha = lambda b: hashlib.sha256(b).digest()
    level = [sha(c) for c in chunks(data, 16 << 10)]
    if not level:
        return "none"
    width = 1
    while width < len(level):
        width *= 2
    level += [bytes(32)] * (width - len(level))
    while len(level) > 1:
        level = [sha(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return level[0].hex()


def btv2_libtorrent(path):
    import libtorrent as lt

    if os.path.getsize(path) == 0:
        return "none"  # libtorrent refuses a torrent of empty files
    fs = lt.file_storage()
    lt.add_files(fs, path)
    torrent = lt.create_torrent(fs, 0, lt.create_torrent.v2_only)
    lt.set_piece_hashes(torrent, os.path.dirname(path))
    tree = torrent.generate()[b"info"][b"file tree"]
    return tree[os.path.basename(path).encode()][b""][b"pieces root"].hex()


def main():
    layout, alg, part = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for path in sys.argv[4:]:
        if layout == "btv2-libtorrent":
            print(btv2_libtorrent(path))
            continue
        with open(path, "rb") as f:
            data = f.read()
        if layout == "s3":
            encode = (lambda d: d.hex()) if alg == "md5" else (lambda d: base64.b64encode(d).decode())
            print(s3(hash_function(alg), part, data, encode))
        elif layout == "plain":
            print(hash_function(alg)(data).hex())
        else:
            print({"glacier": glacier, "dropbox": dropbox, "btv2": btv2}[layout](data))


if __name__ == "__main__":
    main()
