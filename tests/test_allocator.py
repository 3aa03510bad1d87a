"""The exact FFS allocation against the paper's worked examples and its lemmas."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from ffs.allocator import allocate, solve_tau
from ffs.topology import Hop, Interface, Node, Stream, Topology, load

G = 1e9


def test_table_ii(topo_dir):
    a = allocate(load(topo_dir / "table2.yaml"))
    assert a.tau("n", "j") == pytest.approx(4 / 3, rel=1e-9)
    expect = {"s1": (3, 1, 8, 8 / 3, 0.5), "s2": (4 / 3, 1 / 3, 4 / 3, 1 / 3, 4 / 3), "s3": (32 / 3, 2 / 3, 32 / 3, 2 / 3, 4 / 3)}
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
    ifs = {name: Interface(name, capacity, port) for port, name in enumerate(list(shares) + ["j"], start=1)}
    node = Node("n", ifs, {"j": dict(shares)}, targets={"j": target} if target else {})
    return Topology("t", {"n": node}, tuple(
        Stream(n, (Hop("n", i, "j"),), d, r or d, f or d) for n, i, d, r, f in streams
    ))


def test_uncongested_ri_vector_12():
    # C = 10, R* = 5: r = 2, f = 3 -> RI = min(10, max(4, 3)) = 4, RRI = max(2, 1.5) = 2
    t = one_node({"a": 5 * G, "b": 5 * G}, [("s", "a", 2 * G, 2 * G, 3 * G), ("t", "b", 3 * G, 3 * G, 3 * G)])
    a = allocate(t)
    assert math.isinf(a.tau("n", "j"))
    h = a.stream("s").hops[0]
    # f at the node is normalized to M(a,j) = 5 (single stream): RI = max(2*10/5, 5) = 5
    assert h.ri == pytest.approx(5 * G) and h.rri == pytest.approx(max(2, 1 / (2 / 5)))


def test_rri_chain(topo_dir):
    a = allocate(load(topo_dir / "chain.yaml"))
    x = a.stream("x").hops
    # constrained twice: RRI is the product of the gammas
    assert x[0].rri == pytest.approx(x[0].gamma) and x[1].rri == pytest.approx(x[0].gamma * x[1].gamma)
    assert x[1].f == pytest.approx(x[0].f / 10 * 4)  # Eq. 1: n2 splits M(up,out) = 4 by n1's shares


@given(st.floats(min_value=0.01, max_value=50), st.floats(min_value=0.01, max_value=100), st.floats(min_value=0.1, max_value=9.9))
def test_corollary_1(r_single, r_other, m_single):
    t = one_node({"a": m_single * G, "b": (10 - m_single) * G}, [("s", "a", r_single * G, None, None), ("o", "b", r_other * G, None, None)])
    assert allocate(t).stream("s").rate >= min(r_single, m_single) * G * (1 - 1e-9)


streams_st = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0.1, 30), st.floats(0.01, 10), st.floats(0.01, 10)),
    min_size=1, max_size=7,
)


@settings(max_examples=150, deadline=None)
@given(st.tuples(st.floats(0.1, 1), st.floats(0.1, 1), st.floats(0.1, 1)), streams_st)
def test_lemma_1_and_2(weights, streams):
    cap = 10 * G
    total = sum(weights)
    shares = {n: w / total * cap for n, w in zip("abc", weights)}
    specs = [(f"s{k}", i, d * G, r * G, f * G) for k, (i, d, r, f) in enumerate(streams)]
    a = allocate(one_node(shares, specs, capacity=cap))
    e = a.egresses[0]
    if e.congested:
        assert e.tau >= 1 - 1e-9  # Lemma 1
        assert e.accepted == pytest.approx(cap, rel=1e-9)
    for name, ing, d, r, f in specs:
        same = [x for x in specs if x[1] == ing]
        fair = f / sum(x[4] for x in same) * shares[ing]  # Eq. 1 at this node
        # Lemma 2 on one hop: at least min(demand, f)
        assert a.stream(name).rate >= min(d, fair) * (1 - 1e-9)


def test_solve_tau_edges():
    assert math.isinf(solve_tau([1, 2], [1, 1], 5))
    assert solve_tau([4, 4], [1, 1], 4) == pytest.approx(2)
