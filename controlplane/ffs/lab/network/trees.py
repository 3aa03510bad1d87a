# SPDX-License-Identifier: Apache-2.0
"""The study's streams as trees of shared hops (FFS §VII-B at scale).

Every stream of a source starts at the source's maximum rate with the same labels, and a hop's
values (Eq. 1, Eq. 2) depend only on what arrives from upstream: streams of one source that share
a path prefix carry identical values along it. So the streams of a source are kept as the union of
their shortest paths, a tree rooted at the source, each edge weighted by the streams over it; Eq.
1's sums and Eq. 2's τ weigh each edge by its streams. With `aggregate=False` every stream is its
own chain (weight 1): what the sources' later rounds need, when the rates of streams sharing a
prefix part (`ffs.lab.network.fixedpoint`).

Sources are built in chunks of rows (`Builder.add`): one BFS per source (scipy, in C), its
destinations from the same random keys as one (n, n) draw would give (PCG64 advanced to the
chunk's first row), so a partition of the sources builds exactly its share of one run's streams."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from ffs.lab.network.graph import ASGraph


def destinations_per_source(n: int, fraction: float) -> int:
    """§VII-B: every AS sends to round(fraction · (n − 1)) others."""
    if not 0 < fraction <= 1:
        raise ValueError(f"pair fraction must be in (0, 1], got {fraction}")
    return max(1, round(fraction * (n - 1)))


def destinations(n: int, fraction: float, seed: int, lo: int, hi: int) -> np.ndarray:
    """The destinations of sources lo..hi-1, (hi − lo, k): a random ranking of the other nodes per
    source (row s of one rng.random((n, n)) draw), its k first. Rows of one draw are consecutive
    in the generator's stream, so a chunk advances the generator to its first row."""
    k = destinations_per_source(n, fraction)
    bits = np.random.PCG64(seed)
    bits.advance(lo * n)  # one 64-bit draw per double
    keys = np.random.Generator(bits).random((hi - lo, n))
    keys[np.arange(hi - lo), np.arange(lo, hi)] = np.inf
    if k < n - 1:
        return np.argpartition(keys, k - 1, axis=1)[:, :k]
    return np.argsort(keys, axis=1)[:, :k]


def rng_after_pairs(n: int, seed: int) -> np.random.Generator:
    """The generator as it stands after all the sources' destinations were drawn."""
    bits = np.random.PCG64(seed)
    bits.advance(n * n)
    return np.random.Generator(bits)


@dataclass
class Forest:
    """A partition's streams as edges, sorted by depth (`level[d]`..`level[d+1]` at depth d + 1),
    so every edge's parent comes in an earlier level."""

    level: np.ndarray  # starts of the depth levels, and the edge count at the end
    parent: np.ndarray  # the edge before, -1 at depth 1 (leaving the source)
    src: np.ndarray  # the tree's source AS
    head: np.ndarray  # the AS the edge enters
    out_link: np.ndarray  # directed link (the egress of the edge's tail AS)
    pair_key: np.ndarray  # (ingress code, egress link) as ingress · 2E + egress; ingress 2E + AS is local
    weight: np.ndarray  # streams over the edge
    stream_edge: np.ndarray  # per stream: the edge entering its destination
    stream_len: np.ndarray  # per stream: links on its path

    @property
    def edges(self) -> int:
        return len(self.parent)


def _adjacency(g: ASGraph) -> csr_matrix:
    return csr_matrix((np.ones(2 * len(g.u)), (np.r_[g.u, g.v], np.r_[g.v, g.u])), shape=(g.n, g.n))


class Builder:
    """Builds a partition's `Forest` chunk by chunk of sources."""

    def __init__(self, g: ASGraph, fraction: float, seed: int, aggregate: bool) -> None:
        self.g, self.fraction, self.seed, self.aggregate = g, fraction, seed, aggregate
        self.adj = _adjacency(g)
        key = np.r_[g.u * g.n + g.v, g.v * g.n + g.u]  # (tail, head) -> directed link id
        self.link_order = np.argsort(key)
        self.link_key = key[self.link_order]
        self.parts: list[dict[str, np.ndarray]] = []
        self.n_edges = 0

    def link(self, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
        out: np.ndarray = self.link_order[np.searchsorted(self.link_key, tail * self.g.n + head)]
        return out

    def add(self, lo: int, hi: int) -> int:
        """Sources lo..hi-1: their trees (or chains), appended; returns their stream count."""
        n = self.g.n
        dst = destinations(n, self.fraction, self.seed, lo, hi)
        dist, pred = shortest_path(
            self.adj, unweighted=True, directed=False, return_predecessors=True, indices=np.arange(lo, hi)
        )
        k = dst.shape[1]
        row = np.repeat(np.arange(hi - lo), k)
        d = dst.ravel()
        length = dist[row, d]
        keep = np.isfinite(length)  # pairs in different components have no path
        row, d, length = row[keep], d[keep], length[keep].astype(np.intp)
        tree = row if self.aggregate else np.arange(len(row))
        keys = self._walk(tree, row, d, pred, lo)
        uk, weight = np.unique(keys, return_counts=True)
        t, head = uk // n, uk % n
        r = t if self.aggregate else row[t]
        tail = pred[r, head].astype(np.intp)
        depth = dist[r, head].astype(np.intp)
        src = r + lo
        out_link = self.link(tail, head)
        parent = np.where(tail == src, -1, np.searchsorted(uk, t * n + tail))
        self.parts.append(
            {
                "parent": np.where(parent >= 0, parent + self.n_edges, -1),
                "depth": depth.astype(np.int16),
                "src": src.astype(np.int32),
                "head": head.astype(np.int32),
                "out_link": out_link.astype(np.int32),
                "weight": weight.astype(float),
                "stream_edge": np.searchsorted(uk, tree * n + d) + self.n_edges,
                "stream_len": length.astype(np.int16),
            }
        )
        self.n_edges += len(uk)
        return len(d)

    @staticmethod
    def _walk(tree: np.ndarray, row: np.ndarray, node: np.ndarray, pred: np.ndarray, lo: int) -> np.ndarray:
        """tree · n + AS for every AS on every path but the source (destination first)."""
        n = pred.shape[1]
        out = []
        while len(node):
            out.append(tree * n + node)
            up = pred[row, node]
            more = up != row + lo
            tree, row, node = tree[more], row[more], up[more].astype(np.intp)
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def finish(self) -> Forest:
        """The chunks as one forest, sorted by depth."""
        cat = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]} if self.parts else {}
        self.parts = []
        if not cat:
            z = np.zeros(0, dtype=np.intp)
            return Forest(np.zeros(1, dtype=np.intp), z, z, z, z, z.astype(np.int64), z.astype(float), z, z)
        order = np.argsort(cat["depth"], kind="stable")
        where = np.empty_like(order)
        where[order] = np.arange(len(order))
        parent = cat.pop("parent")[order]
        parent = np.where(parent >= 0, where[np.maximum(parent, 0)], -1).astype(np.int32)
        depth = cat["depth"][order]
        level = np.searchsorted(depth, np.arange(1, int(depth.max()) + 2))
        out_link = cat["out_link"][order]
        src = cat["src"][order]
        n_dir = 2 * len(self.g.u)
        ingress = np.where(parent >= 0, out_link[np.maximum(parent, 0)], n_dir + src)
        return Forest(
            level=level,
            parent=parent,
            src=src,
            head=cat["head"][order],
            out_link=out_link,
            pair_key=ingress.astype(np.int64) * n_dir + out_link,
            weight=cat["weight"][order],
            stream_edge=where[cat["stream_edge"]].astype(np.int32),
            stream_len=cat["stream_len"],
        )
