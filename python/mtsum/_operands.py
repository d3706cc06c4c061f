"""The one rule for the paths that :func:`mtsum.sum_files` and :func:`mtsum.dask.sum_files`
take, and the names their results report.

- An iterable gives its paths in its order, each once. They are never patterns: a list is
  how to name a file whose name has glob characters.
- One path (a str, bytes or path-like) is that path if it exists or has no glob characters
  (``*``, ``?``, ``[``); otherwise it is a glob pattern (``**`` matches any depth). Its
  matches come in byte order of their names. A pattern whose fixed part (the directories
  before the first glob character) does not exist raises FileNotFoundError naming that part,
  and one that matches no file raises FileNotFoundError naming the pattern unless
  ``allow_empty=True``: a typo is never an empty result. So a missing ``run[1].nc`` raises
  rather than vanishing. A glob's matches are taken as ``mtsum -r`` takes what it finds:
  regular files; directories only with ``recursive``; FIFOs, sockets and devices left out.
- With ``recursive``, a directory is replaced by the files below it in the order of
  ``mtsum -r`` (``find DIR -type f | LC_ALL=C sort``), named as ``mtsum -r`` names them (the
  directory as given joined with the names below it). Symbolic links below it are left out
  unless ``follow_symlinks`` (``-L``); FIFOs, sockets and devices below it are left out; a
  directory that cannot be read is a result with its error. Without it, a directory is a
  result with the error ``Is a directory``, as for the command.
- Results name each file as given or found, never made absolute: relative paths are relative
  to the current directory (of the client, for ``mtsum.dask``), and both functions report the
  same names for the same arguments.

A path named on its own (not found by a glob or a walk) is hashed whatever it is, as the
command hashes it: a FIFO named to :func:`mtsum.sum_files` is read as a stream.

A URL (``s3://``, ``http(s)://``) is never a pattern, nor walked: it is the object it names,
except one path ``s3://BUCKET/PREFIX/`` (ending with ``/``, or a bare bucket), which stands for
the objects below the prefix, listed by key.
"""

from __future__ import annotations

import errno
import glob
import os
import stat
from typing import Iterable, NamedTuple, Optional, Union

from . import _mtsum

Name = Union[str, bytes]

PATH_TYPES = (str, bytes, os.PathLike)


class Operand(NamedTuple):
    """One file to hash, or a directory of a walk that failed."""

    name: Name
    """The path as given or found: the name results report."""
    found: bool
    """Found as a regular file (by a glob or a walk): it must still be one when it is read,
    and a FIFO in its place is refused instead of waited for."""
    cause: Optional[str]
    """Why a directory could not be walked (then there is nothing to hash), or None."""


def is_url(path: Name) -> bool:
    """Whether ``path`` names a remote object (``s3://``, ``http://``, ``https://``)."""
    return isinstance(path, str) and path.lower().startswith(("s3://", "http://", "https://"))


def expand(
    paths_or_glob: Union["os.PathLike[str]", "os.PathLike[bytes]", Name, Iterable],
    recursive: bool = False,
    follow_symlinks: bool = False,
    allow_empty: bool = False,
    storage_options: Optional[dict] = None,
) -> list[Operand]:
    """The operands that the paths, the pattern or the path stand for (see the module's
    help), each once, in order."""
    if isinstance(paths_or_glob, PATH_TYPES):
        given = os.fspath(paths_or_glob)
        if is_url(given):
            named = [(url, False) for url in _objects(given, storage_options)]
            if not named and not allow_empty:
                raise FileNotFoundError(errno.ENOENT, "no object below this prefix", given)
        elif os.path.lexists(given) or not glob.has_magic(given):
            named = [(given, False)]
        else:
            named = [(match, True) for match in _matches(given, recursive, allow_empty)]
    else:
        named = [(os.fspath(p), False) for p in paths_or_glob]
    operands: dict[Name, Operand] = {}
    for name, found in named:
        walked = recursive and not is_url(name)
        for operand in _walk(name, follow_symlinks) if walked else [Operand(name, found, None)]:
            operand = operand._replace(found=operand.found or found)
            operands.setdefault(operand.name, operand)
    return list(operands.values())


def _objects(url: str, storage_options: Optional[dict]) -> list[str]:
    """The objects below ``s3://BUCKET/PREFIX/`` (ending with ``/``, or a bare bucket), by
    key; any other URL is itself."""
    if url.lower().startswith("s3://") and (url.endswith("/") or "/" not in url[5:]):
        return _mtsum._list(url, storage_options)
    return [url]


def _walk(name: Name, follow_symlinks: bool) -> list[Operand]:
    """The files below ``name`` (itself if it is not a directory) by the library's walk."""
    decode = os.fsdecode if isinstance(name, str) else bytes
    return [
        Operand(decode(path), found, cause)
        for path, found, cause in _mtsum._walk([name], follow_symlinks)
    ]


def _matches(pattern: Name, recursive: bool, allow_empty: bool) -> list[Name]:
    """The paths that ``pattern`` matches and that are hashed (see the module's help)."""
    prefix = _fixed_prefix(pattern)
    if prefix and not os.path.lexists(prefix):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), prefix)
    kept = []
    for match in sorted(glob.glob(pattern, recursive=True), key=os.fsencode):
        try:
            mode = os.stat(match).st_mode
        except OSError:
            kept.append(match)  # a broken link: hashing it says why
            continue
        if stat.S_ISREG(mode) or (recursive and stat.S_ISDIR(mode)):
            kept.append(match)
    if not kept and not allow_empty:
        raise FileNotFoundError(
            errno.ENOENT, "no such file, and no file matches it as a glob pattern", pattern
        )
    return kept


def _fixed_prefix(pattern: Name) -> Name:
    """The directories of ``pattern`` before its first component with glob characters:
    ``/data`` of ``/data/**/*.nc``, empty for ``*.nc``."""
    sep = os.sep if isinstance(pattern, str) else os.sep.encode()
    parts = pattern.split(sep)  # type: ignore[arg-type]
    fixed = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        fixed.append(part)
    prefix = sep.join(fixed)  # type: ignore[arg-type]
    return sep if not prefix and fixed else prefix
