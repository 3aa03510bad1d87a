# SPDX-License-Identifier: Apache-2.0
"""A run over time: every stream's delivered rate per time bin and τ per egress per period, as
`ffs-switch replay --bin-ms` reports it and `--plot` draws it (how a reaction is judged: a flood's
onset, a pulse, a lull)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ffs.switch.trace import TraceResult


def series(
    res: TraceResult, duration_s: float, taus: list[tuple[float, dict[str, tuple[float, bool]]]]
) -> dict[str, Any]:
    """The JSON block: bin edges, bit/s per stream per bin, and τ (∞ while uncongested) per egress
    at each period boundary."""
    nbins = int(round(duration_s / res.bin_s))
    tau: dict[str, list[list[float | None]]] = {}
    for t, row in taus:
        for egress, (value, congested) in sorted(row.items()):
            tau.setdefault(egress, []).append([t, value if congested else None])
    return {
        "bin_s": res.bin_s,
        "t_s": [round(k * res.bin_s, 9) for k in range(nbins)],
        "rates_bps": {s: [float(v) * 8 / res.bin_s for v in d[:nbins]] for s, d in res.delivered.items()},
        "tau": tau,
    }


def plot(block: dict[str, Any], path: Path, title: str) -> Path:
    """Delivered rate per stream (top) and τ per egress (bottom, uncongested periods left blank)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    t = [x * 1e3 for x in block["t_s"]]
    for name, rates in sorted(block["rates_bps"].items()):
        top.step(t, [r / 1e6 for r in rates], where="post", label=name, linewidth=1)
    top.set_ylabel("delivered (Mb/s)")
    top.set_title(title)
    top.legend(loc="upper right", fontsize=8)
    top.grid(alpha=0.3)
    for egress, points in sorted(block["tau"].items()):
        bottom.step(
            [p[0] * 1e3 for p in points],
            [p[1] if p[1] is not None else float("nan") for p in points],
            where="post",
            label=egress,
            linewidth=1,
        )
    bottom.set_ylabel("τ")
    bottom.set_xlabel(f"virtual time (ms), bins of {block['bin_s'] * 1e3:g} ms")
    bottom.set_yscale("log")
    bottom.grid(alpha=0.3)
    if block["tau"]:
        bottom.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
