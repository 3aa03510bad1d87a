# SPDX-License-Identifier: Apache-2.0
"""The paper | ours tables of docs/results.md for the experiments with round-trip times:
Table III from the CCA experiment's summary.json files and Figures 5/6 from the endpoint
experiment's, printed as Markdown. The paper's figures are typed in from FFS §VIII Table III and §IX.

    python bench/rtt_tables.py [--cca docs/results/cca-rtt docs/results/cca-rtt-deep]
        [--endpoint docs/results/endpoint-rtt]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# FFS Table III: F, U, L(2), L(50), J(2), J(50), in %, over the pairs of 15 CCAs (reno not among them)
PAPER_III = {
    "fifo": (30.7, 80.4, 0, 7.1, 0, 7.1),
    "csfq": (72.1, 91.5, 0, 38.1, 0.9, 90.5),
    "ffs-c100": (71.3, 93.9, 0, 36.9, 0.5, 89.3),
    "ffs-c85": (88.5, 79.3, 100, 100, 99.1, 100),
}
# FFS §IX: router drops of the staggered 10 MB transfers, × MinLoss's (Figure 6)
PAPER_STAGGERED = {"minloss": 1.0, "cubic": 2.7, "bbr": 30.2, "mintime": 232.0}
# FFS §IX, Figure 5: loss of the transfers (text: MinLoss 0 % alone, 0.05-1.01 % with two; cubic 0.58-3.32 %)
PAPER_LOSS = {
    "minloss": "0 % alone, 0.05–1.01 % with two",
    "cubic": "0.58–3.32 %",
    "mintime": "highest",
    "bbr": "second highest",
}
SHARED_CCAS = {"cubic", "bbr"}  # the kernel's CCAs that the paper's 15 include


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def metrics(rows: list[dict[str, Any]]) -> tuple[float | None, ...]:
    if not rows:
        return (None,) * 6
    lat = [x["latency_increase_ms"] for x in rows if x["latency_increase_ms"] is not None]
    jit = [x["jitter_ms"] for x in rows if x["jitter_ms"] is not None]

    def share(v: list[float], below: float) -> float | None:
        return sum(x < below for x in v) / len(v) if v else None

    return (
        statistics.mean(x["F"] for x in rows),
        statistics.mean(x["U"] for x in rows),
        share(lat, 2),
        share(lat, 50),
        share(jit, 2),
        share(jit, 50),
    )


def table_iii(summary: dict[str, Any]) -> str:
    out = [
        f"One-way delay {summary['one_way_delay_ms']:g} ms on every switch port, bottleneck queue "
        f"{summary['buffer_bytes']} bytes, {summary['duration_s']:g} s per pair, CCAs {', '.join(summary['ccas'])} "
        f"({summary.get('elapsed_s', '?')} s in all).",
        "",
        "| scheme | | F | U | L(2) | L(50) | J(2) | J(50) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s, paper in PAPER_III.items():
        rows = [x for x in summary["pairs"] if x["scheme"] == s]
        if not rows:
            continue
        shared = [x for x in rows if {x["cca1"], x["cca2"]} <= SHARED_CCAS]
        out.append(f"| {s} | paper (15 CCAs) | " + " | ".join(f"{v:g} %" for v in paper) + " |")
        out.append(f"| | ours, {len(rows)} pairs | " + " | ".join(pct(v) for v in metrics(rows)) + " |")
        out.append(f"| | ours, cubic/bbr pairs ({len(shared)}) | " + " | ".join(pct(v) for v in metrics(shared)) + " |")
    out += [
        "",
        "| pair | scheme | base RTT (ms) | throughput 1 / 2 (Mb/s) | F | U | latency increase (ms) | jitter (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in summary["pairs"]:
        lat = "—" if x["latency_increase_ms"] is None else f"{x['latency_increase_ms']:.1f}"
        jit = "—" if x["jitter_ms"] is None else f"{x['jitter_ms']:.1f}"
        out.append(
            f"| {x['cca1']} vs {x['cca2']} | {x['scheme']} | {x['base_rtt_ms']:.1f} | {x['t1_bps'] / 1e6:.2f} / "
            f"{x['t2_bps'] / 1e6:.2f} | {x['F']:.2f} | {x['U']:.2f} | {lat} | {jit} |"
        )
    return "\n".join(out)


def endpoint(summary: dict[str, Any]) -> str:
    names = {"minloss": "MinLoss", "mintime": "MinTime", "cubic": "cubic", "bbr": "bbr", "partial": "partial (cubic)"}
    runs = [r for r in summary["runs"] if r["series"] is None]
    out = [
        f"One-way delay {summary['one_way_delay_ms']:g} ms on every switch port ({summary.get('elapsed_s', '?')} s in "
        "all).",
        "",
        "| scheme: time (s), loss | [1] 1 MB | [1] 10 MB | [2] 1 MB (h1 / h2) | [2] 10 MB (h1 / h2) | paper: loss |",
        "|---|---|---|---|---|---|",
    ]
    for s, name in names.items():
        cells = []
        for streams, nbytes in ((1, 10**6), (1, 10**7), (2, 10**6), (2, 10**7)):
            r = next((r for r in runs if r["scheme"] == s and r["streams"] == streams and r["bytes"] == nbytes), None)
            if r is None:
                cells.append("—")
                continue
            t = " / ".join(f"{x['transfer_s']:.2f}" for x in r["transfers"])
            cells.append(f"{t}, {100 * r['loss']:.2f} %")
        if any(c != "—" for c in cells):
            out.append(f"| {name} | " + " | ".join(cells) + f" | {PAPER_LOSS.get(s, '—')} |")
    stag = {r["scheme"]: r for r in summary["runs"] if r["series"] is not None}
    base = stag.get("minloss", {}).get("router_drops")
    out += [
        "",
        "| scheme | router drops | × MinLoss | paper × MinLoss | transfer times h1 / h2 (s) |",
        "|---|---|---|---|---|",
    ]
    for s in sorted(stag, key=lambda k: stag[k]["router_drops"]):
        r = stag[s]
        ratio = f"{r['router_drops'] / base:.1f}" if base else "—"
        paper = f"{PAPER_STAGGERED[s]:g}" if s in PAPER_STAGGERED else "—"
        t = " / ".join(f"{x['transfer_s']:.2f}" for x in r["transfers"])
        out.append(f"| {names.get(s, s)} | {r['router_drops']} | {ratio} | {paper} | {t} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--cca", nargs="*", default=[str(ROOT / "docs/results/cca-rtt"), str(ROOT / "docs/results/cca-rtt-deep")]
    )
    ap.add_argument("--endpoint", default=str(ROOT / "docs/results/endpoint-rtt"))
    a = ap.parse_args()
    for d in a.cca:
        f = Path(d) / "summary.json"
        if f.exists():
            print(f"### Table III, {Path(d).name}\n\n{table_iii(json.loads(f.read_text()))}\n")
    f = Path(a.endpoint) / "summary.json"
    if f.exists():
        print(f"### Figures 5 and 6, {Path(a.endpoint).name}\n\n{endpoint(json.loads(f.read_text()))}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
