# SPDX-License-Identifier: Apache-2.0
"""The package's three parts and its layers (docs/control-plane.md, "Code"). The product (ffs.core,
ffs.driver, ffs.agent, ffs.cli: the agent, ffsctl, the drivers and the values and pure rules beneath
them) imports nothing of the executable specification (`ffs.switch`) or the laboratory (`ffs.lab`);
and imports point down the layers: the values and pure rules at the bottom, then the drivers, the
software switch and the endpoints, then the agent, then the laboratory and the SDE runs, then the
command lines. Each layer is a folder: no module sits loose in the package, so every module's layer
is that of its folder. Every import counts, at the top of a module or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PKG = ROOT / "controlplane" / "ffs"

# a module's layer is that of its longest listed prefix, each a folder of the package
LAYERS = {
    "ffs.core": 0,  # constants, units, entries, labels, p4names, tables, tau, allocator, matrix, program, ...
    "ffs.driver": 1,
    "ffs.switch": 1,
    "ffs.lab.endpoint": 1,
    "ffs.agent": 2,
    "ffs.lab": 3,
    "ffs.cli": 4,
    "ffs.lab.cli": 4,
}
# the package itself (controlplane/ffs/__init__.py), which holds the version and nothing else
ROOT = "ffs"
# within a layer, who may not import whom
FORBIDDEN = [
    ("ffs.driver", "ffs.switch"),
    ("ffs.switch", "ffs.lab.endpoint"),
    ("ffs.driver", "ffs.lab.endpoint"),
    ("ffs.lab.endpoint", "ffs.switch"),
    ("ffs.lab.endpoint", "ffs.driver"),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(name: str) -> tuple[str, int]:
    if name in (ROOT, f"{ROOT}.__version__"):
        return ROOT, 0
    prefixes = [p for p in LAYERS if name == p or name.startswith(p + ".")]
    assert prefixes, f"{name} is in no layer's folder"
    prefix = max(prefixes, key=len)
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


def test_every_module_is_in_a_layers_folder():
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"modules outside the layers' folders: {loose}"
    folders = sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted({name.split(".")[1] for name in LAYERS})
    root = ast.parse((PKG / "__init__.py").read_text()).body
    assigned = [t.id for n in root if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    assert assigned == ["__version__"] and all(
        isinstance(n, ast.Assign) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in root
    ), "controlplane/ffs/__init__.py holds the version and a docstring, nothing else"


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_imports_point_down(path):
    me = module_name(path)
    mine, my_layer = layer(me)
    wrong = []
    for line, target in imports(path):
        theirs, their_layer = layer(target)
        if their_layer > my_layer or any(me.startswith(a) and target.startswith(b) for a, b in FORBIDDEN):
            wrong.append(
                f"line {line}: {me} ({mine}, layer {my_layer}) imports {target} ({theirs}, layer {their_layer})"
            )
    assert not wrong, "\n".join(wrong)


# the product's entry points: what ffs-agent and ffsctl import
PRODUCT_ROOTS = [
    "ffs.agent",
    "ffs.driver",
    "ffs.cli.agent",
    "ffs.cli.ctl",
    "ffs.cli.fleet",
    "ffs.cli.remote",
    "ffs.cli.common",
]
NOT_PRODUCT = ("ffs.switch", "ffs.lab")
BY_NAME = {module_name(p): p for p in MODULES}


def resolve(target: str) -> str | None:
    """The module an import names: `from ffs.x import y` is ffs.x.y if that is a module, else ffs.x."""
    while target and target not in BY_NAME:
        target = target.rpartition(".")[0]
    return target or None


def test_the_product_imports_nothing_of_the_switch_or_the_lab():
    roots = [m for m in BY_NAME if any(m == r or m.startswith(r + ".") for r in PRODUCT_ROOTS)]
    assert "ffs.agent.core" in roots and "ffs.driver.bfrt" in roots
    seen: dict[str, str] = {m: m for m in roots}  # module -> the product module that first pulled it in
    todo = list(roots)
    while todo:
        me = todo.pop()
        for _, target in imports(BY_NAME[me]):
            mod = resolve(target)
            if mod and mod not in seen:
                seen[mod] = me
                todo.append(mod)
    wrong = sorted(
        f"{m} (imported by {seen[m]})" for m in seen if any(m == p or m.startswith(p + ".") for p in NOT_PRODUCT)
    )
    assert not wrong, "the product reaches: " + ", ".join(wrong)


def test_the_lab_commands_entry_imports_nothing_of_the_package():
    """ffs-sim, ffs-switch and ffs-transfer are installed beside the agent, on a switch's Python too:
    their entry names the lab's commands only as strings, for importlib, so that they fail in one
    line where the lab is not installed."""
    assert imports(BY_NAME["ffs.lab.cli.entry"]) == []
