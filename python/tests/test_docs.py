"""The stubs and the README say what the package is: the stubs' signatures are the run time's,
and the files the README names exist."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path

import pytest

import mtsum
from mtsum import _mtsum

PACKAGE = Path(mtsum.__file__).resolve().parent
PYTHON = Path(__file__).resolve().parents[1]


def stub() -> ast.Module:
    return ast.parse((PACKAGE / "_mtsum.pyi").read_text())


def parameters(node: ast.FunctionDef) -> list[tuple[str, object]]:
    """Names and defaults (as literals) of a stub's function, without self or cls."""
    args = node.args.posonlyargs + node.args.args
    defaults = [None] * (len(args) - len(node.args.defaults)) + [
        ast.literal_eval(d) for d in node.args.defaults
    ]
    pairs = [(a.arg, d) for a, d in zip(args, defaults)]
    return [p for p in pairs if p[0] not in ("self", "cls")]


def runtime_parameters(function) -> list[tuple[str, object]]:
    params = inspect.signature(function).parameters.values()
    return [(p.name, None if p.default is p.empty else p.default) for p in params]


def test_the_stubs_functions_take_the_run_times_parameters_and_defaults():
    functions = [n for n in stub().body if isinstance(n, ast.FunctionDef)]
    assert functions
    for node in functions:
        assert parameters(node) == runtime_parameters(getattr(_mtsum, node.name)), node.name


def stub_hasher_methods() -> dict[str, ast.FunctionDef]:
    (hasher,) = [n for n in stub().body if isinstance(n, ast.ClassDef) and n.name == "Hasher"]
    assert [ast.unparse(d) for d in hasher.decorator_list] == ["final"]
    return {n.name: n for n in hasher.body if isinstance(n, ast.FunctionDef)}


def test_the_stub_declares_hasher_final_and_built_by_new_as_at_run_time():
    methods = stub_hasher_methods()
    assert "__init__" not in methods
    public = {name for name in dir(mtsum.Hasher) if not name.startswith("_")}
    assert public == {name for name in methods if not name.startswith("_")}


@pytest.mark.skipif(
    sys.version_info < (3, 10),
    reason="Python 3.9 reads no signature of a class of the stable ABI (PyO3 gives one from 3.10)",
)
def test_the_stubs_hasher_takes_the_run_times_parameters_and_defaults():
    methods = stub_hasher_methods()
    assert parameters(methods["__new__"]) == runtime_parameters(mtsum.Hasher)


def test_the_files_the_readme_names_exist():
    readme = (PYTHON / "README.md").read_text()
    named = re.findall(r"`((?:\.\./)?src/[\w/]+\.rs)`", readme)
    assert named
    for name in named:
        assert (PYTHON / name).exists() or (PYTHON.parent / name).exists(), name
