# SPDX-License-Identifier: Apache-2.0
"""Topology files: the examples load, and every kind of mistake gets a one-line error with its line."""

import copy
import dataclasses
import re
import textwrap

import pytest
import yaml

from ffs.core.topology import TopologyError, load

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
        (
            "a: {capacity: 10Gbps, port: 1}",
            "a: {capacity: -3Gbps, port: 1}",
            5,
            "nodes.n.interfaces.a.capacity: negative rate",
        ),
        ("a: {capacity: 10Gbps, port: 1}", "a: {capacity: fast, port: 1}", 5, "not a rate: 'fast'"),
        (
            "j: {a: 5Gbps, b: 5Gbps}",
            "j: {a: 5Gbps, b: 6Gbps}",
            9,
            "entries sum to 1.1e+10 bit/s, above the egress capacity",
        ),
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
    t = load(
        write(
            tmp_path,
            GOOD.replace("    fairness:", "    targets: {j: 9Gbps}\n    fairness:").replace("b: 5Gbps}", "b: 4Gbps}"),
        )
    )
    assert t.node("n").target("j") == 9e9


def test_chain_must_follow_links(topo_dir, tmp_path):
    text = (topo_dir / "chain.yaml").read_text().replace("peer: n2.up}", "peer: n2.c}", 1)
    with pytest.raises(TopologyError, match="does not point back"):
        load(write(tmp_path, text))


@pytest.mark.parametrize(
    "old, new, line, fragment",
    [
        (
            "ingress: a, egress: j}]",
            "ingress: {x: 1}, egress: j}]",
            11,
            "streams[0].path[0].ingress: expected an interface name",
        ),
        ("ingress: a, egress: j}]", "ingress: a, egress: b}]", 11, "node 'n' has no fairness column for egress 'b'"),
        ("path: [{node: n,", "path: [{node: m,", 11, "streams[0].path[0].node: unknown node 'm'"),
        (
            "b: {capacity: 10Gbps, port: 2}",
            "b: {capacity: 10Gbps, port: 10000000000000000000000000}",
            6,
            "expected a finite number in [0, 511]",
        ),
        ("b: {capacity: 10Gbps, port: 2}", "b: {capacity: 10Gbps, port: 2.5}", 6, "expected an integer device port"),
        ("demand: 2Gbps}", "demand: 2Gbps, rf: 2, f: 1Gbps}", 11, "not both"),
        ("demand: 2Gbps}", "demand: 2Gbps, rf: -1}", 11, "streams[0].rf: expected a finite number"),
        ("demand: 2Gbps}", "demand: 2Gbps, start: .inf}", 11, "streams[0].start: expected a finite number"),
        ("j: {a: 5Gbps, b: 5Gbps}", "j: {a: 0, b: 0}", 9, "nodes.n.fairness.j: entries sum to 0"),
        ("    fairness:", "    target_factor: 0\n    fairness:", 8, "nodes.n.target_factor: must be above 0"),
        (
            "    fairness:",
            "    targets: {j: 12Gbps}\n    fairness:",
            8,
            "nodes.n.targets.j: target above the interface capacity",
        ),
        ("    fairness:", "    targets: {j: 9Gbps}\n    fairness:", 10, "above the egress target 9e+09"),
        (
            "    fairness:",
            "    routes: [{prefix: 10.0.0.1/24, interface: j}]\n    fairness:",
            8,
            "nodes.n.routes[0].prefix: bad prefix",
        ),
        (
            "    fairness:",
            "    routes: [{prefix: 2001:db8::/32, interface: q}]\n    fairness:",
            8,
            "nodes.n.routes[0].interface: unknown interface 'q'",
        ),
        ("    fairness:", "    routes: [{prefix: 10.0.0.0/33, interface: j}]\n    fairness:", 8, "bad prefix"),
        (
            "a: {capacity: 10Gbps, port: 1}",
            "a: {capacity: 10Gbps, port: 1, peer: n.b}",
            5,
            "peer 'n.b' does not point back",
        ),
        ("a: {capacity: 10Gbps, port: 1}", "a: {capacity: 10Gbps, port: 1, trust: maybe}", 5, "expected true or false"),
        ("j: {a: 5Gbps, b: 5Gbps}", "j: {a: 5Gbps, a: 5Gbps}", 9, "nodes.n.fairness.j.a: duplicate key"),
    ],
)
def test_more_errors(tmp_path, old, new, line, fragment):
    assert old in GOOD
    p = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(TopologyError) as e:
        load(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{p}:{line}: "), msg
    assert fragment in msg, msg


HOSTS = """\
hosts:
  h1: {attach: n1.a, address: 10.0.1.1/24, gateway: 10.0.1.254}
"""


def test_hosts(topo_dir, tmp_path):
    t = load(topo_dir / "dumbbell.yaml")
    assert {h.interface for h in t.hosts.values()} == {"s1.p1", "s1.p2", "s1.p3"}
    assert sorted(h.address for h in t.hosts.values()) == ["10.0.1.1/24", "10.0.2.1/24", "10.0.3.1/24"]
    assert sorted(r.prefix for r in t.node("s1").routes) == ["10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"]
    chain = (topo_dir / "chain.yaml").read_text()
    assert load(write(tmp_path, chain + HOSTS)).hosts["h1"].attach == "n1.a"
    for old, new, fragment in [
        ("n1.a", "n1.l", "n1.l links to n2.up: hosts attach to local interfaces"),
        ("n1.a", "n1.zz", "unknown interface 'n1.zz'"),
        ("10.0.1.1/24", "10.0.1.300/24", "hosts.h1.address: bad address"),
        ("gateway: 10.0.1.254", "gateway: fe80::1::2", "hosts.h1.gateway: bad address"),
    ]:
        with pytest.raises(TopologyError, match=re.escape(fragment)):
            load(write(tmp_path, chain + HOSTS.replace(old, new)))


def test_stream_labels(tmp_path):
    s = load(write(tmp_path, GOOD.replace("demand: 2Gbps}", "demand: 2Gbps, r: 3Gbps, rf: 4}"))).streams[0]
    assert (s.r, s.f, s.rf) == (3e9, 0.75e9, 4.0)
    s = load(write(tmp_path, GOOD.replace("demand: 2Gbps}", "demand: 2Gbps, f: 1Gbps}"))).streams[0]
    assert (s.r, s.f, s.rf) == (2e9, 1e9, 2.0)
    assert s.start == 0 and s.stop is None and s.packet_size == 1250 and s.labelled and s.ip_len is None


@pytest.mark.parametrize("value", [0, 20, 65535])
def test_stream_ip_len_lies(tmp_path, value):
    """ip_len (an attack, docs/security.md): the IPv4 total length field, any 16-bit value."""
    s = load(write(tmp_path, GOOD.replace("demand: 2Gbps}", f"demand: 2Gbps, ip_len: {value}}}"))).streams[0]
    assert s.ip_len == value and s.packet_size == 1250


@pytest.mark.parametrize("value", ["-1", "65536", "20.5", "true", "'20'"])
def test_stream_ip_len_out_of_range(tmp_path, value):
    with pytest.raises(TopologyError) as e:
        load(write(tmp_path, GOOD.replace("demand: 2Gbps}", f"demand: 2Gbps, ip_len: {value}}}")))
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and ":11: streams[0].ip_len: expected an integer in [0, 65535]" in msg, msg


def test_trace_frames_carry_the_lie(tmp_path):
    """The trace's frame keeps its real size (pacing, queues) and only its total length lies, with
    a valid header checksum."""
    from ffs.core.frames import ipv4_checksum
    from ffs.switch.trace import streams_from_topology

    t = load(
        write(
            tmp_path,
            GOOD.replace("demand: 2Gbps}", "demand: 2Gbps, labelled: false, ip_len: 20}").replace(
                "j: {capacity: 10Gbps, port: 3}",
                "j: {capacity: 10Gbps, port: 3}\n    routes: [{prefix: 10.0.3.0/24, interface: j}]",
            ),
        )
    )
    (ts,) = streams_from_topology(t, 1.0)
    f = ts.frame
    assert len(f) == 14 + 1250 and ts.wire == 14 + 1250 + 4 + 20  # paced by the bytes it really takes
    assert int.from_bytes(f[16:18], "big") == 20
    assert int.from_bytes(f[24:26], "big") == ipv4_checksum(f[14:34])


def test_dataclasses_are_frozen_and_documented_defaults(topo_dir):
    t = load(topo_dir / "chain.yaml")
    n1 = t.node("n1")
    assert n1.interfaces["l"].peer == "n2.up" and not n1.interfaces["l"].local and n1.interfaces["a"].local
    # host-facing ports reset labels unless the file says trust: true; links between FFS nodes trust
    assert not n1.interfaces["a"].trust and not n1.interfaces["a"].insert and not n1.interfaces["a"].strip
    assert n1.interfaces["l"].trust and t.node("n2").interfaces["up"].trust
    with pytest.raises(dataclasses.FrozenInstanceError):
        n1.target_factor = 0.5  # type: ignore[misc]
    with pytest.raises(TopologyError, match="unknown node 'zz'"):
        t.node("zz")


def test_fig2b_matches_the_paper(topo_dir):
    n = load(topo_dir / "fig2b.yaml").node("n")
    assert n.fairness["2"]["1"] == 0.4e9  # M(1,2) = 0.4 Gbps of a 1 Gbps egress (FFS Figure 2b)
    assert all(n.fairness[j][j] > 0 for j in n.fairness)  # diagonal entries: reflection
    for j, col in n.fairness.items():  # each column sums to its egress capacity
        assert sum(col.values()) == pytest.approx(n.interfaces[j].capacity)


def test_table2_file_is_the_papers_node(topo_dir):
    t = load(topo_dir / "table2.yaml")
    n = t.node("n")
    assert n.interfaces["j"].capacity == 15e9 and n.fairness["j"] == {"i1": 7e9, "i2": 8e9}
    assert [(s.name, s.path[0].ingress, s.r, s.f) for s in t.streams] == [
        ("s1", "i1", 3e9, 6e9),
        ("s2", "i1", 4e9, 1e9),
        ("s3", "i2", 16e9, 8e9),
    ]


_BAD_VALUES = [None, {"a": 1}, True, -1, 1.5, "x.y", float("nan"), 10**400]


def _scalar_paths(d, pre=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield pre + (k,)
            yield from _scalar_paths(v, pre + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield pre + (i,)
            yield from _scalar_paths(v, pre + (i,))


@pytest.mark.parametrize("name", ["table2", "chain"])
def test_any_wrong_value_is_a_topology_error(topo_dir, tmp_path, name):
    """Replacing any value of an example with any wrong type or number loads or fails with a
    one-line TopologyError, never another exception (which would be a traceback in the CLIs)."""
    base = yaml.safe_load((topo_dir / f"{name}.yaml").read_text())
    failures = 0
    for path in _scalar_paths(base):
        for bad in _BAD_VALUES:
            d = copy.deepcopy(base)
            target = d
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = bad
            p = tmp_path / "t.yaml"
            p.write_text(yaml.dump(d, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)))
            try:
                load(p)
            except TopologyError as e:
                failures += 1
                assert "\n" not in str(e) and str(e).startswith(f"{p}:")
    assert failures > 100
