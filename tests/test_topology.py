"""Topology files: the examples load, and every kind of mistake gets a one-line error with its line."""

import textwrap

import pytest

from ffs.topology import TopologyError, load

GOOD = """\
name: t
nodes:
  n:
    interfaces:
      a: {capacity: 10Gbps, port: 1}
      b: {capacity: 10Gbps, port: 2}
      j: {capacity: 10Gbps, port: 3}
    fairness:
      j: {a: 5Gbps, b: 5Gbps}
streams:
  - {name: s, path: [{node: n, ingress: a, egress: j}], demand: 2Gbps}
"""


def write(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(textwrap.dedent(text))
    return p


@pytest.mark.parametrize("name", ["table2", "underuse", "fig2b", "chain", "dumbbell"])
def test_examples_load(topo_dir, name):
    t = load(topo_dir / f"{name}.yaml")
    assert t.nodes and t.source.name == f"{name}.yaml"


def test_good_file(tmp_path):
    t = load(write(tmp_path, GOOD))
    n = t.node("n")
    assert n.interfaces["j"].capacity == 10e9 and n.target("j") == 10e9 and n.share("a", "j") == 5e9
    assert t.streams[0].r == t.streams[0].f == 2e9


@pytest.mark.parametrize(
    "old, new, line, fragment",
    [
        ("j: {a: 5Gbps, b: 5Gbps}", "j: {a: 5Gbps, x: 5Gbps}", 9, "nodes.n.fairness.j.x: unknown interface 'x'"),
        ("a: {capacity: 10Gbps, port: 1}", "a: {capacity: -3Gbps, port: 1}", 5, "nodes.n.interfaces.a.capacity: negative rate"),
        ("a: {capacity: 10Gbps, port: 1}", "a: {capacity: fast, port: 1}", 5, "not a rate: 'fast'"),
        ("j: {a: 5Gbps, b: 5Gbps}", "j: {a: 5Gbps, b: 6Gbps}", 9, "entries sum to 1.1e+10 bit/s, above the egress capacity"),
        ("j: {a: 5Gbps, b: 5Gbps}", "j: {a: .nan, b: 5Gbps}", 9, "not a finite rate"),
        ("b: {capacity: 10Gbps, port: 2}", "b: {capacity: 10Gbps, port: 1}", 6, "port 1 already used"),
        ("egress: j}]", "egress: q}]", 11, "unknown interface 'q' on node 'n'"),
        ("demand: 2Gbps", "demand: 0", 11, "must be positive"),
        ("    fairness:", "    fairnes:", 8, "unknown key"),
    ],
)
def test_errors_name_file_line_key(tmp_path, old, new, line, fragment):
    assert old in GOOD
    p = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(TopologyError) as e:
        load(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}:{line}: "), msg
    assert fragment in msg


def test_invalid_yaml_and_missing_file(tmp_path):
    with pytest.raises(TopologyError, match=r":3: invalid YAML"):
        load(write(tmp_path, "nodes:\n  n: {\n  x: ]\n"))
    with pytest.raises(TopologyError, match="cannot read"):
        load(tmp_path / "nope.yaml")


def test_target_factor_and_explicit_target(tmp_path):
    t = load(write(tmp_path, GOOD.replace("    fairness:", "    target_factor: 0.85\n    fairness:")))
    assert t.node("n").target("j") == pytest.approx(8.5e9)
    t = load(write(tmp_path, GOOD.replace("    fairness:", "    targets: {j: 9Gbps}\n    fairness:").replace("b: 5Gbps}", "b: 4Gbps}")))
    assert t.node("n").target("j") == 9e9


def test_chain_must_follow_links(topo_dir, tmp_path):
    text = (topo_dir / "chain.yaml").read_text().replace("peer: n2.up}", "peer: n2.c}", 1)
    with pytest.raises(TopologyError, match="does not point back"):
        load(write(tmp_path, text))
