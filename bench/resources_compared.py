# SPDX-License-Identifier: Apache-2.0
"""The Tofino resource comparison of docs/results.md ("Resources beside the published designs"):
FFS alone and composed with l2l3_acl, in the compiler's figures that `make p4-resources` wrote into
docs/pipeline.md, beside the figures the anchors publish, each with its source, converted to the
units of ours (MAU stages, 16 KB SRAM blocks, TCAM blocks). Prints the markdown table.

    python bench/resources_compared.py [--pipeline docs/pipeline.md]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRAM_KB = 16  # a Tofino SRAM block: 1024 words of 128 bits (Cebinae's vm_experiments.md: "16KB each")
TCAM_KB_CEBINAE = 1.28  # what Cebinae's vm_experiments.md counts per TCAM block ("26 TCAM blocks ... <34KB")
TCAM_KB = 512 * 44 / 8 / 1024  # a Tofino TCAM block: 512 entries of 44 bits = 2.75 KB
# Tofino 1's blocks in all: 12 MAU stages of 80 SRAM and 24 TCAM blocks (bf-p4c's mau.resources.log
# prints 7 SRAM blocks as 8.75 % of a stage and 20 TCAM blocks as 83.33 %)
SRAM_ALL, TCAM_ALL = 12 * 80, 12 * 24


def _pct(blocks: float, total: int) -> str:
    return f"{blocks / total:.1%} of Tofino 1"


@dataclass(frozen=True)
class Row:
    design: str
    config: str
    stages: str  # MAU stages the program occupies on Tofino 1 (ingress and egress share them)
    sram_blocks: str
    tcam_blocks: str
    other: str
    source: str


# What the anchors publish, converted to blocks with the sources' own conversions (SRAM_KB,
# TCAM_KB_CEBINAE), so that a block count can be checked against the KB it came from.
CEBINAE_PAPER = {1: (11, 2448, 15), 2: (11, 4096, 34)}  # cache stages -> (stages, SRAM KB, TCAM KB), Table 3
CEBINAE_REPO = {"stages": 12, "sram": 70, "tcam": 26, "vliw": 93, "phv_bits": 1042}  # 2 cache stages
ANCHORS = [
    *(
        Row(
            "Cebinae",
            f"{c} cache stage{'s' if c > 1 else ''}, 4096 slots per port and stage",
            str(st),
            f"{kb / SRAM_KB:.0f} ({kb} KB; {_pct(kb / SRAM_KB, SRAM_ALL)})",
            f"≈{tk / TCAM_KB_CEBINAE:.0f} ({tk} KB; {_pct(tk / TCAM_KB_CEBINAE, TCAM_ALL)})",
            f"PHV {phv} bits, {vliw} VLIW instructions, 64 queues",
            "Cebinae paper, Table 3 (papers/002; SIGCOMM'22), 32-port Tofino",
        )
        for c, (st, kb, tk), phv, vliw in ((1, CEBINAE_PAPER[1], 937, 89), (2, CEBINAE_PAPER[2], 1042, 93))
    ),
    Row(
        "Cebinae",
        "2 cache stages, compiled with bf-sde 9.5.0",
        f"{CEBINAE_REPO['stages']} (stages 0–11 in mau.resources.log)",
        f"{CEBINAE_REPO['sram']} ({CEBINAE_REPO['sram'] * SRAM_KB} KB; {_pct(CEBINAE_REPO['sram'], SRAM_ALL)})",
        f"{CEBINAE_REPO['tcam']} ({_pct(CEBINAE_REPO['tcam'], TCAM_ALL)})",
        f"PHV {CEBINAE_REPO['phv_bits']} bits, {CEBINAE_REPO['vliw']} VLIW instructions",
        "eniac/Cebinae `vm_experiments.md` (commit cebcbdb, 2022-07-02): the mau.resources.log and PHV summary it "
        "quotes",
    ),
    Row(
        "HCSFQ",
        "the testbed program (P4-14)",
        "12 in the ingress (`// stage 0` … `// stage 11` of `main_pipe`), plus `recirc_pipe` for recirculated packets",
        "not published",
        "not published",
        "recirculates (`recirculate(68)`); per-flow rate registers (`NUM_FLOWS` 600) and per-tenant ones (10)",
        "netx-repo/HCSFQ `testbed_code/hcsfq/p4src/hcsfq.p4`, `hcsfq_actions.p4`, `includes/hcsfq_defines.p4` (commit "
        "01574b9, 2021-02-25); "
        "no compiler log in the repository",
    ),
]


def _cells(block: str, label: str) -> list[str]:
    m = re.search(r"^\| " + re.escape(label) + r" \|(.*)\|$", block, re.M)
    if not m:
        raise ValueError(f"docs/pipeline.md: no row {label!r} in the compiler's figures")
    return [c.strip() for c in m.group(1).split("|")]


def ours(pipeline: Path) -> list[Row]:
    """FFS alone and with l2l3_acl on Tofino 1, from the compiler's figures in docs/pipeline.md."""
    text = pipeline.read_text()
    m = re.search(r"<!-- p4_resources: begin -->(.*?)<!-- p4_resources: end -->", text, re.S)
    if not m:
        raise ValueError(f"{pipeline}: no p4_resources section")
    alone, example = m.group(1).split("`p4src/examples/l2l3_acl.p4`", 1)
    version = re.search(r"\(bf-p4c ([\d.]+)", m.group(1))
    src = f"docs/pipeline.md, `make p4-resources` (bf-p4c {version.group(1) if version else '?'})"
    ig, eg = (int(_cells(alone, f"{g} stages used")[0]) for g in ("ingress", "egress"))
    sram, tcam = (int(_cells(alone, f"{r} blocks")[0]) for r in ("SRAM", "TCAM"))
    rows = [
        Row(
            "FFS",
            "alone (`p4src/ffs.p4`)",
            f"{max(ig, eg)} ({ig} ingress, {eg} egress)",
            f"{sram} ({sram * SRAM_KB} KB; {_pct(sram, SRAM_ALL)})",
            f"{tcam} ({tcam * TCAM_KB_CEBINAE:.1f} KB at Cebinae's 1.28 KB; {_pct(tcam, TCAM_ALL)})",
            "no per-flow state; no recirculation",
            src,
        )
    ]
    # l2l3_acl columns: tofino alone, with FFS, FFS adds, then tofino2's three
    ig_c, eg_c = (_cells(example, f"{g} stages used") for g in ("ingress", "egress"))
    sram_c, tcam_c = (_cells(example, f"{r} blocks") for r in ("SRAM", "TCAM"))
    for label, k in (("l2l3_acl alone (`-DNO_FFS`)", 0), ("l2l3_acl with FFS", 1)):
        i, e = int(ig_c[k]), int(eg_c[k])
        s, t = int(sram_c[k]), int(tcam_c[k])
        adds = "" if k == 0 else f"; FFS adds {ig_c[2]} ingress stages, {sram_c[2]} SRAM, {tcam_c[2]} TCAM blocks"
        rows.append(
            Row(
                "FFS" if k else "forwarding",
                label,
                f"{max(i, e)} ({i} ingress, {e} egress)",
                f"{s} ({s * SRAM_KB} KB; {_pct(s, SRAM_ALL)})",
                f"{t} ({t * TCAM_KB_CEBINAE:.1f} KB at Cebinae's 1.28 KB; {_pct(t, TCAM_ALL)})",
                "L2 bridging, L3 routing, ACL" + adds,
                src,
            )
        )
    return rows


def markdown(rows: list[Row]) -> str:
    out = [
        "| design | configuration | MAU stages (Tofino 1) | SRAM blocks (16 KB) | TCAM blocks | other | source |",
        "|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| {r.design} | {r.config} | {r.stages} | {r.sram_blocks} | {r.tcam_blocks} | {r.other} | {r.source} |"
        for r in rows
    ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipeline", type=Path, default=ROOT / "docs" / "pipeline.md")
    a = ap.parse_args()
    try:
        print(markdown(ANCHORS + ours(a.pipeline)))
    except (OSError, ValueError) as e:
        print(f"resources_compared: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
