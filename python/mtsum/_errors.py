"""Exceptions about a file whose cause has no ``errno``.

An input that cannot be hashed raises what ``open()`` raises for the same cause, with
``errno``, ``strerror`` and ``filename`` set. Some causes are mtsum's own and have no errno
(``changed while being read``, a loop of symbolic links, a stream where ranges are needed);
their exceptions are the subclasses below, with ``strerror`` and ``filename`` set all the same,
whose message is the command's error line ``NAME: cause`` (CPython would print
``[Errno None] cause: 'NAME'``). ``except OSError`` and ``except io.UnsupportedOperation``
catch them as usual.
"""

from __future__ import annotations

import builtins
import io
from typing import Union

from . import _mtsum

__all__ = ["OSError", "UnsupportedOperation", "renamed"]


class _Named:
    """The message ``NAME: cause``, as the command prints it (without ``mtsum:``)."""

    filename: Union[str, bytes]
    strerror: str

    def __str__(self) -> str:
        return _mtsum._message(self.filename, self.strerror)


class OSError(_Named, builtins.OSError):
    """An input that could not be hashed, for a cause without an errno."""


class UnsupportedOperation(_Named, io.UnsupportedOperation):
    """A stream where the operation needs a file: a range of a FIFO, a stream longer than the
    "mtsum" layout holds."""


def renamed(e: BaseException, name: Union[str, bytes]) -> BaseException:
    """``e``, an exception about a file, naming ``name`` instead: the path as the caller gave
    it, where the file was read by another name (``mtsum.dask`` reads absolute paths)."""
    filename, strerror = getattr(e, "filename", None), getattr(e, "strerror", None)
    if filename is None or strerror is None or filename == name:
        return e
    if isinstance(e, builtins.OSError):
        return type(e)(e.errno, strerror, name)
    other = type(e)(_mtsum._message(name, strerror))
    other.filename, other.strerror = name, strerror  # type: ignore[attr-defined]
    return other
