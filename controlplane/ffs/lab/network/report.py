# SPDX-License-Identifier: Apache-2.0
"""`ffs-sim network`: run the §VII-B and Appendix C studies end to end and write JSON and plots."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ffs.lab.network import study
from ffs.lab.network.distribution import Distribution, describe
from ffs.lab.network.fixedpoint import Checkpoint
from ffs.lab.network.graph import ASGraph, generate, internet, load_caida
from ffs.lab.network.pool import open_pool
from ffs.lab.network.trees import destinations_per_source

PAPER = {  # FFS §VII-B (Figure 4, CAIDA top 2000) and Appendix C (Figure 10, 40 % deployed)
    "median_gbps": {"ffs": 5.97, "helia": 5.62, "glwp": 0.64},
    "deployment_40pct": {"0.33": 0.30, "0.5": 0.10, "0.66": 0.28, "0.75": 0.03},
}
QUANTILES = np.linspace(0, 1, 201)
PLOT_POINTS = 2_001  # a CDF is drawn through this many order statistics (every value when fewer)


@dataclass
class Options:
    caida: str | None = None
    top: int = 2000
    nodes: int = 2000
    attach: int = 3
    pairs: float = 0.2
    seed: int = 1
    deploy: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)
    source_rounds: int = 1
    graph: str = "ba"  # generated graph: "ba" (Barabási–Albert) or "internet" (`graph.internet`)
    cluster: str | None = None  # a Dask scheduler's address, or local:N (`ffs.lab.network.pool`)
    checkpoint: Checkpoint | None = None

    def key(self) -> dict[str, object]:
        """What decides the rounds' state: a checkpoint of another key is not resumed."""
        return {
            "caida": self.caida,
            "top": self.top,
            "nodes": self.nodes,
            "attach": self.attach,
            "pairs": self.pairs,
            "seed": self.seed,
            "source_rounds": self.source_rounds,
            "graph": self.graph,
        }


STATS_Q = np.r_[0.5, 0.1, 0.9, QUANTILES]  # the median, p10 and p90, then the CDF's quantiles


def _stats(d: Distribution, q: np.ndarray) -> dict[str, float]:
    """`d`'s figures in Gb/s, `q` its quantiles at STATS_Q."""
    return {
        "median_gbps": float(q[0] / 1e9),
        "mean_gbps": d.mean / 1e9,
        "p10_gbps": float(q[1] / 1e9),
        "p90_gbps": float(q[2] / 1e9),
        "min_gbps": d.min / 1e9,
        "max_gbps": d.max / 1e9,
    }


def _masses(d: Distribution) -> dict[str, float]:
    """Share of paths at each effectiveness value (Appendix C reports them as point masses)."""
    return {f"{v:.4g}": c / d.n for v, c in sorted(d.masses(4).items())}


def _graph(opt: Options) -> ASGraph:
    if opt.caida:
        return load_caida(opt.caida, opt.top)
    if opt.graph == "internet":
        return internet(opt.nodes, opt.seed)
    return generate(opt.nodes, opt.seed, opt.attach)


def _source(opt: Options) -> str:
    if opt.caida:
        return f"CAIDA {opt.caida} (top {opt.top} by degree, largest connected part)"
    if opt.graph == "internet":
        return f"Internet-like (networkx random_internet_as_graph), {opt.nodes} nodes, seed {opt.seed}"
    return f"Barabasi-Albert, {opt.nodes} nodes, attach {opt.attach}, seed {opt.seed}"


SYSTEMS = ("ffs", "helia", "glwp")


def run(
    opt: Options,
    stage: Callable[[str], None] = lambda s: None,
    rounds: Callable[[str], None] | None = None,
    built: Callable[[int, int], None] = lambda done, total: None,
    per_stream: bool = False,
) -> tuple[dict, dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray]]:
    """The study end to end: the summary, a CDF to draw per result (`Distribution.cdf`: "ffs",
    "helia", "glwp", and "deployed F" per deployed fraction) and, with `per_stream`, every
    stream's results gathered here (the same names). `stage` names each stage as it starts,
    `built` gets the sources whose trees are built, `rounds` the allocator's rounds."""
    t0 = time.perf_counter()
    stage("graph")
    g = _graph(opt)
    destinations_per_source(g.n, opt.pairs)  # a bad fraction fails before any work
    pool = open_pool(opt.cluster, g, opt.pairs, opt.seed, aggregate=opt.source_rounds == 1)
    streams: dict[str, np.ndarray] = {}

    def hold(name: str, method: str, *args: object) -> Distribution:
        if per_stream:
            streams[name] = np.concatenate(pool.call(method, *args))
        return Distribution(pool, name, pool.call("hold", name, method, *args))

    try:
        stage("shortest paths and trees")
        sizes = study.build(pool, g, progress=lambda done: built(done, g.n))
        stage("FFS rounds")
        ffs = study.ffs_allocation(pool, g, max_rounds=opt.source_rounds, progress=rounds, checkpoint=opt.checkpoint)
        stage("baselines")
        rates = {
            "ffs": hold("ffs", "rates"),
            "helia": hold("helia", "helia", study.helia_sources(pool)),
            "glwp": hold("glwp", "static_share_kept"),
        }
        stage("deployment")
        eff = {
            f: hold(f"deployed {f:g}", "deployment", on) for f, on in study.deployed(g.n, list(opt.deploy), opt.seed)
        }
        dists = [*rates.values(), *eff.values()]
        described = dict(zip([d.name for d in dists], describe(pool, dists, STATS_Q, PLOT_POINTS), strict=True))
        quantiles = {name: q for name, (q, _) in described.items()}
        summary = _summary(opt, g, sizes, ffs, rates, eff, quantiles, pool.where)
        summary["partition_peak_mib"] = pool.call("peak_rss_mib")  # where each partition ran
        curves = {name: cdf for name, (_, cdf) in described.items()}
    finally:
        pool.close()
    if opt.checkpoint:
        opt.checkpoint.clear()
    summary["elapsed_s"] = time.perf_counter() - t0
    return summary, curves, streams


def _summary(
    opt: Options,
    g: ASGraph,
    sizes: dict[str, float],
    ffs: study.FFSResult,
    rates: dict[str, Distribution],
    eff: dict[float, Distribution],
    q: dict[str, np.ndarray],
    where: str,
) -> dict:
    """The JSON summary; `q[name]`: the quantiles of each result at STATS_Q."""
    n = len(QUANTILES)
    return {
        "graph": {
            "source": _source(opt),
            "nodes": g.n,
            "links": len(g.u),
            "capacity_gbps": {
                "min": float(g.capacity.min() / 1e9),
                "median": float(np.median(g.capacity) / 1e9),
                "max": float(g.capacity.max() / 1e9),
            },
        },
        "pairs_fraction": opt.pairs,
        "seed": opt.seed,
        "streams": sizes["streams"],
        "stream_hops": sizes["stream_hops"],
        "tree_hops": sizes["tree_hops"],
        "matrix_pairs": sizes["pairs"],  # (ingress, egress) pairs on some path: F^pre's length
        "path_links": {"mean": sizes["stream_hops"] / sizes["streams"], "max": sizes["len_max"]},
        "allocation": {k: _stats(d, q[k]) for k, d in rates.items()},
        "ffs_rounds": {
            "source_rounds": ffs.rounds,
            "allocator_rounds": ffs.hop_rounds,
            "residual": ffs.residual,
            "resumed_at_round": ffs.resumed_at,
        },
        "computed_in": where,
        "cdf_gbps": {
            "quantile": QUANTILES.tolist(),
            **{k: (q[k][-n:] / 1e9).tolist() for k in rates},
        },
        "deployment": {
            f"{f:g}": {
                "mean": d.mean,
                "share_at": _masses(d),
                "cdf": {"quantile": QUANTILES.tolist(), "effectiveness": q[d.name][-n:].tolist()},
            }
            for f, d in eff.items()
        },
        "paper": PAPER,
    }


def _cdf_png(
    path: Path,
    series: list[tuple[tuple[np.ndarray, np.ndarray], str]],
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
) -> Path:
    """One figure of empirical CDFs (a step at each order statistic drawn), saved as `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (x, y), label in series:
        ax.step(x, y, where="post", label=label)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot(out: Path, summary: dict, curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str) -> list[Path]:
    labels = {"ffs": "FFS", "helia": "Helia (per-AS)", "glwp": "GLWP (GMA, static)"}
    per_stream = [
        ((curves[k][0] / 1e9, curves[k][1]), f"{labels[k]}: median {summary['allocation'][k]['median_gbps']:.3g} Gb/s")
        for k in SYSTEMS
    ]
    deployed = [(curves[f"deployed {f}"], f"{100 * float(f):g} % of ASes deploy FFS") for f in summary["deployment"]]
    return [
        _cdf_png(
            out / "network-utilization.png",
            per_stream,
            "allocation per stream (Gb/s)",
            "CDF of streams",
            title,
            logx=True,
        ),
        _cdf_png(
            out / "deployment.png",
            deployed,
            "security effectiveness (share of on-path ASes running FFS)",
            "CDF of paths",
            title,
        ),
    ]
