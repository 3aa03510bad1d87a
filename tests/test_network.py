# SPDX-License-Identifier: Apache-2.0
"""`ffs-sim network` (FFS §VII-B, Appendix C) on small graphs: the matrices as §VII-B builds them,
shortest paths, FFS against the static GMA shares (Lemma 1), the deployment study, and bad input."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

from ffs.cli.sim import main as sim_cli
from ffs.lab.network import study
from ffs.lab.network.graph import CAP_MAX, CAP_MIN, ASGraph, generate, load_caida

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
    m = study.fairness_share(
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


def test_shortest_paths_are_shortest_and_connected():
    g = generate(150, seed=5)
    rng = np.random.default_rng(5)
    src, dst = study.choose_pairs(g.n, 0.2, rng)
    assert len(src) == 150 * round(0.2 * 149) and not np.any(src == dst)
    p = study.shortest_paths(g, src, dst)
    ref = nx.Graph(list(zip(g.u.tolist(), g.v.tolist(), strict=False)))
    for k in range(0, len(p.src), 97):
        path = p.nodes[k, : p.length[k] + 1].tolist()
        assert path[0] == p.src[k] and path[-1] == p.dst[k]
        assert all(ref.has_edge(a, b) for a, b in zip(path, path[1:], strict=False))
        assert p.length[k] == nx.shortest_path_length(ref, p.src[k], p.dst[k])


def test_ffs_gets_at_least_the_static_share_and_fills_congested_links():
    g = generate(120, seed=2)
    rng = np.random.default_rng(2)
    p = study.shortest_paths(g, *study.choose_pairs(g.n, 0.3, rng))
    net = study.build(g, p)
    ffs = study.ffs_allocation(net, max_rounds=2)
    assert ffs.residual < 1e-6  # sources reduced to what arrived: the allocation holds
    gma = study.gma_static(ffs)
    # Lemma 1 (τ ≥ 1 at every congested egress): FFS gives every stream at least min over its hops
    # of f, the share GMA reserves for the worst case
    assert np.all(ffs.rate >= gma * (1 - 1e-9))
    assert np.median(ffs.rate) > np.median(gma)
    helia = study.helia_per_as(net)
    assert np.all(helia <= net.max_rate) and np.all(helia > 0)


def test_deployment_effectiveness():
    g = generate(200, seed=4)
    rng = np.random.default_rng(4)
    p = study.shortest_paths(g, *study.choose_pairs(g.n, 0.2, rng))
    eff = study.deployment(p, g.n, [0.0, 0.4, 1.0], rng)
    assert np.all(eff[0.0] == 0) and np.all(eff[1.0] == 1)
    # every AS is deployed with probability 0.4, so a path's expected effectiveness is 0.4 (hubs
    # on many paths make one sample's mean vary: average over samples)
    means = [study.deployment(p, g.n, [0.4], rng)[0.4].mean() for _ in range(30)]
    assert np.mean(means) == pytest.approx(0.4, abs=0.03)
    assert set(np.round(eff[0.4] * (p.length + 1), 9)) <= set(range(0, 10))  # whole ASes per path


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
