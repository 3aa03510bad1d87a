# SPDX-License-Identifier: Apache-2.0
"""Function length: no function in controlplane/, tests/, ptf-tests/tests/ or bench/ runs over
80 lines (def to last line, decorators aside), except those named below with the reason. A long
function is split into named helpers; ruff's C90 (pyproject.toml) holds their branching to 15.

An exemption names a function by file and qualified name (Class.method, outer.<locals>.inner)
and must still be over the limit: one that was split is struck from the list, not left behind.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

ROOTS = ("controlplane", "tests", "ptf-tests/tests", "bench")
MAX_LINES = 80

# (file, qualified name) -> why it stays long
EXEMPT: dict[tuple[str, str], str] = {}


def long_functions(root: Path, roots: tuple[str, ...] = ROOTS, limit: int = MAX_LINES) -> dict[tuple[str, str], int]:
    """(file relative to `root`, qualified name) -> lines, for every function over `limit` lines."""
    found: dict[tuple[str, str], int] = {}
    for top in roots:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            _walk(ast.parse(path.read_text(), rel), "", rel, limit, found)
    return found


def _walk(node: ast.AST, prefix: str, rel: str, limit: int, found: dict[tuple[str, str], int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            lines = child.end_lineno - child.lineno + 1
            if lines > limit:
                found[(rel, name)] = lines
            _walk(child, f"{name}.<locals>.", rel, limit, found)
        elif isinstance(child, ast.ClassDef):
            _walk(child, f"{prefix}{child.name}.", rel, limit, found)
        else:
            _walk(child, prefix, rel, limit, found)


def problems(found: dict[tuple[str, str], int], exempt: dict[tuple[str, str], str]) -> list[str]:
    out = [
        f"{rel}: {name} is {lines} lines (over {MAX_LINES}): split it into named helpers"
        for (rel, name), lines in sorted(found.items())
        if (rel, name) not in exempt
    ]
    out += [
        f"{rel}: {name} is exempt but no longer over {MAX_LINES} lines: strike it from EXEMPT"
        for rel, name in sorted(exempt)
        if (rel, name) not in found
    ]
    return out


def test_no_function_is_over_80_lines_but_the_exempt():
    bad = problems(long_functions(ROOT), EXEMPT)
    assert not bad, "\n".join(bad)


def test_every_exemption_gives_its_reason():
    assert all(len(why.split()) >= 5 for why in EXEMPT.values()), EXEMPT


def test_the_check_fails_on_a_long_function_and_a_stale_exemption(tmp_path):
    src = tmp_path / "bench"
    src.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))  # def line + 79 = 80: at the limit
    (src / "shape.py").write_text(
        f"def fits():\n{body}\n"
        f"class C:\n    def method(self):\n{body.replace('    ', '        ')}        x = 0\n\n"
        f"def outer():\n    def inner():\n{body.replace('    ', '        ')}        x = 0\n    return inner\n"
    )
    found = long_functions(tmp_path, ("bench",))
    assert found == {
        ("bench/shape.py", "C.method"): 81,
        ("bench/shape.py", "outer"): 83,
        ("bench/shape.py", "outer.<locals>.inner"): 81,
    }
    bad = problems(found, {("bench/shape.py", "C.method"): "a reason", ("bench/shape.py", "fits"): "a reason"})
    assert bad == [
        "bench/shape.py: outer is 83 lines (over 80): split it into named helpers",
        "bench/shape.py: outer.<locals>.inner is 81 lines (over 80): split it into named helpers",
        "bench/shape.py: fits is exempt but no longer over 80 lines: strike it from EXEMPT",
    ]
