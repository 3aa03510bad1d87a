# SPDX-License-Identifier: Apache-2.0
"""The bfshell scripts run in switchd's embedded Python, which is 3.8 or 3.9 in many SDEs: what they
import of `ffs` must not evaluate 3.10-only typing at run time (`int | None`, `dict[str, int]`
outside annotations). Checked statically on any Python, and by running the scripts under a real
3.8/3.9 interpreter where one is installed."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from pythons import old_python

SCRIPTS = ROOT / "bfrt-scripts"
PKG = ROOT / "controlplane"
BUILTIN_GENERICS = {"dict", "list", "tuple", "set", "frozenset", "type"}
TYPE_NAMES = BUILTIN_GENERICS | {"int", "float", "str", "bytes", "bool", "complex", "Fraction", "Decimal", "Path"}


def imported_ffs_modules() -> list[Path]:
    """The ffs modules the scripts import, transitively (by their import statements)."""
    todo = [p for p in SCRIPTS.glob("*.py")]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name == "_common":
                    todo.append(SCRIPTS / "_common.py")
                if not name.startswith("ffs"):
                    continue
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # a package's __init__ runs too
                    base = PKG.joinpath(*parts[:i])
                    for cand in (base / "__init__.py", base.with_suffix(".py")):
                        if cand.is_file():
                            todo.append(cand)
    return sorted(seen)


def runtime_typing_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """`X | Y` with a type operand or `dict[...]`-style subscripts, outside annotations (which
    `from __future__ import annotations` leaves unevaluated)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            skip.update(id(n) for n in ast.walk(node.annotation))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            skip.update(id(n) for n in ast.walk(node.returns))
        elif isinstance(node, ast.AnnAssign):
            skip.update(id(n) for n in ast.walk(node.annotation))

    def typeish(n: ast.AST) -> bool:
        return (
            (isinstance(n, ast.Constant) and n.value is None)
            or (isinstance(n, ast.Name) and n.id in TYPE_NAMES)
            or (isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) and (typeish(n.left) or typeish(n.right)))
        )

    bad = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and (typeish(node.left) or typeish(node.right))
        ):
            bad.append((node.lineno, "X | Y union"))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in BUILTIN_GENERICS:
            bad.append((node.lineno, f"{node.value.id}[...]"))
    return bad


def test_what_the_scripts_import_is_python38_safe():
    mods = imported_ffs_modules()
    core = PKG / "ffs" / "core"
    assert core / "labels.py" in mods and core / "topology.py" in mods  # the walk found the chain
    problems = []
    for path in mods:
        src = path.read_text()
        tree = ast.parse(src, feature_version=(3, 8))  # no 3.9+ syntax
        has_annotations = any(
            isinstance(n, (ast.AnnAssign, ast.arg)) and getattr(n, "annotation", None) is not None
            for n in ast.walk(tree)
        ) or any(isinstance(n, ast.FunctionDef) and n.returns for n in ast.walk(tree))
        future = any(
            isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
            for n in tree.body
        )
        if has_annotations and not future and path.parent != SCRIPTS:
            problems.append(f"{path.relative_to(ROOT)}: annotations without `from __future__ import annotations`")
        problems += [
            f"{path.relative_to(ROOT)}:{line}: {what} evaluated at run time" for line, what in runtime_typing_uses(tree)
        ]
    assert problems == []


def test_the_checker_catches_runtime_unions():
    assert runtime_typing_uses(
        ast.parse("Real = float | int\nx: int | None = 1\ndef f(a: dict[str, int]) -> int | None: ...\n")
    ) == [(1, "X | Y union")]
    assert runtime_typing_uses(ast.parse("M = dict[str, float]\nflags = A | B\n")) == [(1, "dict[...]")]


RUNNER = """
import json, runpy, sys
class Recorder:
    def __init__(self, path="bfrt", calls=None):
        self._path, self._calls = path, calls if calls is not None else []
    def __getattr__(self, name):
        return Recorder(self._path + "." + name, self._calls)
    def __call__(self, *args, **kw):
        self._calls.append(self._path)
        return Recorder(self._path + "()", self._calls)
sys.path.insert(0, sys.argv[1])
bfrt = Recorder()
runpy.run_path(sys.argv[2], init_globals={"bfrt": bfrt})
print(json.dumps(bfrt._calls))
"""


@pytest.mark.skipif(
    old_python() is None, reason="no Python 3.8 or 3.9 (on PATH or under pyenv) to run the bfshell scripts with"
)
@pytest.mark.parametrize("script", ["setup_node.py", "load_matrix.py", "show_state.py"])
def test_the_scripts_run_on_python38_or_39_as_on_this_python(tmp_path, script):
    exe = old_python()
    deps = tmp_path / "deps"  # PyYAML's pure-Python modules: the old interpreter may not have it
    import yaml

    shutil.copytree(Path(yaml.__file__).parent, deps / "yaml", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = {
        "FFS_ROOT": str(ROOT),
        "FFS_TOPOLOGY": str(ROOT / "topologies" / "dumbbell.yaml"),
        "FFS_NODE": "s1",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(SCRIPTS),
        "FFS_MATRIX": str(tmp_path / "m.yaml"),
    }
    (tmp_path / "m.yaml").write_text("p3: {p1: 4Mbps, p2: 16Mbps}\n")
    calls = {}
    for py in (exe, sys.executable):
        out = subprocess.run(
            [py, "-c", RUNNER, str(deps), str(SCRIPTS / script)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        calls[py] = json.loads(out.stdout.splitlines()[-1])  # the scripts print a summary first
    assert len(calls[exe]) > 5 and calls[exe] == calls[sys.executable]
