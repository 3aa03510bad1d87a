# SPDX-License-Identifier: Apache-2.0
"""AS-level graphs for the network study (FFS §VII-B): from a CAIDA AS-relationship file, a
generated power-law graph or a generated Internet-like graph, with degree-gravity link capacities."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

GBPS = 1e9
CAP_MIN, CAP_MAX = 40 * GBPS, 400 * GBPS  # FFS §VII-B: link capacities range from 40 to 400 Gb/s


@dataclass(frozen=True)
class ASGraph:
    """An undirected AS graph: nodes 0..n-1 (`names[k]` the AS number or generated index), links
    `u[k]`–`v[k]` with capacity `capacity[k]` (bit/s, both directions)."""

    names: tuple[str, ...]
    u: np.ndarray
    v: np.ndarray
    capacity: np.ndarray

    @property
    def n(self) -> int:
        return len(self.names)

    def degrees(self) -> np.ndarray:
        return np.bincount(np.r_[self.u, self.v], minlength=self.n)


def degree_gravity(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Capacity proportional to the product of the two end degrees (the degree-gravity model),
    scaled so the largest product gets 400 Gb/s and clipped below at 40 Gb/s (FFS §VII-B gives the
    model and the range, not the scaling; proportional-and-clipped is our reading)."""
    deg = np.bincount(np.r_[u, v], minlength=n).astype(float)
    prod = deg[u] * deg[v]
    if len(prod) == 0:
        return prod
    return np.clip(CAP_MAX * prod / prod.max(), CAP_MIN, CAP_MAX)


def _build(names: list[str], u: np.ndarray, v: np.ndarray) -> ASGraph:
    return ASGraph(tuple(names), u.astype(np.intp), v.astype(np.intp), degree_gravity(len(names), u, v))


def generate(n: int, seed: int, attach: int = 3) -> ASGraph:
    """A Barabási–Albert power-law graph of `n` nodes, each new node attaching to `attach` others
    (networkx), standing in for the Internet's power-law degree structure (FFS §VII-B (ii))."""
    import networkx as nx

    if n < 3 or not 1 <= attach < n:
        raise ValueError(f"need at least 3 nodes and 1 <= attach < nodes (got {n} nodes, attach {attach})")
    g = nx.barabasi_albert_graph(n, attach, seed=seed)
    e = np.array(g.edges(), dtype=np.intp).reshape(-1, 2)
    return _build([str(k) for k in range(n)], e[:, 0], e[:, 1])


def internet(n: int, seed: int) -> ASGraph:
    """An Internet-like AS graph of `n` ASes with customer–provider and peer relations (networkx's
    `random_internet_as_graph`: tier-1 clique, transit providers, content providers and stub
    customers, after Elmokashfi et al.), for Internet-like graphs where no CAIDA file is at hand.
    The relations shape the graph; routing stays on shortest paths, as the paper's study routes.
    networkx keeps each provider's transitive customer set, so its memory grows as n²
    (docs/benchmarks.md)."""
    import networkx as nx

    if n < 3:
        raise ValueError(f"need at least 3 nodes (got {n})")
    g = nx.random_internet_as_graph(n, seed=seed)
    g = g.subgraph(max(nx.connected_components(g), key=len))
    index = {a: k for k, a in enumerate(sorted(g.nodes))}
    e = np.array([(index[a], index[b]) for a, b in g.edges()], dtype=np.intp).reshape(-1, 2)
    return _build([str(a) for a in sorted(g.nodes)], e[:, 0], e[:, 1])


def load_caida(path: str | Path, top: int | None = None) -> ASGraph:
    """A CAIDA AS-relationship file (`as1|as2|rel[|source]` lines, `#` comments; rel -1 provider to
    customer, 0 peers). Keeps the `top` ASes of highest degree (the paper: the top 2000 Tier-1 and
    Tier-2 ASes) and the largest connected part of what they span; relationships are not used for
    routing (the paper routes on shortest paths)."""
    import networkx as nx

    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    g = nx.Graph()
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split("|")
        if len(parts) < 3 or not all(p.strip().lstrip("-").isdigit() for p in parts[:3]):
            raise ValueError(f"{path}:{lineno}: expected 'as1|as2|rel' with integer fields, got {line[:60]!r}")
        a, b, rel = parts[0].strip(), parts[1].strip(), int(parts[2])
        if rel not in (-1, 0, 1, 2):
            raise ValueError(f"{path}:{lineno}: unknown relationship {rel} (CAIDA uses -1 and 0)")
        if a != b:
            g.add_edge(a, b)
    if g.number_of_nodes() == 0:
        raise ValueError(f"{path}: no AS relationships")
    if top is not None and top < g.number_of_nodes():
        ranked = sorted(g.degree, key=lambda x: (-x[1], int(x[0])))[:top]
        g = g.subgraph(a for a, _ in ranked)
    g = g.subgraph(max(nx.connected_components(g), key=len))
    if g.number_of_nodes() < 3:
        raise ValueError(f"{path}: fewer than 3 connected ASes")
    names = sorted(g.nodes, key=int)
    index = {a: k for k, a in enumerate(names)}
    edges = np.array([(index[a], index[b]) for a, b in g.edges()], dtype=np.intp).reshape(-1, 2)
    return _build(names, edges[:, 0], edges[:, 1])
