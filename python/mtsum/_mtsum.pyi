"""Type stubs of the Rust extension; the documented API is in ``mtsum/__init__.py``."""

import os
from typing import Any, Iterable, Optional, Union, final

from typing_extensions import Buffer

_Path = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]
_Leaf = Union[int, str, None]
_Options = Optional[dict[str, Any]]

# The library's lists of names, as -a and -t take them.
ALGORITHMS: list[str]
LAYOUTS: list[str]
__version__: str

def file_digest(
    path: _Path,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: _Leaf = None,
    threads: Optional[int] = None,
    storage_options: _Options = None,
) -> str: ...
def sum_files(
    paths: Iterable[_Path],
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: _Leaf = None,
    threads: Optional[int] = None,
    storage_options: _Options = None,
    found: Optional[list[bool]] = None,
) -> list[tuple[Optional[int], Optional[str], Optional[str]]]: ...
def plan(
    size: int,
    parts: int,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: _Leaf = None,
) -> list[tuple[int, int]]: ...
def hash_range(
    path: _Path,
    start: int,
    end: int,
    algorithm: Optional[str] = None,
    layout: str = "mtsum",
    leaf_size: _Leaf = None,
    size: Optional[int] = None,
    threads: Optional[int] = None,
    storage_options: _Options = None,
    version: Optional[int] = None,
) -> str: ...
def combine(partials: Iterable[str]) -> str: ...
def _stat(path: _Path, storage_options: _Options = None) -> tuple[int, int]: ...
def _list(url: str, storage_options: _Options = None) -> list[str]: ...
def _message(path: _Path, cause: str) -> str: ...
def _walk(
    paths: Iterable[_Path], follow_symlinks: bool
) -> list[tuple[bytes, bool, Optional[str]]]: ...
def _compare(
    local: _Path,
    remote: _Path,
    algorithm: Optional[str] = None,
    layout: Optional[str] = None,
    leaf_size: _Leaf = None,
    threads: Optional[int] = None,
    storage_options: _Options = None,
    one_way: bool = False,
    size_only: bool = False,
    read_remote: Union[bool, str, None] = None,
    follow_symlinks: bool = False,
    names: Optional[list[tuple[bytes, bool, bool]]] = None,
) -> list[str]: ...
def _compare_names(
    local: _Path, remote: _Path, storage_options: _Options = None, follow_symlinks: bool = False
) -> list[tuple[bytes, bool, bool]]: ...

# Built by __new__ and not subclassable at run time (a PyO3 class).
@final
class Hasher:
    """A hasher in hashlib's shape; see ``help(mtsum.Hasher)``."""

    def __new__(
        cls, algorithm: Optional[str] = None, layout: str = "mtsum", leaf_size: _Leaf = None
    ) -> "Hasher": ...
    def update(self, data: Buffer, /) -> None: ...
    def digest(self) -> bytes: ...
    def hexdigest(self) -> str: ...
    def value(self) -> str: ...
    def copy(self) -> "Hasher": ...
    @property
    def name(self) -> str: ...
    @property
    def digest_size(self) -> int: ...
    @property
    def block_size(self) -> int: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def layout(self) -> str: ...
    @property
    def leaf_size(self) -> Optional[int]: ...
