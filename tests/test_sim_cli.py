"""ffs-sim allocate: the oracle's command line, JSON output and one-line errors."""

import json
import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "ffs.cli.sim", *args], capture_output=True, text=True)


def test_table_ii_json(topo_dir):
    p = run("allocate", str(topo_dir / "table2.yaml"), "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["egresses"][0]["tau"] == pytest.approx(4 / 3, rel=1e-6)
    rates = {s["name"]: s["rate"] for s in d["streams"]}
    assert rates == pytest.approx({"s1": 3e9, "s2": 4e9 / 3, "s3": 32e9 / 3}, rel=1e-6)


def test_human_output(topo_dir):
    p = run("allocate", str(topo_dir / "underuse.yaml"))
    assert p.returncode == 0 and "1.600000" in p.stdout


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (("j: {i1: 7Gbps", "j: {i9: 7Gbps"), "unknown interface 'i9'"),
        (("i1: {capacity: 15Gbps", "i1: {capacity: -15Gbps"), "negative rate"),
        (("i1: {capacity: 15Gbps", "i1: {capacity: lots"), "not a rate"),
        (("i2: 8Gbps}", "i2: 9Gbps}"), "above the egress capacity"),
    ],
)
def test_malformed_topology_one_line_exit_2(tmp_path, topo_dir, edit, fragment):
    text = (topo_dir / "table2.yaml").read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(edit[0], edit[1]))
    p = run("allocate", str(bad))
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and fragment in lines[0] and "Traceback" not in p.stderr
