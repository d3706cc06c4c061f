"""One huge file, or a dataset of many files, hashed on a Dask cluster.

``pip install mtsum[dask]`` (the core package needs no Dask). The files must be visible at the
same absolute path on this machine (the client, which lists and plans them) and on every
worker (which reads them): a shared or parallel file system.

- :func:`file_digest` cuts one file into ranges (:func:`mtsum.plan`), hashes each on a worker
  (:func:`mtsum.hash_range`, each worker reading its own range), and combines the partials
  here (:func:`mtsum.combine`): the same digest as :func:`mtsum.file_digest`.
- :func:`sum_files` spreads many files over the workers, small files in batches, large ones in
  ranges, and returns a pandas DataFrame in the order of the paths.

Work is sized by bytes, :data:`PART_BYTES` per task: a 1 TB file is about 4 000 tasks. Every
task is pure (its result depends only on its arguments, which include the file's size and
modification time), so a task lost with a worker is run again elsewhere by Dask and cannot
change the result; a file modified meanwhile fails instead (``changed while being read``).

Without ``client=``, the current default client is used (``distributed.get_client()``); to use
an existing cluster::

    from distributed import Client
    client = Client("tcp://scheduler:8786")
    mtsum.dask.file_digest("/lustre/big.img", client=client)
"""

from __future__ import annotations

import glob as _glob
import math
import os
from typing import Any, Iterable, Optional, Tuple, Union

import mtsum
from mtsum import LeafSize, StorageOptions, StrPath, _mtsum

try:
    import distributed
    import pandas
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "mtsum.dask needs Dask and pandas: pip install 'mtsum[dask]'"
    ) from e

__all__ = ["PART_BYTES", "file_digest", "sum_files"]

PART_BYTES = 256 << 20
"""Bytes per task: large enough that a task's overhead on the scheduler (about a millisecond)
is small against hashing it (a fraction of a second), small enough that a 1 TB file is a few
thousand tasks and a few GiB keep every worker busy."""

BATCH_FILES = 1000
"""The most small files in one task of :func:`sum_files`."""

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
) -> tuple[Optional[str], Optional[str]]:
    """A task: the partial of one range, or ``(None, message)``. ``mtime_ns`` is the file's
    modification time when it was planned: a file modified since fails, and the task's key
    differs from one of the file before. For a remote object it is the object's version,
    which each of its range GETs then asks for: the worker reads its ranges from the store."""
    try:
        if _is_url(path):
            partial = mtsum.hash_range(
                path, start, end, algorithm, layout, leaf_size, size=size, threads=1,
                storage_options=storage_options, version=mtime_ns,
            )
            return partial, None
        if tuple(_mtsum._stat(path)) != (size, mtime_ns):
            raise OSError(_mtsum._message(path, "changed while being read"))
        # One thread per task: the worker's threads run tasks side by side.
        partial = mtsum.hash_range(
            path, start, end, algorithm, layout, leaf_size, size=size, threads=1
        )
        return partial, None
    except OSError as e:
        return None, str(e)


def _raise(message: str) -> None:
    raise OSError(message)


def _is_url(path: Union[str, bytes]) -> bool:
    """Whether ``path`` names a remote object (``s3://``, ``http://``, ``https://``)."""
    return isinstance(path, str) and path.lower().startswith(("s3://", "http://", "https://"))


def _absolute(path: Union[str, bytes]) -> Union[str, bytes]:
    """A local path made absolute (the workers may run elsewhere); a URL as it is."""
    return path if _is_url(path) else os.path.abspath(path)


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
    worker thread). Raises what :func:`mtsum.file_digest` raises (FileNotFoundError, ...), and
    ValueError for bad parameters, before any task runs; an error met by a task is raised here
    as OSError with its message. A plain digest other than BLAKE3 cannot be split: one task.
    """
    client = _client(client)
    path = _absolute(os.fspath(path))
    size, mtime_ns = _mtsum._stat(path, storage_options)
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
            _raise(error)
    return mtsum.combine(partial for partial, _ in results)


def _sum_batch(
    paths: list[Union[str, bytes]],
    algorithm: Optional[str],
    layout: str,
    leaf_size: LeafSize,
    storage_options: StorageOptions = None,
) -> list[mtsum.FileSum]:
    """A task: ``(size, digest, error)`` of each of a few small files."""
    sums = mtsum.sum_files(paths, algorithm, layout, leaf_size, 1, storage_options)
    return list(sums.values())


def _expand(
    paths_or_glob: Union[StrPath, Iterable[StrPath]], storage_options: StorageOptions
) -> list[Union[str, bytes]]:
    """The paths: one path that exists (``run[1].nc`` is a file, not a pattern) or has no
    glob characters is itself; another is a glob pattern, whose matches that are not
    directories come in byte order of their names (``**`` matches any depth); an iterable
    gives its paths in their order. An ``s3://BUCKET/PREFIX/`` URL (ending with ``/``) is
    the objects below it, by key; any other URL is itself."""
    if isinstance(paths_or_glob, mtsum._PATH_TYPES):
        pattern = os.fspath(paths_or_glob)
        if _is_url(pattern):
            if pattern.lower().startswith("s3://") and (
                pattern.endswith("/") or "/" not in pattern[5:]
            ):
                return _mtsum._list(pattern, storage_options)
            return [pattern]
        if os.path.lexists(pattern) or not _glob.has_magic(pattern):
            return [pattern]
        matches = _glob.glob(pattern, recursive=True)
        return sorted((m for m in matches if not os.path.isdir(m)), key=os.fsencode)
    return mtsum._paths(paths_or_glob)


def sum_files(
    paths_or_glob: Union[StrPath, Iterable[StrPath]],
    client: Optional[distributed.Client] = None,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: LeafSize = None,
    storage_options: StorageOptions = None,
) -> "pandas.DataFrame":
    """The digest of every file, hashed on the cluster's workers.

    ``paths_or_glob``: a list of paths (kept in their order, a path given twice once), one
    path (str, bytes or path-like: that file, as in :func:`mtsum.sum_files`, even where its
    name has glob characters), or a glob pattern such as ``"/data/**/*.nc"`` that is no
    existing path (its files, in byte order of their names).
    Files of up to :data:`PART_BYTES` go to tasks in batches (up to that many bytes or
    :data:`BATCH_FILES` files each), larger ones are cut into ranges like :func:`file_digest`.

    The client lists and stats the files (to size the tasks); the workers read them.
    Returns a DataFrame with one row per path, in that order: ``path``, ``size`` (nullable
    int), ``digest`` (hex) and ``error`` (the message :func:`mtsum.file_digest` would raise);
    a file hashed has no ``error``, one that failed no ``size`` and ``digest`` (missing values
    are NA: ``frame.error.isna()``). One bad file never raises.

    ``s3://BUCKET/PREFIX/`` hashes the objects below the prefix (listed by the client), and
    URLs may stand among the paths: the workers read them from the store, reached with
    ``storage_options`` (see :func:`file_digest`); a prefix that cannot be listed raises.
    """
    client = _client(client)
    paths = [_absolute(p) for p in _expand(paths_or_glob, storage_options)]
    # Validates the parameters once, before anything is submitted.
    mtsum.plan(0, 1, algorithm, layout, leaf_size)

    rows: list[_Row] = [(None, None, None)] * len(paths)
    batches: list[tuple[list[int], distributed.Future[Any]]] = []
    ranged: list[tuple[int, int, list[distributed.Future[Any]]]] = []
    batch: list[int] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch, batch_bytes
        if batch:
            names = [paths[i] for i in batch]
            future = client.submit(
                _sum_batch, names, algorithm, layout, leaf_size, storage_options
            )
            batches.append((batch, future))
        batch, batch_bytes = [], 0

    for i, path in enumerate(paths):
        try:
            size, mtime_ns = _mtsum._stat(path, storage_options)
        except OSError:
            size, mtime_ns = 0, None  # the batch reports the error with its message
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
            rows[i] = row
    for i, size, futures in ranged:
        results = client.gather(futures)
        errors = [error for _, error in results if error is not None]
        if errors:
            rows[i] = (None, None, errors[0])
        else:
            digest = mtsum.combine(partial for partial, _ in results)
            rows[i] = (size, digest, None)

    frame = pandas.DataFrame(
        [(path, *row) for path, row in zip(paths, rows)],
        columns=["path", "size", "digest", "error"],
    )
    frame["size"] = frame["size"].astype("Int64")
    return frame
