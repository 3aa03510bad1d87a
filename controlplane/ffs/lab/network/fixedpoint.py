# SPDX-License-Identifier: Apache-2.0
"""The exact FFS allocation of the network study, round by round over the partitions of a pool
(`ffs.lab.network.pool`): the rounds of `ffs.core.allocator.solve` (Eq. 1, Eq. 2 with τ per egress, to
a fixed point), their sums taken over all partitions, and checkpoints between rounds.

τ_j is the root of g_j(τ) = Σ w·min(r, f·τ) − T_j (Eq. 2), piecewise linear, increasing and
concave. Newton's step from any τ, τ' = (T_j − Σ_{r/f ≤ τ} w·r) / Σ_{r/f > τ} w·f, lands at or
below the root (concave: the tangent lies above g); from below, each step is the exact root of the
piece it stands on, so the steps rise to the root and stop when a step stays put: the same root
`ffs.core.allocator.egress_taus` takes from its sorted breakpoints, and each step needs only two sums
per egress from every partition, which is what lets the partitions live on other machines. It
starts from the egress's τ of the round before (few steps once the rounds settle)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ffs.lab.network.pool import Pool

INF = np.inf
DAMPING = 0.7  # τ steps of the rounds (`ffs.core.allocator.solve`): same fixed point, fewer rounds
MAX_ROUNDS = 500
REL_TOL = 1e-9  # a round that moves no hop input by more than this, relative, is the fixed point


def _sum(parts: list[Any], k: int | None = None) -> np.ndarray:
    out = parts[0] if k is None else parts[0][k]
    for p in parts[1:]:
        out = out + (p if k is None else p[k])
    return np.asarray(out)


@dataclass
class Rounds:
    """What the driver keeps between rounds: τ as damped (for the next damping step) and as
    solved (the next Newton start), and the counters."""

    tau: np.ndarray | None = None
    guess: np.ndarray | None = None
    rounds: int = 0  # allocator rounds in all
    source_round: int = 1
    residual: float = INF  # the sources' largest move in their last round
    solved: bool = False  # the current source round's fixed point is reached
    newton_steps: list[int] = field(default_factory=list)


class Driver:
    """Runs the rounds over `pool` with targets T_j (`target`, per directed link)."""

    def __init__(self, pool: Pool, target: np.ndarray, progress: Callable[[str], None] | None = None) -> None:
        self.pool, self.target, self.progress = pool, target, progress
        self.state = Rounds()
        self.sums: tuple[np.ndarray, np.ndarray] | None = None  # F^pre and R_*j of the rounds' state

    def pair_sums(self, got: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """F^pre per pair of the study and R_*j per egress from the partitions' parts (each
        partition's F^pre over its own pairs, `pool.pairs`)."""
        big_f = np.zeros(max((int(own[-1]) + 1 for own in self.pool.pairs if len(own)), default=0))
        for own, (part_f, _) in zip(self.pool.pairs, got, strict=True):
            big_f[own] += part_f
        return big_f, _sum(got, 1)

    def taus(self, big_f: np.ndarray, congested: np.ndarray) -> np.ndarray:
        """τ_j of every egress (Eq. 2), by Newton steps over the partitions' piece sums."""
        target = self.target
        tau = np.full(len(target), INF)
        tau[congested & (target <= 0)] = 0.0
        live = congested & (target > 0)
        guess = self.state.guess if self.state.guess is not None else np.zeros(len(target))
        t = np.where(live & np.isfinite(guess) & (guess > 0), guess, 0.0)
        got = self.pool.call_each("shares", [(big_f[own], live, t) for own in self.pool.pairs])
        live &= _sum(got, 0) > target  # the streams with a share cannot fill T_j: τ_j = ∞
        below, above = _sum(got, 1), _sum(got, 2)
        active, stepped = live.copy(), np.zeros(len(target), dtype=bool)
        steps = 0
        while True:
            with np.errstate(invalid="ignore", divide="ignore"):
                new = np.where(above > 0, (target - below) / above, np.where(stepped, t, 0.0))
            done = active & stepped & (new <= t)  # the step stayed put (or rounding moved it down)
            tau[done] = new[done]
            active &= ~done
            if not active.any():
                break
            steps += 1
            if steps > 10 * len(target) + 100:
                raise RuntimeError("Newton's steps for tau did not settle")
            t = np.where(active, new, t)
            stepped |= active
            got = self.pool.call("tau_sums", t, active)
            below, above = _sum(got, 0), _sum(got, 1)
        self.state.newton_steps.append(steps)
        self.state.guess = tau.copy()
        return tau

    def round(self) -> float:
        """One round of Eq. 1 and Eq. 2 at every edge of every partition; the largest move."""
        if self.sums is None:
            self.sums = self.pair_sums(self.pool.call("begin"))
        big_f, offered = self.sums
        congested = offered > self.target
        tau = self.taus(big_f, congested)
        prev = self.state.tau
        if DAMPING < 1 and prev is not None:
            both = np.isfinite(tau) & np.isfinite(prev) & (tau > 0) & (prev > 0)
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                tau = np.where(both, prev ** (1 - DAMPING) * tau**DAMPING, tau)
        got = self.pool.call("advance", tau, congested)  # and the next round's sums: one call fewer
        worst = max(g[0] for g in got)
        self.sums = self.pair_sums([g[1:] for g in got])
        self.state.tau = tau
        self.state.rounds += 1
        return float(worst)

    def solve(self, on_round: Callable[[], None] = lambda: None) -> float:
        """Rounds to the fixed point (REL_TOL), at most MAX_ROUNDS in this source round."""
        worst = INF
        for _ in range(MAX_ROUNDS):
            worst = self.round()
            if self.progress:
                self.progress(f"round {self.state.rounds}, hop inputs moved {worst:.1e}")
            if worst <= REL_TOL:
                break
            on_round()
        self.state.solved = True
        return worst


@dataclass
class Checkpoint:
    """A directory of the rounds' state: the driver's in `driver.npz` and `state.json`, each
    partition's in `part-K.npz` (written by the partition: on a cluster of several machines, a
    directory they all reach). `key` names the run; a checkpoint of another key is not used."""

    directory: Path
    key: dict[str, Any]
    every_s: float
    last: float = 0.0
    mine: bool = False  # this run loaded or wrote the files (another run's are left alone)

    def _manifest(self) -> Path:
        return self.directory / "state.json"

    def load(self, pool: Pool) -> Rounds | None:
        """The saved state if it is this run's (the partitions get theirs), else None."""
        try:
            saved = json.loads(self._manifest().read_text())
        except (OSError, ValueError):
            return None
        if saved.get("key") != self.key or saved.get("parts") != len(pool.ranges):
            return None
        with np.load(self.directory / "driver.npz") as z:
            tau, guess = z["tau"], z["guess"]
        pool.call_each("load", [(str(self.directory / f"part-{k}.npz"),) for k in range(len(pool.ranges))])
        self.mine = True
        return Rounds(
            tau=tau,
            guess=guess,
            rounds=saved["rounds"],
            source_round=saved["source_round"],
            residual=INF if saved["residual"] is None else saved["residual"],
            solved=saved["solved"],
        )

    def save(self, pool: Pool, st: Rounds) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.mine = True
        pool.call_each("save", [(str(self.directory / f"part-{k}.npz"),) for k in range(len(pool.ranges))])
        assert st.tau is not None and st.guess is not None
        np.savez(self.directory / "driver.tmp.npz", tau=st.tau, guess=st.guess)
        (self.directory / "driver.tmp.npz").replace(self.directory / "driver.npz")
        state = {
            "key": self.key,
            "parts": len(pool.ranges),
            "rounds": st.rounds,
            "source_round": st.source_round,
            "residual": st.residual if np.isfinite(st.residual) else None,
            "solved": st.solved,
        }
        tmp = self.directory / "state.tmp.json"
        tmp.write_text(json.dumps(state))
        tmp.replace(self._manifest())

    def clear(self) -> None:
        if not self.mine:
            return
        for f in ("state.json", "driver.npz", *(p.name for p in self.directory.glob("part-*.npz"))):
            (self.directory / f).unlink(missing_ok=True)
        if self.directory.is_dir() and not any(self.directory.iterdir()):
            self.directory.rmdir()
