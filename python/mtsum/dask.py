"""One huge file, or a dataset of many files, hashed on a Dask cluster.

``pip install mtsum[dask]`` (the core package needs no Dask). The files must be visible at the
same absolute path on this machine (the client, which lists and plans them) and on every
worker (which reads them): a shared or parallel file system.

- :func:`file_digest` cuts one file into ranges (:func:`mtsum.plan`), hashes each on a worker
  (:func:`mtsum.hash_range`, each worker reading its own range), and combines the partials
  here (:func:`mtsum.combine`): the same digest as :func:`mtsum.file_digest`.
- :func:`sum_files` spreads many files over the workers, small files in batches, large ones in
  ranges, and returns a pandas DataFrame in the order of the paths.
- :func:`compare` compares a tree with a bucket (or another tree), the names spread over the
  workers in batches, and returns a DataFrame of :class:`mtsum.Compared` rows.

Work is sized by bytes, :data:`PART_BYTES` per task: a 1 TB file is about 4 000 tasks. Every
task is pure (its result depends only on its arguments, which include the file's size and
modification time), so a task lost with a worker is run again elsewhere by Dask and cannot
change the result; a file modified meanwhile fails instead (``changed while being read``).

Paths follow the rules of :func:`mtsum.sum_files` (see ``help(mtsum._operands)``): relative
paths are relative to the client's current directory and made absolute for the workers, and
results name each file as it was given or found. Nothing here opens a file on the client: it
is sized with ``stat``, so a FIFO or a device never blocks the client or a worker (a FIFO
named is refused, one found by a glob or a walk left out).

An error met by a task comes back from it as data (the exception), and is raised here or
put in the file's row: the worker logs no "Compute Failed" for a file that could not be
hashed.

Without ``client=``, the current default client is used (``distributed.get_client()``); to use
an existing cluster::

    from distributed import Client
    client = Client("tcp://scheduler:8786")
    mtsum.dask.file_digest("/lustre/big.img", client=client)
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterable, Optional, Tuple, Union

import mtsum
from mtsum import LeafSize, StorageOptions, StrPath, _errors, _mtsum, _operands
from mtsum._operands import is_url

try:
    import distributed
    import pandas
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "mtsum.dask needs Dask and pandas: pip install 'mtsum[dask]'"
    ) from e

__all__ = ["PART_BYTES", "compare", "file_digest", "sum_files"]

PART_BYTES = 256 << 20
"""Bytes per task: large enough that a task's overhead on the scheduler (about a millisecond)
is small against hashing it (a fraction of a second), small enough that a 1 TB file is a few
thousand tasks and a few GiB keep every worker busy."""

BATCH_FILES = 1000
"""The most small files in one task of :func:`sum_files`."""

# (bytes, digest, cause): the cause of an error without the name, which the row's message
# gives as the path was given (the workers read it by its absolute path).
_Row = Tuple[Optional[int], Optional[str], Optional[str]]


def _client(client: Optional[distributed.Client]) -> distributed.Client:
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError as e:
        raise ValueError(
            "no Dask client: pass client=, or create one first with distributed.Client(...)"
        ) from e


def _threads(client: distributed.Client) -> int:
    """Worker threads in the cluster."""
    return max(1, sum(client.nthreads().values()))


def _hash_part(
    path: Union[str, bytes],
    start: int,
    end: int,
    size: int,
    mtime_ns: Optional[int],
    algorithm: Optional[str],
    layout: str,
    leaf_size: LeafSize,
    storage_options: StorageOptions = None,
) -> tuple[Optional[str], Optional[Exception]]:
    """A task: the partial of one range, or ``(None, exception)``: an error is returned, not
    raised, so that the worker does not log it as a failed task. ``mtime_ns`` is the file's
    modification time when it was planned: a file modified since fails, and the task's key
    differs from one of the file before. For a remote object it is the object's version,
    which each of its range GETs then asks for: the worker reads its ranges from the store."""
    try:
        if is_url(path):
            partial = mtsum.hash_range(
                path, start, end, algorithm, layout, leaf_size, size=size, threads=1,
                storage_options=storage_options, version=mtime_ns,
            )
            return partial, None
        if tuple(_mtsum._stat(path)) != (size, mtime_ns):
            raise _errors.OSError(None, "changed while being read", path)
        # One thread per task: the worker's threads run tasks side by side.
        partial = mtsum.hash_range(
            path, start, end, algorithm, layout, leaf_size, size=size, threads=1
        )
        return partial, None
    except (OSError, ValueError) as e:
        return None, e


def _absolute(path: Union[str, bytes]) -> Union[str, bytes]:
    """A local path made absolute (the workers may run elsewhere); a URL as it is."""
    return path if is_url(path) else os.path.abspath(path)


def file_digest(
    path: StrPath,
    client: Optional[distributed.Client] = None,
    parts: Optional[int] = None,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
    storage_options: StorageOptions = None,
) -> str:
    """The digest of one file hashed in ranges on the cluster's workers: the same digest as
    :func:`mtsum.file_digest` and the CLI.

    ``path`` may be an ``s3://`` or ``http(s)://`` URL: each worker then reads its own ranges
    from the store by range GETs, every one of the version the client saw (an object replaced
    meanwhile fails as "changed while being read"), reached with ``storage_options`` (see
    :mod:`mtsum`) or the workers' own AWS settings.

    ``parts``: how many ranges at most (default: one per :data:`PART_BYTES`, at least one per
    worker thread). Raises what :func:`mtsum.file_digest` raises (FileNotFoundError, ...,
    naming the path as given), and ValueError for bad parameters, before any task runs; a
    FIFO or character device raises ``io.UnsupportedOperation`` at once (its bytes cannot be
    read in ranges). An error met by a task is raised here. A plain digest other than BLAKE3
    cannot be split: one task.
    """
    client = _client(client)
    given = os.fspath(path)
    path = _absolute(given)
    try:
        size, mtime_ns = _mtsum._stat(path, storage_options)
    except (OSError, ValueError) as e:
        raise _errors.renamed(e, given) from None
    if parts is None:
        parts = max(_threads(client), math.ceil(size / PART_BYTES))
    ranges = mtsum.plan(size, parts, algorithm, layout, leaf_size)
    futures = [
        client.submit(
            _hash_part, path, start, end, size, mtime_ns, algorithm, layout, leaf_size,
            storage_options,
        )
        for start, end in ranges
    ]
    results = client.gather(futures)
    for _, error in results:
        if error is not None:
            raise _errors.renamed(error, given)
    return mtsum.combine(partial for partial, _ in results)


def _cause(e: Exception) -> str:
    """Why a file could not be hashed, without its name (see :data:`_Row`)."""
    return getattr(e, "strerror", None) or str(e)


def _sum_batch(
    paths: list[Union[str, bytes]],
    algorithm: Optional[str],
    layout: str,
    leaf_size: LeafSize,
    storage_options: StorageOptions = None,
) -> list[_Row]:
    """A task: ``(bytes, digest, cause)`` of each of a few small files, each sized on the
    client as a regular file (a FIFO in its place is refused, not waited for) or an object."""
    found = [True] * len(paths)
    return _mtsum.sum_files(paths, algorithm, layout, leaf_size, 1, storage_options, found)


def sum_files(
    paths_or_glob: Union[StrPath, Iterable[StrPath]],
    client: Optional[distributed.Client] = None,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
    storage_options: StorageOptions = None,
    *,
    recursive: bool = False,
    follow_symlinks: bool = False,
    allow_empty: bool = False,
) -> "pandas.DataFrame":
    """The digest of every file, hashed on the cluster's workers.

    ``paths_or_glob``: a list of paths (kept in their order, a path given twice once; never
    patterns), one path (str, bytes or path-like: that file, even where its name has glob
    characters), or a glob pattern such as ``"/data/**/*.nc"`` that is not an existing path
    (its files, in byte order of their names). A pattern whose fixed directories do not
    exist (``/lustre/datset/**``) raises FileNotFoundError, and so does one that matches no
    file, unless ``allow_empty=True``. With ``recursive=True``, directories stand for the
    files below them as for ``mtsum -r`` (``follow_symlinks=True``: ``-L``); without it, a
    directory named is a row with the error ``Is a directory``. The rules are those of
    :func:`mtsum.sum_files`, and so are the names: the two results join on ``path``.

    Files of up to :data:`PART_BYTES` go to tasks in batches (up to that many bytes or
    :data:`BATCH_FILES` files each), larger ones are cut into ranges like :func:`file_digest`.
    The client lists and stats the files (to size the tasks); the workers read them. A FIFO,
    socket or character device named is a row with its error at once (it cannot be read on
    another machine); found by a glob or a walk, it is left out.

    Returns a DataFrame with one row per file, in that order: ``path``, ``bytes`` (nullable
    int; the field of :class:`mtsum.FileSum`), ``digest`` and ``error`` (the line of
    ``FileSum.error``); a file hashed has no ``error``, one that failed no ``bytes`` and
    ``digest``. Missing values are ``pandas.NA`` in every column (``frame.error.isna()``).
    One bad file never raises.

    ``s3://BUCKET/PREFIX/`` hashes the objects below the prefix (listed by the client), and
    URLs may stand among the paths: the workers read them from the store, reached with
    ``storage_options`` (see :func:`file_digest`); a prefix that cannot be listed raises.
    """
    # Bad parameters raise before anything is listed or submitted.
    mtsum.plan(0, 1, algorithm, layout, leaf_size)
    client = _client(client)
    operands = _operands.expand(
        paths_or_glob, recursive, follow_symlinks, allow_empty, storage_options
    )
    names = [op.name for op in operands]
    paths = [_absolute(name) for name in names]

    rows: list[_Row] = [(None, None, None)] * len(paths)
    batches: list[tuple[list[int], distributed.Future[Any]]] = []
    ranged: list[tuple[int, int, list[distributed.Future[Any]]]] = []
    batch: list[int] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch, batch_bytes
        if batch:
            batch_paths = [paths[i] for i in batch]
            future = client.submit(
                _sum_batch, batch_paths, algorithm, layout, leaf_size, storage_options
            )
            batches.append((batch, future))
        batch, batch_bytes = [], 0

    for i, (op, path) in enumerate(zip(operands, paths)):
        if op.cause is not None:
            rows[i] = (None, None, op.cause)
            continue
        try:
            size, mtime_ns = _mtsum._stat(path, storage_options)
        except (OSError, ValueError) as e:
            rows[i] = (None, None, _cause(e))
            continue
        ranges = (
            mtsum.plan(size, math.ceil(size / PART_BYTES), algorithm, layout, leaf_size)
            if size > PART_BYTES
            else [(0, size)]
        )
        if len(ranges) > 1:
            futures = [
                client.submit(
                    _hash_part, path, s, e, size, mtime_ns, algorithm, layout, leaf_size,
                    storage_options,
                )
                for s, e in ranges
            ]
            ranged.append((i, size, futures))
            continue
        if batch and (batch_bytes + size > PART_BYTES or len(batch) >= BATCH_FILES):
            flush()
        batch.append(i)
        batch_bytes += size
    flush()

    for indices, future in batches:
        for i, row in zip(indices, future.result()):
            rows[i] = tuple(row)  # type: ignore[assignment]
    for i, size, futures in ranged:
        results = client.gather(futures)
        errors = [error for _, error in results if error is not None]
        if errors:
            rows[i] = (None, None, _cause(errors[0]))
        else:
            digest = mtsum.combine(partial for partial, _ in results)
            rows[i] = (size, digest, None)

    messages = [
        None if cause is None else _mtsum._message(name, cause)
        for name, (_, _, cause) in zip(names, rows)
    ]
    all_str = all(isinstance(name, str) for name in names)
    return pandas.DataFrame(
        {
            "path": pandas.array(names, dtype="string" if all_str else object),
            "bytes": pandas.array([row[0] for row in rows], dtype="Int64"),
            "digest": pandas.array([row[1] for row in rows], dtype="string"),
            "error": pandas.array(messages, dtype="string"),
        }
    )


BATCH_NAMES = 1000
"""The most names in one task of :func:`compare`."""


def _compare_batch(
    local: Union[str, bytes],
    remote: Union[str, bytes],
    names: list,
    algorithm: Optional[str],
    layout: Optional[str],
    leaf_size: LeafSize,
    storage_options: StorageOptions,
    size_only: bool,
    read_remote: Union[bool, str],
) -> Union[list[str], Exception]:
    """A task: the JSON lines of the records of a batch of ``(name, local, remote)``, or the
    exception that stopped it (returned, not raised: see the module's help)."""
    try:
        lines = _mtsum._compare(
            local, remote, algorithm, layout, leaf_size, 1, storage_options,
            False, size_only, read_remote, False, names,
        )
        return lines[:-1]
    except (OSError, ValueError) as e:
        return e


def compare(
    local: StrPath,
    remote: StrPath,
    client: Optional[distributed.Client] = None,
    algorithm: Optional[str] = None,
    layout: Optional[str] = None,
    leaf_size: LeafSize = None,
    storage_options: StorageOptions = None,
    *,
    one_way: bool = False,
    size_only: bool = False,
    read_remote: Union[bool, str] = False,
    follow_symlinks: bool = False,
) -> "pandas.DataFrame":
    """:func:`mtsum.compare` on the cluster: the tree at ``local`` (a directory) against the
    one at ``remote`` (an ``s3://BUCKET/PREFIX/`` or a directory), for trees of millions of
    names.

    The client lists the names only (a walk of the directory, the keys of the prefix: one
    request per 1 000 keys) and hands them to the workers in batches of
    :data:`BATCH_NAMES`; each worker asks the store what it reports of its objects (the
    ``HEAD`` requests, the dear part of a listing) and hashes its own local files. **The
    local side must be visible at the same absolute path on every worker** (a shared file
    system); a relative root is relative to the client's current directory. Objects are
    reached with ``storage_options`` from the workers, as by :func:`sum_files`.

    Returns a DataFrame with one row per name in bytewise order, the columns the fields of
    :class:`mtsum.Compared` (``path``, ``status``, ``method``, ``size``, ``remote_size``,
    ... ``why``, ``error``); missing values are ``pandas.NA``. Errors are data: a file or
    object that cannot be read, and every name of a batch whose task failed as a whole (a
    worker without credentials), is a row with ``status="unreadable"`` and its ``error``. A
    root that cannot be listed raises, as for :func:`mtsum.compare`.
    """
    client = _client(client)
    local, remote = _absolute(os.fspath(local)), _absolute(os.fspath(remote))
    listed = _mtsum._compare_names(local, remote, storage_options, follow_symlinks)
    if one_way:
        listed = [entry for entry in listed if entry[1]]
    batches = [listed[i:i + BATCH_NAMES] for i in range(0, len(listed), BATCH_NAMES)]
    futures = [
        client.submit(
            _compare_batch, local, remote, batch, algorithm, layout, leaf_size,
            storage_options, size_only, read_remote,
        )
        for batch in batches
    ]
    records: list[mtsum.Compared] = []
    for batch, future in zip(batches, futures):
        result = future.result()
        if isinstance(result, Exception):
            cause = _cause(result)
            records.extend(
                mtsum.Compared(os.fsdecode(name), "unreadable", error=cause)
                for name, _, _ in batch
            )
            continue
        records.extend(mtsum._compared(line) for line in result)
    columns = mtsum.Compared._fields
    numbers = {"size", "remote_size", "leaf_size", "part_sizes_tried"}
    return pandas.DataFrame(
        {
            column: pandas.array(
                [getattr(r, column) for r in records],
                dtype="Int64" if column in numbers
                else object if column.endswith("_bytes") else "string",
            )
            for column in columns
        }
    )
