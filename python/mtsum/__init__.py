"""Checksums of huge files as Merkle trees, hashed on every core.

The Python face of the Rust library ``mtsum``: the same digests as the ``mtsum`` command, for

- one file: :func:`file_digest` (every core of this machine);
- bytes that arrive in pieces: :class:`Hasher`, in :mod:`hashlib`'s shape;
- many files: :func:`sum_files`, one result per file, never raising for one bad file;
- one file hashed in ranges anywhere (other processes, other machines) and combined into the
  root of a local run: :func:`plan`, :func:`hash_range`, :func:`combine`;
- a local tree against a bucket (or another tree), name by name: :func:`compare`;
- one file or a dataset on a Dask cluster: :mod:`mtsum.dask` (``pip install mtsum[dask]``).

Every function takes the keywords of the CLI: ``algorithm`` (``-a``: md5, sha1, sha224,
sha256, sha384, sha512, blake3, xxh3, xxh128, and the CRCs crc32, crc32c, crc64nvme with the
plain and s3 layouts; all in :data:`ALGORITHMS`; by default the layout's own, as in the CLI:
md5 for s3, whose ETag it is, sha256 for the others), ``layout`` (``-t``: mtsum, plain, merkle,
rfc6962, and the values storage systems report: s3, glacier, dropbox, btv2; all in
:data:`LAYOUTS`) and ``leaf_size`` (``-l`` for merkle and rfc6962, ``--part-size`` for s3:
bytes as an int, or ``"4K"``, ``"1M"``; for s3, parts of different sizes are listed in order,
run-length, as ``--part-size`` lists them: ``"5M,7M,5M,1"``, ``"8Mx100,3M"``). Digests are returned as the CLI prints them:
lowercase hex, or as the storage system shows them (base64 for S3's checksums, ``-N`` after
a multipart value); :meth:`Hasher.value` gives the same, :meth:`Hasher.hexdigest` always hex.
A str ``s3://BUCKET/KEY`` or ``http(s)://HOST/PATH`` names a remote object, read by
concurrent range GETs (see ``storage_options`` below).

Remote objects are reached as the CLI reaches them (``AWS_*`` variables, ``~/.aws`` profiles:
keys, ``credential_process``, IAM Identity Center after ``aws sso login``;
``AWS_ENDPOINT_URL``), or with ``storage_options``, a dict of s3fs's keys: ``key``, ``secret``,
``token``, ``anon`` (unsigned requests, for public buckets), ``endpoint_url``, ``region``,
``profile``, ``client_kwargs`` (``endpoint_url``, ``region_name``, ``verify``: the path of a
CA bundle, the only CAs then trusted for ``https://``), and mtsum's own
``connections`` (range GETs at once, default 16) and ``addressing_style`` (``"path"`` or
``"virtual"``). A store's refusal is an ``OSError`` naming the URL: a missing object a
``FileNotFoundError``, a refused one a ``PermissionError``.

Paths: a path is a str, bytes (a name that is not UTF-8) or a path-like object of either; a
NUL in it is ``ValueError: embedded null byte``, as for ``open()``. Relative paths are relative
to the current directory (the client's, for :mod:`mtsum.dask`), and results name every file
as it was given, or as a glob pattern or a walk found it, never made absolute:
:func:`sum_files` and :func:`mtsum.dask.sum_files` report the same names for the same
arguments, so their results join on the path. Both take a list of paths, one path, or a glob
pattern, and walk directories with ``recursive=True`` as ``mtsum -r`` does; the rules (a
pattern that matches nothing, a missing path with glob characters, directories, FIFOs and
devices) are in ``help(mtsum._operands)`` and the README.

Errors: an input that cannot be hashed raises what ``open()`` raises for the same cause, with
``errno``, ``strerror`` and ``filename`` set: ``FileNotFoundError(2, 'No such file or
directory', 'missing.bin')``, ``PermissionError``, ``IsADirectoryError``. A cause without an
errno (``changed while being read``) is an ``OSError`` with ``strerror`` and ``filename`` too,
whose message is the command's line ``missing.bin: cause``. Bad parameters raise
``ValueError``, naming settings by their keywords (``leaf_size=``, ``layout="plain"``), as
does a file the layout has no digest for (an empty file with btv2, more than 10 000 parts with
s3; it has ``filename`` and ``strerror`` too). Every call that reads files releases the GIL.

Ctrl-C during :func:`file_digest`, :func:`sum_files` or :func:`hash_range` raises
KeyboardInterrupt at once (in the main thread, as for any signal) and stops the hash: the
workers give up before their next read and close the files (a FIFO's writer then gets
BrokenPipeError). A read that waits on a silent FIFO ends only when its writer writes or closes it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, NamedTuple, Optional, Union

from . import _mtsum, _operands
from ._mtsum import ALGORITHMS, LAYOUTS, Hasher

__all__ = [
    "ALGORITHMS",
    "LAYOUTS",
    "Compared",
    "FileSum",
    "Hasher",
    "combine",
    "compare",
    "file_digest",
    "hash_range",
    "plan",
    "sum_files",
]

# The Rust library's version, which the CLI's --version prints too.
__version__: str = _mtsum.__version__

StrPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
LeafSize = Union[int, str, None]
StorageOptions = Optional[dict[str, Any]]


def file_digest(
    path: StrPath,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
    threads: Optional[int] = None,
    storage_options: StorageOptions = None,
) -> str:
    """The digest of one file, as ``mtsum -a ALGORITHM -t LAYOUT -l LEAF_SIZE PATH`` prints it.

    The library's engine hashes it on ``threads`` workers (default: every available core). A
    relative path is relative to the current directory. A FIFO or character device is read
    as a stream, as the command reads it (waiting for a writer) (the "mtsum" layout, whose tree needs the
    length up front, holds at most 64 MiB of it: ``io.UnsupportedOperation`` beyond). A file
    whose size or modification time changes while it is read raises
    ``OSError("NAME: changed while being read")``.

    Ctrl-C raises KeyboardInterrupt at once and stops the read (see the module's help).
    An ``s3://`` or ``http(s)://`` URL is hashed from the store, reached with
    ``storage_options`` (see the module's help).
    """
    return _mtsum.file_digest(path, algorithm, layout, leaf_size, threads, storage_options)


class FileSum(NamedTuple):
    """The result of one file of :func:`sum_files`: its length and digest, or the error.

    The fields are the columns of :func:`mtsum.dask.sum_files`'s DataFrame: ``bytes`` (not
    ``size``, which a DataFrame has as an attribute of its own), ``digest`` and ``error``.
    """

    bytes: Optional[int]
    digest: Optional[str]
    error: Optional[str]

    @property
    def ok(self) -> bool:
        """Whether the file was hashed."""
        return self.error is None


FileSum.bytes.__doc__ = "The number of bytes hashed, or None if the file could not be hashed."
FileSum.digest.__doc__ = (
    "The digest as the command prints it (lowercase hex, or base64 for S3's checksums), or "
    "None if the file could not be hashed."
)
FileSum.error.__doc__ = (
    "None, or the command's error line without 'mtsum: ': 'missing.bin: No such file or "
    "directory'."
)


def sum_files(
    paths: Union[StrPath, Iterable[StrPath]],
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
    threads: Optional[int] = None,
    storage_options: StorageOptions = None,
    *,
    recursive: bool = False,
    follow_symlinks: bool = False,
    allow_empty: bool = False,
) -> dict[Union[str, bytes], FileSum]:
    """The digest of every file, hashed in parallel on one pool of ``threads`` workers.

    ``paths``: a list of paths (never patterns), one path, or a glob pattern such as
    ``"data/**/*.nc"`` that is not an existing path; the same rules as
    :func:`mtsum.dask.sum_files`. A pattern whose fixed directories do not exist, or that
    matches no file, raises FileNotFoundError, unless ``allow_empty=True`` for the latter.
    With ``recursive=True`` a directory stands for the files below it, in the order and by
    the names of ``mtsum -r`` (symbolic links below it followed with ``follow_symlinks=True``,
    as ``-L``; FIFOs, sockets and devices below it left out); without it, a directory's error
    is ``"NAME: Is a directory"``.

    Returns a dict from each path (as given, or as found; a path given twice is hashed once)
    to its :class:`FileSum`, in order. One bad file never raises: its FileSum has ``error``
    set and the others are hashed. A FIFO named in ``paths`` is read as a stream, as the
    command reads it. Bad parameters raise ValueError before anything is read. Ctrl-C raises
    KeyboardInterrupt at once and stops the hash of every file (see the module's help).
    """
    _mtsum.plan(0, 1, algorithm, layout, leaf_size)  # bad parameters before any walk
    operands = _operands.expand(paths, recursive, follow_symlinks, allow_empty, storage_options)
    todo = [op for op in operands if op.cause is None]
    rows = iter(
        _mtsum.sum_files(
            [op.name for op in todo],
            algorithm,
            layout,
            leaf_size,
            threads,
            storage_options,
            [op.found for op in todo],
        )
    )
    result = {}
    for op in operands:
        length, digest, cause = (None, None, op.cause) if op.cause is not None else next(rows)
        error = None if cause is None else _mtsum._message(op.name, cause)
        result[op.name] = FileSum(length, digest, error)
    return result


def plan(
    size: int,
    parts: int,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
) -> list[tuple[int, int]]:
    """At most ``parts`` byte ranges ``(start, end)`` (end exclusive) covering a file of
    ``size`` bytes in order, of about equal length, that :func:`hash_range` can hash apart.

    Ranges start and end on the boundaries of the layout's independent jobs (a leaf of the
    "mtsum" layout, at most 128 MiB; 4 MiB subtrees of "merkle" and "rfc6962" and of plain
    BLAKE3), so there may be fewer than ``parts``. A plain digest of any other algorithm is
    one stream that cannot be split: one range. An empty file is the one range ``(0, 0)``.
    """
    return _mtsum.plan(size, parts, algorithm, layout, leaf_size)


def hash_range(
    path: StrPath,
    start: int,
    end: int,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
    size: Optional[int] = None,
    threads: Optional[int] = None,
    storage_options: StorageOptions = None,
    version: Optional[int] = None,
) -> str:
    """Hashes bytes ``start`` to ``end`` of a file, a range of :func:`plan`, into a *partial*.

    A partial is one line of text (without a line end) that holds the digests of the range's
    subtrees and where they belong, the line ``mtsum --range`` prints::

        MTSUM-PARTIAL/2 TAG SIZE START-END DIGESTS

    (``TAG`` as in ``mtsum --tag``: ``MTSUM-SHA256``, ``RFC6962-SHA256-1M``; ``DIGESTS`` the
    digests of the range's nodes as one run of hex, ``-`` for none: for ``merkle`` and
    ``rfc6962`` the few largest aligned subtrees the range holds, for ``mtsum`` one per leaf). Pass ``size``, the size the plan was made
    for, to fail with ``OSError("NAME: changed while being read")`` when the file has another
    one. ``threads`` (default: every core) hash the range's jobs side by side. Ctrl-C raises
    KeyboardInterrupt at once and stops the read (see the module's help). For a remote object,
    ``version`` (the second value of ``mtsum._mtsum._stat(url)``, taken when the ranges were
    planned) holds every range to that version of the object: one replaced since fails with
    ``OSError("URL: changed while being read")``, so ranges read by many workers never mix
    two versions.
    """
    return _mtsum.hash_range(
        path, start, end, algorithm, layout, leaf_size, size, threads, storage_options, version
    )


def combine(partials: Iterable[str]) -> str:
    """The root digest from the partials of :func:`hash_range`, given in any order: the same
    digest as :func:`file_digest` of the whole file.

    Raises ValueError, naming the bytes, when ranges are missing or overlap, when partials come
    from another layout, algorithm or file size, or when a line is not a partial. The same
    partial given twice counts once. Lines may have white space around them (a line end).
    """
    return _mtsum.combine(partials)


class Compared(NamedTuple):
    """What :func:`compare` says of one name: the fields of ``mtsum --compare --json``'s
    objects, ``None`` where the JSON leaves one out.

    ``path`` is the name below both roots; ``status`` one of ``ok``, ``differs``,
    ``only-local``, ``only-remote``, ``unverified`` (nothing the store reports vouches for
    the bytes: ``why`` says what) and ``unreadable`` (``error`` says why, ``error_path``
    which side); ``method`` how a name on both sides was decided: ``size``, ``stored`` (the
    local file against a value the store reports, no remote byte read) or ``read`` (both
    sides' bytes). ``expected`` is the remote side's value, ``digest`` the local one's, with
    ``layout``, ``leaf_size`` and ``algorithm`` saying what they are (``part_sizes``, each
    part's size, for an S3 object whose parts differ in size).
    """

    path: str
    status: str
    method: Optional[str] = None
    size: Optional[int] = None
    remote_size: Optional[int] = None
    layout: Optional[str] = None
    leaf_size: Optional[int] = None
    part_sizes: Optional[list] = None
    algorithm: Optional[str] = None
    expected: Optional[str] = None
    digest: Optional[str] = None
    part_sizes_tried: Optional[int] = None
    why: Optional[str] = None
    error: Optional[str] = None
    error_path: Optional[str] = None
    path_bytes: Optional[list] = None
    error_path_bytes: Optional[list] = None

    @property
    def ok(self) -> bool:
        """Whether both sides hold the same bytes."""
        return self.status == "ok"


def _compared(line: str) -> Compared:
    """The record of one JSON line of ``--compare --json``."""
    return Compared(**json.loads(line))


def compare(
    local: StrPath,
    remote: StrPath,
    algorithm: Optional[str] = None,
    layout: Optional[str] = None,
    leaf_size: LeafSize = None,
    threads: Optional[int] = None,
    storage_options: StorageOptions = None,
    *,
    one_way: bool = False,
    size_only: bool = False,
    read_remote: Union[bool, str] = False,
    follow_symlinks: bool = False,
) -> list[Compared]:
    """Compares the tree at ``local`` (a directory) with the one at ``remote`` (an
    ``s3://BUCKET/PREFIX/`` or a directory) as ``mtsum --compare`` does: one
    :class:`Compared` per name, in bytewise order of the names.

    Where the store reports a value that vouches for an object (a full-object checksum, the
    ETag with the part size the store tells), only the local file is read. An object no value
    vouches for is ``unverified`` unless ``read_remote=True`` (then its bytes are read and
    hashed like the local file's) or ``read_remote="all"`` (every object's bytes, trusting
    no stored value). Two directories are hashed alike: plain BLAKE3 unless ``layout`` or
    ``algorithm`` say otherwise. ``one_way=True`` leaves out the names only ``remote`` has;
    ``size_only=True`` takes equal sizes for equal bytes.

    A file or object that cannot be read is a record with ``status="unreadable"``, never an
    exception; a root that cannot be listed raises as ``open()`` would for it
    (FileNotFoundError, PermissionError, NotADirectoryError). Objects are reached with
    ``storage_options`` (see the module's help).
    """
    lines = _mtsum._compare(
        local, remote, algorithm, layout, leaf_size, threads, storage_options,
        one_way, size_only, read_remote, follow_symlinks,
    )
    return [_compared(line) for line in lines[:-1]]
