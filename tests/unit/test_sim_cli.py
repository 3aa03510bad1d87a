# SPDX-License-Identifier: Apache-2.0
"""ffs-sim allocate: the oracle's command line, JSON output and one-line errors."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# the installed console script, so that errors carry its name; `python -m` where it is not installed
_SCRIPT = shutil.which("ffs-sim", path=str(Path(sys.executable).parent)) or shutil.which("ffs-sim")
_PROG = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "ffs.lab.cli.sim"]


def run(*args):
    return subprocess.run([*_PROG, *args], capture_output=True, text=True, timeout=120)


def test_table_ii_json(topo_dir):
    p = run("allocate", str(topo_dir / "table2.yaml"), "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["egresses"][0]["tau"] == pytest.approx(4 / 3, rel=1e-6)
    assert d["egresses"][0]["congested"] is True and d["egresses"][0]["accepted"] == pytest.approx(15e9, rel=1e-9)
    rates = {s["name"]: s["rate"] for s in d["streams"]}
    assert rates == pytest.approx({"s1": 3e9, "s2": 4e9 / 3, "s3": 32e9 / 3}, rel=1e-6)
    hops = {s["name"]: s["hops"][0] for s in d["streams"]}
    assert {n: h["gamma"] for n, h in hops.items()} == pytest.approx({"s1": 1, "s2": 1 / 3, "s3": 2 / 3}, rel=1e-9)
    assert {n: h["ri"] for n, h in hops.items()} == pytest.approx({"s1": 8e9, "s2": 4e9 / 3, "s3": 32e9 / 3}, rel=1e-9)
    assert {n: h["rri"] for n, h in hops.items()} == pytest.approx({"s1": 8 / 3, "s2": 1 / 3, "s3": 2 / 3}, rel=1e-9)


def test_uncongested_tau_is_null_in_json(topo_dir, tmp_path):
    text = (topo_dir / "underuse.yaml").read_text().replace("demand: 20Gbps", "demand: 3Gbps")
    p = tmp_path / "light.yaml"
    p.write_text(text)
    d = json.loads(run("allocate", str(p), "--json").stdout)
    assert d["egresses"][0]["tau"] is None and d["egresses"][0]["congested"] is False


def test_human_output(topo_dir):
    p = run("allocate", str(topo_dir / "underuse.yaml"))
    assert p.returncode == 0 and "1.600000" in p.stdout and "light" in p.stdout and "8 Gbps" in p.stdout
    p = run("allocate", str(topo_dir / "table2.yaml"))
    assert "1.333333" in p.stdout and "10.67 Gbps" in p.stdout and "n:i2->j" in p.stdout


def test_group_has_room_for_subcommands():
    p = run("--help")
    assert p.returncode == 0 and "allocate" in p.stdout


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (("j: {i1: 7Gbps", "j: {i9: 7Gbps"), "nodes.n.fairness.j.i9: unknown interface 'i9'"),
        (("i1: {capacity: 15Gbps", "i1: {capacity: -15Gbps"), "nodes.n.interfaces.i1.capacity: negative rate"),
        (("i1: {capacity: 15Gbps", "i1: {capacity: lots"), "nodes.n.interfaces.i1.capacity: not a rate: 'lots"),
        (("i2: 8Gbps}", "i2: 9Gbps}"), "nodes.n.fairness.j: entries sum to 1.6e+10 bit/s, above the egress capacity"),
        (("i2: {capacity: 15Gbps, port: 2,", "i2: {capacity: 15Gbps, port: 1,"), "port 1 already used"),
        (("egress: j}], demand: 3Gbps", "egress: i2}], demand: 3Gbps"), "no fairness column for egress 'i2'"),
        (("nodes:", "nodes: ]"), "invalid YAML"),
    ],
)
def test_malformed_topology_one_line_exit_2(tmp_path, topo_dir, edit, fragment):
    text = (topo_dir / "table2.yaml").read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(edit[0], edit[1], 1))
    p = run("allocate", str(bad))
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    prefix = "ffs-sim: error: " if _SCRIPT else "error: "
    assert prefix in lines[0] and fragment in lines[0], lines[0]
    line = text[: text.index(edit[0])].count("\n") + 1  # errors point at the line of the mistake
    assert lines[0].split("error: ", 1)[1].startswith(f"{bad}:{line}: ") or "invalid YAML" in fragment


def test_missing_file_and_usage(tmp_path):
    p = run("allocate", str(tmp_path / "nope.yaml"))
    assert p.returncode == 2 and "cannot read" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = run("allocate")
    assert p.returncode == 2 and "Traceback" not in p.stderr
