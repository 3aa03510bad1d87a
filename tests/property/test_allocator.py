# SPDX-License-Identifier: Apache-2.0
"""The exact FFS allocation against the paper's worked examples and its lemmas."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ffs.core.allocator import AllocationError, allocate, solve_tau
from ffs.core.topology import Hop, Interface, Node, Stream, Topology, load

G = 1e9


def test_table_ii(topo_dir):
    a = allocate(load(topo_dir / "table2.yaml"))
    assert a.tau("n", "j") == pytest.approx(4 / 3, rel=1e-9)
    expect = {
        "s1": (3, 1, 8, 8 / 3, 0.5),
        "s2": (4 / 3, 1 / 3, 4 / 3, 1 / 3, 4 / 3),
        "s3": (32 / 3, 2 / 3, 32 / 3, 2 / 3, 4 / 3),
    }
    for name, (rate, gamma, ri, rri, rf_out) in expect.items():
        h = a.stream(name).hops[0]
        assert h.rate_out == pytest.approx(rate * G, rel=1e-9)
        assert h.gamma == pytest.approx(gamma, rel=1e-9)
        assert h.ri == pytest.approx(ri * G, rel=1e-9)
        assert h.rri == pytest.approx(rri, rel=1e-9)
        assert h.rf_out == pytest.approx(rf_out, rel=1e-9)
    # not HWFQ: HWFQ would give 3 / 4 / 8
    assert a.stream("s2").rate != pytest.approx(4 * G, rel=0.01)
    assert sum(s.rate for s in a.streams) == pytest.approx(15 * G, rel=1e-12)


def test_under_use(topo_dir):
    a = allocate(load(topo_dir / "underuse.yaml"))
    assert a.tau("n", "j") == pytest.approx(1.6, rel=1e-9)
    assert a.stream("light").rate == pytest.approx(2 * G, rel=1e-9)
    assert a.stream("heavy").rate == pytest.approx(8 * G, rel=1e-9)


def one_node(shares, streams, capacity=10 * G, target=None):
    # the ingresses stand for links from upstream FFS nodes: the node uses the labels they carry
    ifs = {name: Interface(name, capacity, port, trust=True) for port, name in enumerate(list(shares) + ["j"], start=1)}
    node = Node("n", ifs, {"j": dict(shares)}, targets={"j": target} if target else {})
    return Topology(
        "t", {"n": node}, tuple(Stream(n, (Hop("n", i, "j"),), d, r or d, f or d) for n, i, d, r, f in streams)
    )


def test_uncongested_ri_vector_12():
    # test vector 12: C = 10, R_* = 5. A stream alone on its ingress with M = 3 has f = 3
    # (Eq. 1), so Algorithm 2 sees exactly the vector's f.
    for r, other, ri, rri in [(2, 3, 4, 2), (1, 4, 3, 3)]:
        t = one_node({"a": 3 * G, "b": 7 * G}, [("s", "a", r * G, None, None), ("t", "b", other * G, None, None)])
        a = allocate(t)
        assert math.isinf(a.tau("n", "j")) and not a.egresses[0].congested
        h = a.stream("s").hops[0]
        assert h.f == pytest.approx(3 * G, rel=1e-12) and h.gamma == 1 and h.rate_out == r * G
        assert h.ri == pytest.approx(ri * G, rel=1e-12)  # min(inf, 10, max(r * 10/5, 3))
        assert h.rri == pytest.approx(rri, rel=1e-12)  # max(10/5, 1/rf) with rf = r/3


def test_rri_chain(topo_dir):
    a = allocate(load(topo_dir / "chain.yaml"))
    x = a.stream("x").hops
    # constrained twice: RRI is the product of the gammas
    assert x[0].rri == pytest.approx(x[0].gamma) and x[1].rri == pytest.approx(x[0].gamma * x[1].gamma)
    assert x[1].f == pytest.approx(x[0].f / 10 * 4)  # Eq. 1: n2 splits M(up,out) = 4 by n1's shares


def chain(nodes, streams):
    """Nodes in a line: nodes = [(capacity of egress j, {ingress: share})]; node k's egress "j"
    links to node k+1's ingress "up". streams = [(name, first node, first ingress, hops, demand)]."""
    topo_nodes = {}
    for k, (cap, shares) in enumerate(nodes):
        ifs = {}
        for port, name in enumerate(sorted(set(shares) | {"j"}), start=1):
            peer = None
            if name == "j" and k + 1 < len(nodes):
                peer = f"n{k + 1}.up"
            elif name == "up":
                peer = f"n{k - 1}.j"
            # every port uses the labels it receives (Lemma 2 assumes FFS end to end)
            ifs[name] = Interface(name, cap if name == "j" else 100 * G, port, trust=True, peer=peer)
        topo_nodes[f"n{k}"] = Node(f"n{k}", ifs, {"j": dict(shares)})
    out = []
    for name, first, ingress, hops, demand in streams:
        path = tuple(Hop(f"n{k}", ingress if k == first else "up", "j") for k in range(first, first + hops))
        out.append(Stream(name, path, demand, demand, demand))
    return Topology("chain", topo_nodes, tuple(out))


def test_rri_chain_vector_13():
    # test vector 13: gamma 0.5 at node 1 -> RRI 0.5; gamma 0.5 at node 2 -> 0.25 (line 2);
    # a congested node that does not constrain the stream leaves RRI unchanged
    t = chain(
        [
            (10 * G, {"a": 5 * G, "b": 5 * G}),
            (5 * G, {"up": 2.5 * G, "c": 2.5 * G}),
            (10 * G, {"up": 5 * G, "d": 5 * G}),
        ],
        [("x", 0, "a", 3, 10 * G), ("z", 0, "b", 1, 10 * G), ("w", 1, "c", 1, 10 * G), ("v", 2, "d", 1, 20 * G)],
    )
    a = allocate(t)
    x = a.stream("x").hops
    assert [h.gamma for h in x] == pytest.approx([0.5, 0.5, 1.0], rel=1e-12)
    assert [h.rri for h in x] == pytest.approx([0.5, 0.25, 0.25], rel=1e-12)
    assert a.tau("n0", "j") == pytest.approx(1) and a.tau("n1", "j") == pytest.approx(1)
    assert a.tau("n2", "j") == pytest.approx(1.5) and a.egresses[2].congested
    assert a.stream("x").rate == pytest.approx(2.5 * G, rel=1e-12)
    assert [h.ri for h in x] == pytest.approx([5 * G, 2.5 * G, 2.5 * G], rel=1e-12)  # min CFR on the path


def test_default_label_aggregate_vector_11():
    # test vector 11: an unlabelled aggregate with R = 12 on M = 4 at tau = 1.5 gets
    # gamma = min(1, 1.5 * 4 / 12) = 0.5 and output 6; the other ingress (M = 6) sends 4 < 6 * 1.5
    t = one_node({"a": 4 * G, "b": 6 * G}, [("agg", "a", 12 * G, None, None), ("o", "b", 4 * G, None, None)])
    a = allocate(t)
    assert a.tau("n", "j") == pytest.approx(1.5, rel=1e-12)
    h = a.stream("agg").hops[0]
    assert h.gamma == pytest.approx(0.5, rel=1e-12) and h.rate_out == pytest.approx(6 * G, rel=1e-12)
    assert h.rf_norm == pytest.approx(12 / 4, rel=1e-12) and h.rf_out == pytest.approx(1.5, rel=1e-12)


def test_zero_share_and_unmanaged_egress():
    # an ingress without a matrix entry (M = 0) gets nothing at a congested egress...
    t = one_node({"a": 10 * G, "b": 0.0}, [("s", "a", 4 * G, None, None), ("t", "b", 20 * G, None, None)])
    a = allocate(t)
    assert a.egresses[0].congested and math.isinf(a.tau("n", "j"))  # a alone cannot fill T_j
    assert a.stream("s").rate == 4 * G and a.stream("t").rate == 0.0
    assert a.stream("t").hops[0].ri == 0.0 and a.stream("t").hops[0].rri == 0.0
    # ... and everything while the egress is not congested
    t = one_node({"a": 10 * G, "b": 0.0}, [("s", "a", 4 * G, None, None), ("t", "b", 2 * G, None, None)])
    assert allocate(t).stream("t").rate == 2 * G
    # an egress without a fairness column is not FFS's to allocate
    node = Node("n", {"a": Interface("a", G, 1), "j": Interface("j", G, 2)}, {})
    with pytest.raises(AllocationError, match="no fairness column for egress 'j'"):
        allocate(Topology("t", {"n": node}, (Stream("s", (Hop("n", "a", "j"),), G, G, G),)))


def test_extreme_labels_converge():
    # labels 300 orders of magnitude apart: Brent's method still gets an exact bracket
    t = one_node(
        {"a": 7 * G, "b": 8 * G},
        [("s1", "a", 3 * G, 3 * G, 1e308), ("s2", "a", 4 * G, 4 * G, 1 * G), ("s3", "b", 16 * G, 16 * G, 8 * G)],
        capacity=15 * G,
    )
    a = allocate(t)
    assert a.tau("n", "j") == pytest.approx(1.5, rel=1e-12)
    assert a.stream("s3").rate == pytest.approx(12 * G, rel=1e-12) and a.stream("s1").rate == 3 * G
    assert sum(s.rate for s in a.streams) == pytest.approx(15 * G, rel=1e-12)


def test_to_dict_is_json():
    import json

    t = one_node({"a": 5 * G, "b": 5 * G}, [("s", "a", 2 * G, None, None)])
    d = json.loads(json.dumps(allocate(t).to_dict(), allow_nan=False))
    assert d["egresses"][0]["tau"] is None and d["streams"][0]["hops"][0]["rate_out"] == 2 * G


@settings(deadline=None)  # a loaded 2-core machine can take longer than hypothesis's 200 ms
@given(
    st.floats(min_value=0.01, max_value=50),
    st.floats(min_value=0.01, max_value=100),
    st.floats(min_value=0.1, max_value=9.9),
)
def test_corollary_1(r_single, r_other, m_single):
    t = one_node(
        {"a": m_single * G, "b": (10 - m_single) * G},
        [("s", "a", r_single * G, None, None), ("o", "b", r_other * G, None, None)],
    )
    assert allocate(t).stream("s").rate >= min(r_single, m_single) * G * (1 - 1e-9)


streams_st = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0.1, 30), st.floats(0.01, 10), st.floats(0.01, 10)),
    min_size=1,
    max_size=7,
)


@settings(max_examples=150, deadline=None)
@given(st.tuples(st.floats(0.1, 1), st.floats(0.1, 1), st.floats(0.1, 1)), streams_st)
def test_lemma_1_and_2(weights, streams):
    cap = 10 * G
    total = sum(weights)
    shares = {n: w / total * cap for n, w in zip("abc", weights, strict=False)}
    specs = [(f"s{k}", i, d * G, r * G, f * G) for k, (i, d, r, f) in enumerate(streams)]
    a = allocate(one_node(shares, specs, capacity=cap))
    e = a.egresses[0]
    if e.congested:
        assert e.tau >= 1 - 1e-9  # Lemma 1
        assert e.accepted == pytest.approx(cap, rel=1e-9)
    for name, ing, d, r, f in specs:
        same = [x for x in specs if x[1] == ing]
        # Eq. 1 with the weight the switch gives: bytes / rf, so demand · f / r (spec §2)
        fair = d * f / r / sum(x[2] * x[4] / x[3] for x in same) * shares[ing]
        # Lemma 2 on one hop: at least min(demand, f)
        assert a.stream(name).rate >= min(d, fair) * (1 - 1e-9)


def test_solve_tau_edges():
    assert math.isinf(solve_tau([1, 2], [1, 1], 5))
    assert solve_tau([4, 4], [1, 1], 4) == pytest.approx(2)


def closed_form_tau(rates, shares, target):
    """τ from the segment of the piecewise-linear g where it crosses the target (no root finder)."""
    pts = sorted((r / f, r, f) for r, f in zip(rates, shares, strict=False) if f > 0)
    done = 0.0
    for k, (b, r, _f) in enumerate(pts):
        rest = sum(x[2] for x in pts[k:])
        tau = (target - done) / rest
        if tau <= b:
            return tau
        done += r
    return math.inf


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3)), min_size=1, max_size=12), st.floats(0.01, 0.999))
def test_solve_tau_is_the_root(pairs, fraction):
    rates, shares = [p[0] for p in pairs], [p[1] for p in pairs]
    target = fraction * sum(rates)
    tau = solve_tau(rates, shares, target)
    assert tau == pytest.approx(closed_form_tau(rates, shares, target), rel=1e-12)
    assert sum(min(r, f * tau) for r, f in pairs) == pytest.approx(target, rel=1e-12)


@st.composite
def chains(draw):
    """A line of 1-3 nodes (each: the link from the previous node or the probe's own local ingress,
    and two local cross ingresses c1, c2, toward egress j), a probe stream over the whole line, and
    cross streams that enter at any node and go on to the end."""
    n = draw(st.integers(1, 3))
    nodes = []
    for k in range(n):
        cap = draw(st.floats(1, 20)) * G
        w = [draw(st.floats(0.05, 1)) for _ in range(3)]
        names = ["p" if k == 0 else "up", "c1", "c2"]
        nodes.append((cap, {name: x / sum(w) * cap for name, x in zip(names, w, strict=False)}))
    probe = draw(st.floats(0.1, 40)) * G
    cross = []
    for m in range(draw(st.integers(0, 6))):
        first = draw(st.integers(0, n - 1))
        cross.append((f"x{m}", first, draw(st.sampled_from(["c1", "c2"])), n - first, draw(st.floats(0.1, 40)) * G))
    return nodes, [("s", 0, "p", n, probe)] + cross


@settings(max_examples=120, deadline=None)
@given(chains())
def test_lemma_2_over_paths_and_lemma_1(spec):
    nodes, streams = spec
    a = allocate(chain(nodes, streams))
    for e in a.egresses:
        if e.congested:
            assert e.tau >= 1 - 1e-12  # Lemma 1 (columns sum to the target)
            assert e.accepted == pytest.approx(e.target, rel=1e-9)  # the egress is filled exactly
        else:
            assert math.isinf(e.tau) and e.accepted == pytest.approx(e.offered, rel=1e-12)
    # Lemma 2: r_s >= min(r_init, min_x prod_{t<=x} M_t / prod_{t<x} C_t) for the probe, which is
    # alone on its first ingress (the paper's assumption)
    r_init = streams[0][4]
    bound, num, den = r_init, 1.0, 1.0
    for x, (cap, shares) in enumerate(nodes):
        num *= shares["p" if x == 0 else "up"]
        bound = min(bound, num / den)
        den *= cap
    assert a.stream("s").rate >= bound * (1 - 1e-9)
    # and rates never grow along a path
    for s in a.streams:
        assert all(h.rate_out <= h.rate_in * (1 + 1e-12) for h in s.hops)
        assert all(s.hops[k + 1].rate_in == s.hops[k].rate_out for k in range(len(s.hops) - 1))


@pytest.mark.parametrize(
    "name, taus, rates",
    [
        ("fig2b", {("n", "2"): 1 / 0.9}, {"a": 0.4e9 / 0.9, "b": 0.5e9 / 0.9}),  # 0.4τ + 0.5τ = 1 Gb/s
        ("dumbbell", {("s1", "p3"): 1.2}, {"well-behaved": 8e6, "flood": 12e6}),  # 8 + 10τ = 20 Mb/s
        ("chain", {("n1", "l"): 1.0, ("n2", "out"): 1.0}, {"x": 1.2e9, "y": 1.2e9, "z": 1.6e9, "w": 4e9}),
    ],
)
def test_examples_give_their_documented_allocation(topo_dir, name, taus, rates):
    a = allocate(load(topo_dir / f"{name}.yaml"))
    for (node, egress), tau in taus.items():
        assert a.tau(node, egress) == pytest.approx(tau, rel=1e-12)
    assert {s.name: s.rate for s in a.streams} == pytest.approx(rates, rel=1e-12)
