# SPDX-License-Identifier: Apache-2.0
"""`ffs-sim network` (FFS §VII-B, Appendix C) on small graphs: the matrices as §VII-B builds them,
shortest paths, FFS against the static GMA shares (Lemma 1), the deployment study, and bad input."""

from __future__ import annotations

import json
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

from ffs.core.allocator import HopArrays, egress_taus, solve
from ffs.lab.cli.sim import main as sim_cli
from ffs.lab.network import study
from ffs.lab.network.distribution import Distribution, describe
from ffs.lab.network.fixedpoint import DAMPING, Checkpoint, Driver
from ffs.lab.network.graph import CAP_MAX, CAP_MIN, ASGraph, generate, internet, load_caida
from ffs.lab.network.matrices import fairness_share
from ffs.lab.network.part import Part
from ffs.lab.network.pool import LocalPool
from ffs.lab.network.report import Options, run

G = 1e9


def graph(edges: list[tuple[int, int]], caps: list[float]) -> ASGraph:
    n = 1 + max(max(e) for e in edges)
    e = np.array(edges)
    return ASGraph(tuple(map(str, range(n))), e[:, 0], e[:, 1], np.array(caps) * G)


def test_fairness_matrix_as_section_vii_b():
    # AS 0 with links to 1 (100 G), 2 (40 G), 3 (400 G). Egress toward 1 (C = 100): entries
    # local 10, from 2: 40, from 3: 400 -> 450 > 100, scaled by 100/450: local 2.22, 8.89, 88.9.
    # Egress toward 3 (C = 400): local 40, 100, 40 -> 180 < 400, the local interface gets the
    # rest: 400 - 140 = 260.
    g = graph([(0, 1), (0, 2), (0, 3)], [100, 40, 400])
    link_cap = np.r_[g.capacity, g.capacity]
    local = 2 * len(g.u)
    to1, to3, from2, from3, from1 = 0, 2, 1 + 3, 2 + 3, 0 + 3
    m = fairness_share(
        g, np.array([local, from2, from3, local, from1, from2]), np.array([to1, to1, to1, to3, to3, to3]), link_cap
    )
    s = 100 / 450
    assert m == pytest.approx([10 * s * G, 40 * s * G, 400 * s * G, 260 * G, 100 * G, 40 * G], rel=1e-12)
    assert sum(m[:3]) == pytest.approx(100 * G) and sum(m[3:]) == pytest.approx(400 * G)  # Σ M = C_j = T_j


def test_degree_gravity_capacities_in_range():
    g = generate(300, seed=3)
    deg = g.degrees()
    prod = deg[g.u] * deg[g.v]
    assert g.capacity.min() >= CAP_MIN and g.capacity.max() == pytest.approx(CAP_MAX)
    # proportional to the degree product where not clipped at 40 Gb/s
    free = g.capacity > CAP_MIN
    assert np.allclose(g.capacity[free] / prod[free], CAP_MAX / prod.max())


def built(n: int, fraction: float, seed: int, aggregate: bool = True, parts: int = 1) -> tuple[ASGraph, LocalPool]:
    g = generate(n, seed=seed)
    pool = LocalPool(g, fraction, seed, aggregate, parts)
    study.build(pool, g, chunk=37)  # chunks that do not divide the partitions
    return g, pool


def test_pairs_and_shortest_paths_are_shortest_and_connected():
    g, pool = built(150, 0.2, 5, parts=2)
    k = round(0.2 * 149)
    ref = nx.Graph(list(zip(g.u.tolist(), g.v.tolist(), strict=False)))
    rng = np.random.default_rng(5)
    keys = rng.random((150, 150))  # §VII-B: each AS sends to 20 % of the others, chosen at random
    np.fill_diagonal(keys, np.inf)
    streams = 0
    for part, (lo, hi) in zip(pool.parts, pool.ranges, strict=True):
        fo = part.forest
        assert len(fo.stream_edge) == (hi - lo) * k
        for s, e in enumerate(fo.stream_edge):
            src = lo + s // k
            path = []
            while e >= 0:
                assert fo.src[e] == src
                path.append(int(fo.head[e]))
                e = fo.parent[e]
            path = [src, *path[::-1]]
            assert path[-1] in np.argsort(keys[src])[:k]  # one of the source's k lowest keys
            assert all(ref.has_edge(a, b) for a, b in zip(path, path[1:], strict=False))
            assert len(path) - 1 == fo.stream_len[s] == nx.shortest_path_length(ref, src, path[-1])
            streams += 1
    assert streams == 150 * k


def oracle_rates(g: ASGraph, pool: LocalPool) -> np.ndarray:
    """The exact allocator of ffs.core.allocator (stream by stream, hop by hop) on the pool's paths."""
    stream, pair, egress, demand = [], [], [], []
    share = np.zeros(1 + max(int(own.max()) for own in pool.pairs))
    s = 0
    for part, own in zip(pool.parts, pool.pairs, strict=True):
        share[own] = part.share  # M of the study's pairs (test_fairness_matrix_as_section_vii_b)
        fo = part.forest
        for e in fo.stream_edge:
            hops = []
            while e >= 0:
                hops.append(e)
                e = fo.parent[e]
            for h in hops[::-1]:
                stream.append(s)
                pair.append(own[part.pair[h]])
                egress.append(fo.out_link[h])
            demand.append(g.capacity[fo.out_link[hops[-1]] % len(g.u)])
            s += 1
    cap = np.r_[g.capacity, g.capacity]
    hop = HopArrays(np.array(stream), np.array(pair), np.array(egress), share, cap)
    d = np.array(demand)
    st = solve(hop, d, d, max_rounds=500, rel_tol=1e-9, damping=DAMPING)
    last = np.r_[hop.first[1:], len(hop.stream)] - 1
    return st.rate_out[last]


@pytest.mark.parametrize("aggregate, parts", [(True, 1), (True, 3), (False, 2)])
def test_trees_give_the_exact_allocation_stream_by_stream(aggregate, parts):
    # the streams of a source sharing a path prefix carry the same values along it: one tree edge
    # weighed by its streams gives each of them what the allocator gives it hop by hop
    g, pool = built(120, 0.3, 2, aggregate, parts)
    ffs = study.ffs_allocation(pool, g)
    ref = oracle_rates(g, pool)
    assert ffs.rate == pytest.approx(ref, rel=1e-9)
    sizes = pool.call("sizes")
    hops = sum(x["stream_hops"] for x in sizes)
    if aggregate:  # shared prefixes: fewer edges than stream-hops
        assert sum(x["edges"] for x in sizes) < hops / 1.5
    else:
        assert sum(x["edges"] for x in sizes) == hops


@pytest.mark.parametrize("start", ["cold", "above", "below"])
def test_newton_tau_is_the_root_of_eq2(start):
    # τ_j by Newton steps over the partitions' sums against ffs.core.allocator.egress_taus's root from
    # the sorted breakpoints, every tree edge repeated once per stream over it; from no guess,
    # from 3 times the root and from a third of it
    g, pool = built(120, 0.3, 2, parts=2)
    cap = np.r_[g.capacity, g.capacity]
    driver = Driver(pool, cap)
    big_f, offered = driver.pair_sums(pool.call("begin"))
    congested = offered > cap
    tau = driver.taus(big_f, congested)  # from no guess; each partition's f (Eq. 1) on the way
    parts = [p.forest for p in pool.parts]
    w = [fo.weight.astype(int) for fo in parts]
    e = np.concatenate([np.repeat(fo.out_link, k) for fo, k in zip(parts, w, strict=True)])
    r = np.concatenate([np.repeat(p.rate_in, k) for p, k in zip(pool.parts, w, strict=True)])
    f = np.concatenate([np.repeat(p.f, k) for p, k in zip(pool.parts, w, strict=True)])
    ref, _, ref_congested = egress_taus(e, r, f, cap)
    assert np.array_equal(congested, ref_congested) and np.isfinite(ref).sum() > 20
    if start != "cold":
        driver.state.guess = np.where(np.isfinite(ref), ref * (3 if start == "above" else 1 / 3), 0)
        tau = driver.taus(big_f, congested)
    assert np.array_equal(np.isfinite(tau), np.isfinite(ref))
    assert tau[np.isfinite(ref)] == pytest.approx(ref[np.isfinite(ref)], rel=1e-12)
    assert driver.state.newton_steps[-1] > 1  # not a one-step case


def test_ffs_gets_at_least_the_static_share_and_fills_congested_links():
    g, pool = built(120, 0.3, 2, aggregate=False)
    ffs = study.ffs_allocation(pool, g, max_rounds=2)
    assert ffs.residual < 1e-6  # sources reduced to what arrived: the allocation holds
    gma = ffs.static
    # Lemma 1 (τ ≥ 1 at every congested egress): FFS gives every stream at least min over its hops
    # of f, the share GMA reserves for the worst case
    assert np.all(ffs.rate >= gma * (1 - 1e-9))
    assert np.median(ffs.rate) > np.median(gma)
    helia = np.concatenate(pool.call("helia", study.helia_sources(pool)))
    max_rate = np.concatenate([p.max_rate[p.forest.stream_edge] for p in pool.parts])
    assert np.all(helia <= max_rate) and np.all(helia > 0)


def test_deployment_effectiveness():
    g, pool = built(200, 0.2, 4)
    eff = {f: np.concatenate(pool.call("deployment", on)) for f, on in study.deployed(g.n, [0.0, 0.4, 1.0], 4)}
    assert np.all(eff[0.0] == 0) and np.all(eff[1.0] == 1)
    # every AS is deployed with probability 0.4, so a path's expected effectiveness is 0.4 (hubs
    # on many paths make one sample's mean vary: average over samples)
    means = [np.concatenate(pool.call("deployment", study.deployed(g.n, [0.4], k)[0][1])).mean() for k in range(30)]
    assert np.mean(means) == pytest.approx(0.4, abs=0.03)
    lengths = pool.parts[0].forest.stream_len
    assert set(np.round(eff[0.4] * (lengths + 1), 9)) <= set(range(0, 10))  # whole ASes per path


def test_cli_generated_graph(tmp_path):
    res = CliRunner().invoke(
        sim_cli, ["network", "--nodes", "80", "--pairs", "0.25", "--seed", "9", "--out", str(tmp_path), "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["graph"]["nodes"] == 80 and out["streams"] == 80 * 20
    a = out["allocation"]
    assert a["ffs"]["median_gbps"] >= a["glwp"]["median_gbps"]
    assert set(out["deployment"]) == {"0.2", "0.4", "0.6", "0.8"}
    for f in ("network-utilization.png", "deployment.png", "network.json"):
        assert (tmp_path / f).stat().st_size > 0


def test_internet_like_graph(tmp_path):
    g = internet(400, seed=3)
    ref = nx.Graph(list(zip(g.u.tolist(), g.v.tolist(), strict=False)))
    assert g.n == 400 == ref.number_of_nodes() and nx.is_connected(ref)
    deg = g.degrees()
    assert deg.max() > 10 * np.median(deg)  # tier-1 and transit hubs above a mass of stubs
    assert g.capacity.min() >= CAP_MIN and g.capacity.max() == pytest.approx(CAP_MAX)
    res = CliRunner().invoke(
        sim_cli,
        ["network", "--graph", "internet", "--nodes", "200", "--pairs", "0.1", "--out", str(tmp_path), "--json"],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["graph"]["source"].startswith("Internet-like") and out["streams"] == 200 * round(0.1 * 199)


CAIDA = """# a CAIDA-style AS-relationship file
# provider|customer|-1, peer|peer|0
1|2|-1
1|3|-1
2|3|0
3|4|-1
4|5|0
9|10|-1
"""


def test_caida_file(tmp_path):
    f = tmp_path / "rel.txt"
    f.write_text(CAIDA)
    g = load_caida(f)
    assert g.names == ("1", "2", "3", "4", "5")  # the largest connected part; 9-10 dropped
    assert len(g.u) == 5
    top = load_caida(f, top=3)  # the three of highest degree: 3 (3 links), 1, 2 (or 4) ...
    assert "3" in top.names and len(top.names) == 3
    res = CliRunner().invoke(
        sim_cli, ["network", "--caida", str(f), "--pairs", "0.5", "--out", str(tmp_path), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["graph"]["nodes"] == 5


@pytest.mark.parametrize(
    "text, message",
    [
        ("1|2\n", "rel.txt:1: expected 'as1|as2|rel' with integer fields"),
        ("# only comments\n", "rel.txt: no AS relationships"),
        ("1|2|7\n", "rel.txt:1: unknown relationship 7"),
    ],
)
def test_caida_bad_files_one_line(tmp_path, text, message):
    f = tmp_path / "rel.txt"
    f.write_text(text)
    res = CliRunner().invoke(sim_cli, ["network", "--caida", str(f), "--out", str(tmp_path)])
    assert res.exit_code != 0
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_progress_names_the_stages_the_ases_done_and_the_rounds():
    stages, built_at, rounds = [], [], []
    summary, _, _ = run(
        Options(nodes=150, seed=4), stages.append, rounds.append, lambda done, total: built_at.append((done, total))
    )
    assert stages == ["graph", "shortest paths and trees", "FFS rounds", "baselines", "deployment"]
    assert built_at[-1] == (150, 150) and all(a[0] < b[0] for a, b in zip(built_at, built_at[1:], strict=False))
    n = summary["ffs_rounds"]["allocator_rounds"]
    assert [r.split(",")[0] for r in rounds] == [f"round {k}" for k in range(1, n + 1)]


class Stop(Exception):
    pass


def test_checkpoint_resumes_an_interrupted_run(tmp_path):
    opt = Options(nodes=200, seed=3)
    full, _, rates = run(opt, per_stream=True)
    assert full["ffs_rounds"]["allocator_rounds"] > 12

    def stop_at_12(what: str) -> None:
        if what.startswith("round 12,"):
            raise Stop

    cp = tmp_path / "cp"
    with pytest.raises(Stop):
        run(Options(nodes=200, seed=3, checkpoint=Checkpoint(cp, opt.key(), every_s=0)), rounds=stop_at_12)
    assert json.loads((cp / "state.json").read_text())["rounds"] == 11  # saved after every round
    # another seed's run does not take it
    other = run(Options(nodes=200, seed=4, checkpoint=Checkpoint(cp, Options(nodes=200, seed=4).key(), 3600)))[0]
    assert other["ffs_rounds"]["resumed_at_round"] == 0 and (cp / "state.json").exists()
    again, _, rates2 = run(
        Options(nodes=200, seed=3, checkpoint=Checkpoint(cp, opt.key(), every_s=3600)), per_stream=True
    )
    assert again["ffs_rounds"]["resumed_at_round"] == 11
    assert again["ffs_rounds"]["allocator_rounds"] == full["ffs_rounds"]["allocator_rounds"]
    for k in rates:
        assert np.array_equal(rates[k], rates2[k])
    assert not cp.exists()  # a finished run removes its checkpoint


class HeldPool:
    """Partitions holding given values (Part's own methods on them): a pool without the study."""

    def __init__(self, chunks: list[np.ndarray]) -> None:
        self.parts = [SimpleNamespace(held={}, values=lambda c: c) for _ in chunks]
        self.stats = [Part.hold(p, "x", "values", c) for p, c in zip(self.parts, chunks, strict=True)]

    def call(self, method: str, *args):
        return [getattr(Part, method)(p, *args) for p in self.parts]


def test_distribution_order_statistics_and_quantiles_as_numpy():
    # results stay in the partitions: their quantiles, CDF points and point masses come from
    # counts per partition, and must be numpy's on the whole
    rng = np.random.default_rng(7)
    x = np.r_[rng.lognormal(20, 3, 5000), np.zeros(40), np.full(300, 1e9), rng.integers(0, 5, 700) / 4]
    rng.shuffle(x)
    chunks = np.split(x, [17, 3000, 3001])  # uneven, one of a single value
    pool = HeldPool(chunks)
    d = Distribution(pool, "x", pool.stats)
    q = np.r_[0.5, 0.1, 0.9, np.linspace(0, 1, 201)]
    ((quantiles, (cx, cy)),) = describe(pool, [d], q, points=101)
    ((_, (all_x, all_y)),) = describe(pool, [d], q, points=len(x))
    assert d.n == len(x) and d.min == x.min() and d.max == x.max() and d.mean == pytest.approx(x.mean(), rel=1e-12)
    assert quantiles == pytest.approx(np.quantile(x, q), rel=1e-15, abs=0)
    ranks = np.linspace(0, len(x) - 1, 101).astype(int)
    assert np.array_equal(cx, np.sort(x)[ranks]) and np.array_equal(cy, (ranks + 1) / len(x))
    assert np.array_equal(all_x, np.sort(x)) and all_y[-1] == 1
    values, counts = np.unique(np.round(x, 4), return_counts=True)
    assert d.masses(4) == dict(zip(values.tolist(), counts.tolist(), strict=True))
