# SPDX-License-Identifier: Apache-2.0
"""`ffs-sim network`: run the §VII-B and Appendix C studies end to end and write JSON and plots."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ffs.lab.network import study
from ffs.lab.network.fixedpoint import Checkpoint
from ffs.lab.network.graph import ASGraph, generate, internet, load_caida
from ffs.lab.network.pool import open_pool
from ffs.lab.network.trees import destinations_per_source, rng_after_pairs

PAPER = {  # FFS §VII-B (Figure 4, CAIDA top 2000) and Appendix C (Figure 10, 40 % deployed)
    "median_gbps": {"ffs": 5.97, "helia": 5.62, "glwp": 0.64},
    "deployment_40pct": {"0.33": 0.30, "0.5": 0.10, "0.66": 0.28, "0.75": 0.03},
}
QUANTILES = np.linspace(0, 1, 201)
PLOT_POINTS = 1_000_000  # a CDF of more values is drawn through this many of its order statistics


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


def _stats(x: np.ndarray) -> dict[str, float]:
    g = x / 1e9
    return {
        "median_gbps": float(np.median(g)),
        "mean_gbps": float(g.mean()),
        "p10_gbps": float(np.quantile(g, 0.1)),
        "p90_gbps": float(np.quantile(g, 0.9)),
        "min_gbps": float(g.min()),
        "max_gbps": float(g.max()),
    }


def _masses(eff: np.ndarray) -> dict[str, float]:
    """Share of paths at each effectiveness value (Appendix C reports them as point masses)."""
    vals, counts = np.unique(np.round(eff, 4), return_counts=True)
    return {f"{v:.4g}": float(c) / len(eff) for v, c in zip(vals, counts, strict=False)}


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


def run(
    opt: Options,
    stage: Callable[[str], None] = lambda s: None,
    rounds: Callable[[str], None] | None = None,
    built: Callable[[int, int], None] = lambda done, total: None,
) -> tuple[dict, dict[str, np.ndarray], dict[float, np.ndarray]]:
    """The study end to end: `stage` names each stage as it starts, `built` gets the sources whose
    trees are built, `rounds` the allocator's rounds."""
    t0 = time.perf_counter()
    stage("graph")
    g = _graph(opt)
    destinations_per_source(g.n, opt.pairs)  # a bad fraction fails before any work
    pool = open_pool(opt.cluster, g, opt.pairs, opt.seed, aggregate=opt.source_rounds == 1)
    try:
        stage("shortest paths and trees")
        sizes = study.build(pool, g, progress=lambda done: built(done, g.n))
        stage("FFS rounds")
        ffs = study.ffs_allocation(pool, g, max_rounds=opt.source_rounds, progress=rounds, checkpoint=opt.checkpoint)
        stage("baselines")
        rates = {"ffs": ffs.rate, "helia": study.helia_per_as(pool), "glwp": ffs.static}
        stage("deployment")
        eff = study.deployment(pool, g.n, list(opt.deploy), rng_after_pairs(g.n, opt.seed))
    finally:
        where = pool.where
        pool.close()
    if opt.checkpoint:
        opt.checkpoint.clear()
    lengths = sizes["stream_hops"] / sizes["streams"]
    summary = {
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
        "path_links": {"mean": lengths, "max": sizes["len_max"]},
        "allocation": {k: _stats(v) for k, v in rates.items()},
        "ffs_rounds": {
            "source_rounds": ffs.rounds,
            "allocator_rounds": ffs.hop_rounds,
            "residual": ffs.residual,
            "resumed_at_round": ffs.resumed_at,
        },
        "computed_in": where,
        "cdf_gbps": {
            "quantile": QUANTILES.tolist(),
            **{k: (np.quantile(v, QUANTILES) / 1e9).tolist() for k, v in rates.items()},
        },
        "deployment": {
            f"{f:g}": {
                "mean": float(e.mean()),
                "share_at": _masses(e),
                "cdf": {"quantile": QUANTILES.tolist(), "effectiveness": np.quantile(e, QUANTILES).tolist()},
            }
            for f, e in eff.items()
        },
        "paper": PAPER,
        "elapsed_s": time.perf_counter() - t0,
    }
    return summary, rates, eff


def _cdf_png(
    path: Path, series: list[tuple[np.ndarray, str]], xlabel: str, ylabel: str, title: str, logx: bool = False
) -> Path:
    """One figure of empirical CDFs (a step per sorted value), saved as `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for values, label in series:
        x = np.sort(values)
        rank = np.arange(len(x))
        if len(x) > PLOT_POINTS:  # evenly spaced ranks, the last included: the same curve at any dpi
            rank = np.linspace(0, len(x) - 1, PLOT_POINTS).astype(np.intp)
        ax.step(x[rank], (rank + 1) / len(x), where="post", label=label)
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


def plot(out: Path, rates: dict[str, np.ndarray], eff: dict[float, np.ndarray], title: str) -> list[Path]:
    labels = {"ffs": "FFS", "helia": "Helia (per-AS)", "glwp": "GLWP (GMA, static)"}
    per_stream = [(v / 1e9, f"{labels[k]}: median {np.median(v / 1e9):.3g} Gb/s") for k, v in rates.items()]
    deployed = [(e, f"{100 * f:g} % of ASes deploy FFS") for f, e in eff.items()]
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
