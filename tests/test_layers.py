"""Imports point down the layers of docs/control-plane.md ("Code"): the values and pure rules at the
bottom, then the drivers and the software switch, then the agent, then the laboratory, the SDE runs
and the command lines. Every import counts, at the top of a module or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "controlplane" / "ffs"

# a module's layer is that of its longest listed prefix
LAYERS = {
    "ffs": 0,  # constants, units, entries, labels, p4names, ports, frames, tables, tau, shares, topology, allocator, ...
    "ffs.driver": 1,
    "ffs.switch": 1,
    "ffs.endpoint": 1,
    "ffs.agent": 2,
    "ffs.netns": 3,
    "ffs.sde": 3,
    "ffs.lab": 3,
    "ffs.differential": 3,
    "ffs.demo_tofino": 3,
    "ffs.cli": 4,
}
# within a layer, who may not import whom
FORBIDDEN = [("ffs.driver", "ffs.switch"), ("ffs.switch", "ffs.endpoint"), ("ffs.driver", "ffs.endpoint"),
             ("ffs.endpoint", "ffs.switch"), ("ffs.endpoint", "ffs.driver")]


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(name: str) -> tuple[str, int]:
    prefix = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return prefix, LAYERS[prefix]


def imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("ffs"):
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("ffs")]
    return out


MODULES = sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_imports_point_down(path):
    me = module_name(path)
    mine, my_layer = layer(me)
    wrong = []
    for line, target in imports(path):
        theirs, their_layer = layer(target)
        if their_layer > my_layer or any(me.startswith(a) and target.startswith(b) for a, b in FORBIDDEN):
            wrong.append(f"line {line}: {me} ({mine}, layer {my_layer}) imports {target} ({theirs}, layer {their_layer})")
    assert not wrong, "\n".join(wrong)
