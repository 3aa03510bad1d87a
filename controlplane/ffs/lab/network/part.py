# SPDX-License-Identifier: Apache-2.0
"""One partition of the network study's sources and the steps of an allocator round over its
edges (`ffs.lab.network.fixedpoint` runs the rounds; a partition lives in this process or in a
worker of a cluster, `ffs.lab.network.pool`).

The steps are those of `ffs.core.allocator.solve` with every stream-hop replaced by a tree edge weighed
by its streams (`ffs.lab.network.trees`): the partial sums a round needs from every partition
(F^pre per pair, R_*j and Eq. 2's piece sums per egress), then the rates and labels run down the
trees. Sums over a partition's edges come back per egress (whole-size) and per pair for the
partition's own pairs; the driver adds them up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ffs.lab.network.graph import ASGraph
from ffs.lab.network.matrices import fairness_share
from ffs.lab.network.trees import Builder, Forest

INF = np.inf


def rel_change(a: np.ndarray, b: np.ndarray) -> float:
    """The largest relative move between a and b, both ≥ 0 (as `ffs.core.allocator.solve` measures a
    round: 0 where they are equal)."""
    d = np.abs(a - b)
    np.divide(d, np.maximum(a, b), out=d, where=d > 0)
    return float(d.max()) if len(d) else 0.0


class Part:
    """A partition: its forest, the per-edge state of the rounds, and the steps."""

    def __init__(self, g: ASGraph, fraction: float, seed: int, aggregate: bool) -> None:
        self.g, self.n_as, self.n_dir = g, g.n, 2 * len(g.u)
        self.link_cap = np.r_[g.capacity, g.capacity]
        self.builder: Builder | None = Builder(g, fraction, seed, aggregate)
        self.forest: Forest | None = None
        self.held: dict[str, np.ndarray] = {}  # per-stream results kept here (`distribution`)

    # building ------------------------------------------------------------------------------
    def build(self, lo: int, hi: int) -> int:
        """Sources lo..hi-1 into the forest; their stream count."""
        assert self.builder is not None
        return self.builder.add(lo, hi) if hi > lo else 0

    def finish(self) -> np.ndarray:
        """Closes the forest; the pair keys its edges use (sorted, unique)."""
        assert self.builder is not None
        self.forest = self.builder.finish()
        self.builder = None
        fo = self.forest
        self.lv = [slice(int(a), int(b)) for a, b in zip(fo.level[:-1], fo.level[1:], strict=False)]
        self.up = [fo.parent[s] for s in self.lv]  # each level's parents
        # the source's maximum rate (its first link) reaches every edge of its tree
        self.max_rate = self.down(self.link_cap[fo.out_link], lambda above, here: above)
        self.demand = self.max_rate.copy()  # what the sources send: their maximum rate, then what arrived
        self.stream_demand = self.demand[fo.stream_edge]
        self.rate_in = self.demand.copy()
        self.f_pre = self.demand.copy()
        self.keys: np.ndarray = np.unique(fo.pair_key)
        return self.keys

    def set_pairs(self) -> None:
        """Numbers this partition's own pairs (sorted keys, as `finish` returned them) and gives each
        edge its M (§VII-B): sums per pair cross the network only for the pairs a partition has."""
        fo = self.forest
        assert fo is not None
        keys = self.keys
        self.pair = np.searchsorted(keys, fo.pair_key).astype(np.int32)
        fo.pair_key = fo.pair_key[:0]  # not needed any more
        self.n_pairs = len(keys)
        self.share = fairness_share(self.g, keys // self.n_dir, keys % self.n_dir, self.link_cap)
        self.share_h = self.share[self.pair]
        del self.keys

    def down(self, first: np.ndarray, step: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """A value run down every tree: `first` at depth 1, then step(parent's value, edge's) per level."""
        out = np.empty(len(first), dtype=first.dtype)
        for k, (s, up) in enumerate(zip(self.lv, self.up, strict=False)):
            out[s] = first[s] if k == 0 else step(out[up], first[s])
        return out

    def sizes(self) -> dict[str, float]:
        fo = self.forest
        assert fo is not None
        return {
            "streams": len(fo.stream_len),
            "stream_hops": int(fo.stream_len.sum()),
            "edges": fo.edges,
            "len_max": int(fo.stream_len.max()) if len(fo.stream_len) else 0,
        }

    # a round -------------------------------------------------------------------------------
    def begin(self) -> tuple[np.ndarray, np.ndarray]:
        """Σ w·f^pre per own pair (F^pre) and Σ w·r_in per egress (R_*j), this partition's part."""
        fo = self.forest
        assert fo is not None
        big_f = np.bincount(self.pair, weights=fo.weight * self.f_pre, minlength=self.n_pairs)
        offered = np.bincount(fo.out_link, weights=fo.weight * self.rate_in, minlength=self.n_dir)
        return big_f, offered

    def shares(self, big_f: np.ndarray, live: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, ...]:
        """Eq. 1 with the whole F^pre of the own pairs; then the edges at the `live` (congested) egresses with a share
        and a rate: Σ w·r per egress (can they fill T_j?) and the piece sums at `tau`."""
        fo = self.forest
        assert fo is not None
        bf = big_f[self.pair]
        with np.errstate(invalid="ignore", divide="ignore"):
            self.f = np.where(bf > 0, self.f_pre / bf * self.share_h, 0.0)  # Eq. 1
        act = np.flatnonzero(live[fo.out_link] & (self.f > 0) & (self.rate_in > 0))
        e, w = fo.out_link[act], fo.weight[act]
        r, f = self.rate_in[act], self.f[act]
        self.live = (e, r / f, w * r, w * f)
        fill = np.bincount(e, weights=self.live[2], minlength=self.n_dir)
        return (fill, *self.tau_sums(tau, live))

    def tau_sums(self, tau: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """At the `active` egresses, for τ_j: Σ w·r over edges with r/f ≤ τ_j (unconstrained) and
        Σ w·f over the others (constrained), the linear piece of g_j (Eq. 2) that holds τ_j."""
        e, b, wr, wf = self.live
        keep = active[e]
        if not keep.all():  # the edges of egresses still searching
            e, b, wr, wf = e[keep], b[keep], wr[keep], wf[keep]
            self.live = (e, b, wr, wf)
        le = b <= tau[e]
        below = np.bincount(e, weights=np.where(le, wr, 0.0), minlength=self.n_dir)
        above = np.bincount(e, weights=np.where(le, 0.0, wf), minlength=self.n_dir)
        return below, above

    def advance(self, tau: np.ndarray, congested: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Eq. 2 at every edge, the rates and labels down the trees; the round's largest move and
        the next round's sums (`begin`)."""
        fo = self.forest
        assert fo is not None
        self.live = ()  # type: ignore[assignment]
        tau_h = tau[fo.out_link]
        f = self.f
        with np.errstate(invalid="ignore"):
            cut = np.where((f == 0) | (tau_h == 0), 0.0, f * tau_h)  # 0·∞ = 0: no share, nothing
        cut = np.where(congested[fo.out_link], cut, INF)  # Eq. 2; uncongested: pass
        self.rate_out = self.down(np.minimum(cut, self.demand), lambda above, here: np.minimum(above, here))
        new_in = np.empty_like(self.rate_in)
        new_f_pre = np.empty_like(self.f_pre)
        for k, (s, up) in enumerate(zip(self.lv, self.up, strict=False)):
            new_in[s] = self.demand[s] if k == 0 else self.rate_out[up]
            new_f_pre[s] = self.f_pre[s] if k == 0 else f[up]
        worst = max(rel_change(self.rate_in, new_in), rel_change(self.f_pre, new_f_pre))
        self.rate_in, self.f_pre = new_in, new_f_pre
        return (worst, *self.begin())

    # the sources' rounds and the results ------------------------------------------------------
    def reduce_demand(self) -> float:
        """Every source sends what arrived, its largest relative move (chains only: a stream's own
        edges carry its rate, so the streams of a source may part)."""
        fo = self.forest
        assert fo is not None
        new = np.minimum(self.stream_demand, self.rate_out[fo.stream_edge])
        with np.errstate(invalid="ignore", divide="ignore"):
            moved = np.where(
                new == self.stream_demand, 0.0, np.abs(new - self.stream_demand) / np.maximum(new, self.stream_demand)
            )
        self.stream_demand = new
        root = self.down(np.arange(fo.edges), lambda above, here: above)  # each edge's first edge
        at_root = np.zeros(fo.edges)
        at_root[root[fo.stream_edge]] = new
        self.demand = at_root[root]
        s0 = self.lv[0]
        self.rate_in[s0] = self.demand[s0]
        self.f_pre[s0] = self.demand[s0]
        return float(moved.max()) if len(moved) else 0.0

    def keep_static(self) -> None:
        self.static = self.static_share()

    def static_share_kept(self) -> np.ndarray:
        return self.static

    def rates(self) -> np.ndarray:
        """Per stream: what arrives at its destination."""
        assert self.forest is not None
        out: np.ndarray = self.rate_out[self.forest.stream_edge]
        return out

    def static_share(self) -> np.ndarray:
        """Per stream: min(its maximum rate, the smallest f on its path) (`study.gma_static`)."""
        assert self.forest is not None
        m = self.down(np.minimum(self.f, self.max_rate), lambda above, here: np.minimum(above, here))
        out: np.ndarray = m[self.forest.stream_edge]
        return out

    def helia_sources(self) -> np.ndarray:
        """Per egress: the source ASes with a path through it (sources are split among partitions)."""
        fo = self.forest
        assert fo is not None
        key = fo.out_link.astype(np.int64) * self.n_as + fo.src
        uniq, inv = np.unique(key, return_inverse=True)
        self.per_src = np.bincount(inv, weights=fo.weight)[inv]  # a source's streams through the egress
        return np.bincount(uniq // self.n_as, minlength=self.n_dir)

    def helia(self, n_src: np.ndarray) -> np.ndarray:
        """Per stream: Helia's allocation (`study.helia_sources`) with the whole count of sources per egress."""
        fo = self.forest
        assert fo is not None
        alloc = self.link_cap[fo.out_link] / n_src[fo.out_link] / self.per_src
        m = self.down(np.minimum(alloc, self.max_rate), lambda above, here: np.minimum(above, here))
        out: np.ndarray = m[fo.stream_edge]
        return out

    def deployment(self, on: np.ndarray) -> np.ndarray:
        """Per stream: the share of its on-path ASes (source and destination included) in `on`."""
        fo = self.forest
        assert fo is not None
        first = on[fo.src].astype(np.intp) + on[fo.head]
        count = self.down(np.where(np.arange(fo.edges) < fo.level[1], first, on[fo.head]), lambda a, h: a + h)
        out: np.ndarray = count[fo.stream_edge] / (fo.stream_len + 1)
        return out

    def hold(self, name: str, method: str, *args: object) -> tuple[int, float, float, float]:
        """Keeps `method(*args)`'s per-stream values, sorted, as `name`; their count, sum, min, max."""
        values = np.sort(getattr(self, method)(*args))
        self.held[name] = values
        if not len(values):
            return 0, 0.0, 0.0, 0.0
        return len(values), float(values.sum()), float(values[0]), float(values[-1])

    def count_at_most(self, names: list[str], xs: list[np.ndarray]) -> list[np.ndarray]:
        """For each held result and its candidates: how many of its values are at or below each."""
        return [np.searchsorted(self.held[n], x, side="right") for n, x in zip(names, xs, strict=True)]

    def masses(self, name: str, decimals: int) -> tuple[np.ndarray, np.ndarray]:
        """`name`'s values rounded to `decimals`, each with its count."""
        values, counts = np.unique(np.round(self.held[name], decimals), return_counts=True)
        return values, counts

    @staticmethod
    def peak_rss_mib() -> float | None:
        """This process's peak resident memory (VmHWM: its own, not a forking parent's), MiB."""
        try:
            status = Path("/proc/self/status").read_text()
        except OSError:
            return None
        kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), None)
        return None if kib is None else kib / 1024

    # checkpoints ---------------------------------------------------------------------------
    def save(self, path: str) -> None:
        """The round state, to `path` (written whole, then renamed)."""
        tmp = Path(path + ".tmp.npz")
        arrays = {
            "rate_in": self.rate_in,
            "f_pre": self.f_pre,
            "demand": self.demand,
            "stream_demand": self.stream_demand,
        }
        if hasattr(self, "static"):
            arrays["static"] = self.static
        np.savez(tmp, allow_pickle=False, **arrays)
        tmp.replace(path)

    def load(self, path: str) -> None:
        with np.load(path) as z:
            if len(z["rate_in"]) != len(self.rate_in):
                raise ValueError(f"{path}: the checkpoint's partition has another size")
            self.rate_in, self.f_pre = z["rate_in"], z["f_pre"]
            self.demand, self.stream_demand = z["demand"], z["stream_demand"]
            if "static" in z:
                self.static = z["static"]
