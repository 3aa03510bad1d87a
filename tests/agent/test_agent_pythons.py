# SPDX-License-Identifier: Apache-2.0
"""ffs-agent and ffsctl as a switch runs them: on its own Python (3.8 on an Ubuntu 20.04 SDE, 3.10,
3.11, 3.12, 3.13), installed from the wheel with their own dependencies and nothing of the laboratory;
Python 3.7 is refused by pip with a line that names the Python the wheel needs.

Statically, on this Python: the modules the two commands import (their closure) leave out the
software switch and the laboratory, import no third-party package but the core dependencies of
pyproject.toml, and use nothing that Python 3.8 cannot run. Then, for each interpreter found (on
PATH or under pyenv's root), the wheel of the ordinary build (`pip wheel .`) goes into a new virtual environment of that
interpreter, and its ffs-agent drives a software switch of this environment over the switch's gRPC
service while its ffsctl pushes a matrix."""

from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from pythons import find_python

from .test_bfrt_scripts_py38 import runtime_typing_uses
from .test_ffsctl_fleet import fake_ssh

PKG = ROOT / "controlplane"
DUMBBELL = ROOT / "topologies" / "dumbbell.yaml"
ENTRY_POINTS = ("ffs.cli.agent", "ffs.cli.ctl")
# the software switch (3.11+: dataclass slots) and everything around the product
NOT_IN_CLOSURE = (
    "ffs.switch",
    "ffs.lab",
    "ffs.lab.endpoint",
    "ffs.lab.sde",
    "ffs.lab.netns",
    "ffs.lab.differential",
    "ffs.lab.demo_tofino",
    "ffs.lab.scapy_ffs",
)
IMPORT_TO_DIST = {
    "click": "click",
    "grpc": "grpcio",
    "numpy": "numpy",
    "yaml": "pyyaml",
    "rich": "rich",
    "prometheus_client": "prometheus-client",
}
# imported only for --target tofino, beside the SDE's client: the [tofino] extra
TOFINO_IMPORTS = {"google": "protobuf"}
# what 3.9+ added that a 3.8 interpreter fails on only when the line runs
NEWER_ATTRIBUTES = {
    "removeprefix",
    "removesuffix",
    "is_relative_to",
    "with_stem",
    "hardlink_to",
    "bit_count",
    "pairwise",
    "randbytes",
    "waitstatus_to_exitcode",
    "to_thread",
    "unparse",
    "add_note",
}
NEWER_MODULES = {"zoneinfo", "graphlib", "tomllib"}
NEWER_TYPING = {
    "Annotated",
    "ParamSpec",
    "TypeAlias",
    "Concatenate",
    "TypeGuard",
    "Self",
    "Never",
    "LiteralString",
    "Required",
    "NotRequired",
    "Unpack",
    "override",
    "TypeVarTuple",
    "assert_never",
    "reveal_type",
}
NEWER_KEYWORDS = {"zip": {"strict"}, "dataclass": {"slots", "kw_only", "match_args"}}
PYTHONS = ("3.8", "3.10", "3.11", "3.12", "3.13")


def module_file(name: str) -> Path | None:
    base = PKG.joinpath(*name.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def closure(roots=ENTRY_POINTS) -> tuple[dict[str, Path], set[str]]:
    """The ffs modules the roots import, transitively (every import statement counts, also inside a
    function), and the top-level names of everything else they import."""
    seen: dict[str, Path] = {}
    other: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        path = module_file(name)
        if name in seen or path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # a package's __init__ runs too
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                if n == "ffs" or n.startswith("ffs."):
                    todo.append(n)
                else:
                    other.add(n.split(".")[0])
    return seen, other


def newer_than_38(tree: ast.AST) -> list[tuple[int, str]]:
    """What a 3.8 interpreter cannot run, beyond syntax and run-time typing (runtime_typing_uses)."""
    type_checking: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            type_checking.update(id(n) for b in node.body for n in ast.walk(b))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in NEWER_ATTRIBUTES:
            bad.append((node.lineno, f".{node.attr}"))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "cache"
            and isinstance(node.value, ast.Name)
            and node.value.id == "functools"
            or isinstance(node, ast.ImportFrom)
            and node.module == "functools"
            and any(a.name == "cache" for a in node.names)
        ):
            bad.append((node.lineno, "functools.cache"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            bad += [(node.lineno, f"import {m}") for m in mods if m.split(".")[0] in NEWER_MODULES]
            if isinstance(node, ast.ImportFrom) and node.module == "typing" and id(node) not in type_checking:
                bad += [(node.lineno, f"typing.{a.name}") for a in node.names if a.name in NEWER_TYPING]
        elif isinstance(node, ast.Call):
            fn = (
                node.func.id
                if isinstance(node.func, ast.Name)
                else node.func.attr
                if isinstance(node.func, ast.Attribute)
                else ""
            )
            bad += [(node.lineno, f"{fn}({k.arg}=...)") for k in node.keywords if k.arg in NEWER_KEYWORDS.get(fn, ())]
        elif isinstance(node, ast.Match):
            bad.append((node.lineno, "match statement"))
        elif (
            isinstance(node, ast.With)
            and len(node.items) > 1
            and node.items[0].context_expr.col_offset > node.col_offset + 5
        ):
            bad.append((node.lineno, "parenthesized context managers"))  # `with (a, b):`, 3.10 syntax
    return bad


def test_the_closure_is_the_agent_and_ffsctl_without_the_laboratory():
    mods, _ = closure()
    assert {"ffs.agent.core", "ffs.agent.service", "ffs.driver.bfrt", "ffs.driver.model", "ffs.core.allocator"} <= set(
        mods
    )
    lab = sorted(m for m in mods if any(m == x or m.startswith(x + ".") for x in NOT_IN_CLOSURE))
    assert lab == [], f"ffs-agent/ffsctl import the laboratory or the software switch, which need 3.11 and [lab]: {lab}"


def test_the_closure_imports_exactly_the_core_dependencies():
    _, other = closure()
    third_party = {m for m in other if m not in sys.stdlib_module_names and m != "__future__"} - TOFINO_IMPORTS.keys()
    unknown = third_party - IMPORT_TO_DIST.keys()
    assert not unknown, f"the agent's closure imports {sorted(unknown)}: add it to the core dependencies (and here)"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = lambda reqs: {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in reqs}  # noqa: E731
    assert names(project["dependencies"]) == {IMPORT_TO_DIST[m] for m in third_party}, (
        "pyproject.toml's dependencies are not what ffs-agent and ffsctl import"
    )
    assert set(TOFINO_IMPORTS.values()) <= names(project["optional-dependencies"]["tofino"])


def test_the_closure_runs_on_python38():
    mods, _ = closure()
    problems = []
    for _name, path in sorted(mods.items()):
        src = path.read_text()
        tree = ast.parse(src, feature_version=(3, 8))  # no 3.9+ syntax
        where = path.relative_to(ROOT)
        has_annotations = any(
            getattr(n, "annotation", None) is not None or getattr(n, "returns", None) is not None
            for n in ast.walk(tree)
        )
        future = any(
            isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
            for n in tree.body
        )
        if has_annotations and not future:
            problems.append(f"{where}: annotations without `from __future__ import annotations`")
        problems += [f"{where}:{line}: {what} evaluated at run time" for line, what in runtime_typing_uses(tree)]
        problems += [f"{where}:{line}: {what} (Python 3.9+)" for line, what in newer_than_38(tree)]
    assert problems == []


def test_the_checker_catches_what_38_lacks():
    src = (
        "import functools, tomllib\nfrom typing import TypeAlias\nx = s.removeprefix('a')\n"
        "for a, b in zip(p, q, strict=True): pass\n@dataclass(slots=True)\nclass C: pass\n"
        "match x:\n    case 1: pass\n@functools.cache\ndef f(): pass\n"
        "with (open(a) as f,\n      open(b) as g):\n    pass\nwith open(a) as f, open(b) as g:\n    pass\n"
    )
    found = sorted(newer_than_38(ast.parse(src)))
    assert found == [
        (1, "import tomllib"),
        (2, "typing.TypeAlias"),
        (3, ".removeprefix"),
        (4, "zip(strict=...)"),
        (5, "dataclass(slots=...)"),
        (7, "match statement"),
        (9, "functools.cache"),
        (11, "parenthesized context managers"),
    ], found
    assert (
        newer_than_38(ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typing import Self\n"))
        == []
    )


# --- the wheel under each interpreter --------------------------------------------------------------


def test_python37_is_refused_with_the_python_the_wheel_needs(wheel, tmp_path):
    exe = find_python("3.7")
    if exe is None:
        pytest.skip("no python3.7 on PATH or under pyenv's root")
    subprocess.run([exe, "-m", "venv", str(tmp_path / "py37")], check=True, timeout=120)
    r = subprocess.run(
        [str(tmp_path / "py37" / "bin" / "pip"), "install", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
    )
    # before any dependency (their refusal would name prometheus-client or numpy, not Python)
    assert r.returncode != 0 and r.stderr.strip() == f"ERROR: {wheel.name} is not a supported wheel on this platform."
    assert "py38" in wheel.name


def clean_env(**extra: str) -> dict[str, str]:
    """What a shell on a fresh machine has: nothing of this environment's Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_", "SDE"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def venvs(wheel, tmp_path_factory) -> dict[str, Path | str]:
    """A new virtual environment per interpreter with the wheel installed (in parallel: pip mostly
    waits), or the reason there is none."""
    base = tmp_path_factory.mktemp("venvs")

    def make(version: str) -> Path | str:
        exe = find_python(version)
        if exe is None:
            return f"no python{version} on PATH or under pyenv's root"
        venv = base / f"py{version}"
        r = subprocess.run([exe, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return f"python{version} -m venv failed: {r.stderr.strip()[-300:]}"
        # this machine's pins where they apply (the main environment's Python); elsewhere what pip resolves
        pins = ["-c", str(ROOT / "constraints" / "dev.txt")] if version == "{}.{}".format(*sys.version_info[:2]) else []
        r = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                *pins,
                str(wheel),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=clean_env(),
            cwd=base,
        )
        assert r.returncode == 0, f"pip install of the wheel into python{version}: {r.stderr[-2000:]}"
        return venv

    with concurrent.futures.ThreadPoolExecutor(len(PYTHONS)) as pool:
        return dict(zip(PYTHONS, pool.map(make, PYTHONS), strict=False))


def run(
    venv: Path, cmd: str, *args: str, env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / cmd), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )


@pytest.mark.parametrize("version", PYTHONS)
def test_the_wheel_runs_the_agent_and_ffsctl(version, venvs, tmp_path):
    from ffs.core.frames import ipv4_frame
    from ffs.switch.pipeline import Pipeline
    from ffs.switch.runtime import SwitchControl
    from ffs.switch.server import serve

    venv = venvs[version]
    if isinstance(venv, str):
        pytest.skip(venv)
    env = clean_env(FFS_RUN_DIR=str(tmp_path / "run"))
    _check_the_wheel_alone(venv, version, env, tmp_path)

    switch = f"unix:{tmp_path}/switch.sock"
    control = SwitchControl(Pipeline(1))
    server = serve(control, switch)  # the software switch, of this environment
    stop = threading.Event()

    def traffic() -> None:  # h1 and h2 toward h3, about 4 Mb/s each: measured demands for the plan
        frames = [(1, ipv4_frame("10.0.1.1", "10.0.3.1", 500)), (2, ipv4_frame("10.0.2.1", "10.0.3.1", 500))]
        while not stop.wait(0.001):
            for port, frame in frames:
                with control.lock:
                    control.pipeline.process(frame, port, time.monotonic_ns())

    sender = threading.Thread(target=traffic, daemon=True)
    sender.start()
    agent = None
    try:
        sock = str(tmp_path / "agent.sock")
        agent = _start_agent(venv, switch, sock, env, tmp_path)
        end = time.monotonic() + 60
        while run(venv, "ffsctl", f"--socket={sock}", "status", env=env, cwd=tmp_path).returncode != 0:
            assert agent.poll() is None and time.monotonic() < end, (tmp_path / "agent.log").read_text()[-2000:]
            time.sleep(0.2)
        (tmp_path / "m.yaml").write_text("p3: {p1: 12Mbps, p2: 8Mbps}\np1: {p3: 20Mbps}\np2: {p3: 20Mbps}\n")
        _check_diff_plan_and_load(venv, sock, switch, env, tmp_path, end)
        _check_status_log_and_ssh(venv, sock, env, tmp_path)
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=20) == 0, (tmp_path / "agent.log").read_text()[-2000:]
        assert not os.path.exists(sock)
    finally:
        stop.set()
        sender.join()
        if agent is not None and agent.poll() is None:
            agent.kill()
            agent.wait()
        server.stop(0)


def _check_the_wheel_alone(venv: Path, version: str, env: dict[str, str], tmp_path: Path) -> None:
    """The venv imports ffs from the wheel with the agent's dependencies only, and the laboratory's
    commands, installed too, say in one line what they need."""
    py = str(venv / "bin" / "python")
    # only the agent's dependencies, and the package from the wheel, not from this checkout
    probe = subprocess.run(
        [
            py,
            "-c",
            "import json, ffs, importlib.metadata as m; "
            "print(json.dumps([ffs.__file__, sorted(d.metadata['Name'].lower() for d in m.distributions())]))",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    where, dists = json.loads(probe.stdout)
    assert where.startswith(str(venv)), where
    assert not {"scipy", "matplotlib", "networkx", "tqdm", "scapy", "protobuf"} & set(dists), dists
    import ffs

    said = run(venv, "ffs-agent", "--version", env=env, cwd=tmp_path)
    assert said.returncode == 0 and said.stdout.startswith(f"ffs-agent {ffs.__version__} (Python {version}."), said
    sim = run(
        venv, "ffs-sim", "network", "--nodes=10", f"--out={tmp_path}/net", env=env, cwd=tmp_path
    )  # tqdm, networkx
    want = "needs Python 3.11 or later" if version in ("3.8", "3.10") else "pip install 'ffs-tofino[lab]'"
    assert (
        sim.returncode == 1
        and sim.stderr.count("\n") == 1
        and sim.stderr.startswith("ffs-sim: error: ")
        and want in sim.stderr
    ), sim.stderr


def _start_agent(venv: Path, switch: str, sock: str, env: dict[str, str], tmp_path: Path) -> subprocess.Popen:
    """The wheel's ffs-agent for s1 of the dumbbell on the software switch at `switch`."""
    return subprocess.Popen(
        [
            str(venv / "bin" / "ffs-agent"),
            f"--topology={DUMBBELL}",
            "--node=s1",
            f"--switch={switch}",
            f"--socket={sock}",
            f"--state-dir={tmp_path}/state",
            "--period-ms=50",
            "--lpf-time-constant-us=1000",
            "--telemetry-period-s=0.2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "agent.log", "w"),
        env=env,
        cwd=tmp_path,
    )


def _check_diff_plan_and_load(
    venv: Path, sock: str, switch: str, env: dict[str, str], tmp_path: Path, end: float
) -> None:
    """ffsctl matrix diff, plan (numpy's allocator on measured demands) and load, which reaches the switch."""
    from ffs.core import p4names, tables
    from ffs.core.program import LpfConfig
    from ffs.core.topology import load
    from ffs.driver.model import ModelDriver

    diff = run(venv, "ffsctl", f"--socket={sock}", "matrix", "diff", "m.yaml", env=env, cwd=tmp_path)
    assert diff.returncode == 0 and "M(p1,p3): 10 Mbps -> 12 Mbps" in diff.stdout, diff.stdout + diff.stderr
    while True:  # the allocator (numpy) on the measured demands, once the agent has measured them
        plan = run(venv, "ffsctl", "--json", f"--socket={sock}", "matrix", "plan", "m.yaml", env=env, cwd=tmp_path)
        assert plan.returncode == 0, plan.stderr
        planned = json.loads(plan.stdout)
        pairs = {p["pair"]: p for p in planned["pairs"]}
        if "p1->p3" in pairs or time.monotonic() > end:
            break
        time.sleep(0.2)
    assert 0 < pairs["p1->p3"]["rate"] <= pairs["p1->p3"]["demand"] * 1.001, pairs
    assert {e["egress"]: e["target"] for e in planned["egresses"]}["p3"] == 20e6
    load_ = run(venv, "ffsctl", f"--socket={sock}", "matrix", "load", "m.yaml", env=env, cwd=tmp_path)
    assert load_.returncode == 0, load_.stderr
    drv = ModelDriver(switch)
    drv.connect(timeout_s=10)
    lpf = LpfConfig(1e6).for_node(load(DUMBBELL).node("s1"))
    lm = {
        (e.key["ingress_port"].value, e.key["egress_port"].value): tables.lm_of(e.params)
        for e in drv.read_table(p4names.PAIRS.name)
    }
    drv.close()
    assert lm[(1, 3)] == tables.lm_code(12e6, lpf.time_constant_ns, lpf.scale_down)  # in the switch


def _check_status_log_and_ssh(venv: Path, sock: str, env: dict[str, str], tmp_path: Path) -> None:
    """ffsctl status and log, and both ends of `ffsctl --host ssh://...` on this interpreter."""
    status = run(venv, "ffsctl", "--json", f"--socket={sock}", "status", env=env, cwd=tmp_path)
    assert status.returncode == 0 and json.loads(status.stdout)["node"] == "s1", status.stderr
    log = run(venv, "ffsctl", f"--socket={sock}", "log", env=env, cwd=tmp_path)
    assert "M(p1,p3): 10 Mbps -> 12 Mbps" in log.stdout, log.stdout + log.stderr
    # both ends of `ffsctl --host ssh://...` on this interpreter (the far end runs on the switch's)
    ssh = dict(env, FFS_REMOTE_FFSCTL=str(venv / "bin" / "ffsctl"), **fake_ssh(tmp_path))
    shown = run(
        venv,
        "ffsctl",
        "--json",
        "--host=ssh://ops@switch",
        f"--socket={sock}",
        "matrix",
        "show",
        env=ssh,
        cwd=tmp_path,
    )
    assert shown.returncode == 0 and json.loads(shown.stdout)["fairness"]["p3"]["p1"] == 12e6, shown.stderr
