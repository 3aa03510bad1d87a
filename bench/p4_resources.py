#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The compiler's own figures for p4src/: stage of every table, stages used, PHV, SRAM, TCAM, map
RAM, meter/stateful/stats ALUs, per target, read from what bf-p4c wrote (context.json,
logs/metrics.json, logs/mau.resources.log). Nothing here is estimated.

    python3 bench/p4_resources.py --summary build/tofino/ffs      # one build, a few lines
    python3 bench/p4_resources.py --markdown                      # compile both targets (make compile)
    python3 bench/p4_resources.py --write docs/pipeline.md        # ... and replace the marked section

--markdown and --write compile with `make compile TARGET=... BUILD=build/resources/TARGET`, so they
need the SDE's bf-p4c ($SDE_INSTALL/bin/bf-p4c).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- p4_resources: begin -->", "<!-- p4_resources: end -->"
TARGETS = ("tofino", "tofino2")


@dataclass
class Build:
    target: str
    compiler: str
    stages: dict[str, list[int]] = field(default_factory=dict)  # table -> stages (ingress/egress by name)
    ingress_stages: int = 0
    egress_stages: int = 0
    phv: dict[int, int] = field(default_factory=dict)  # container width -> containers occupied
    phv_tagalong: dict[int, int] = field(default_factory=dict)
    mau: dict[str, int] = field(default_factory=dict)
    alus: dict[str, int] = field(default_factory=dict)
    latency: dict[str, int] = field(default_factory=dict)


def read_build(out: Path) -> Build:
    """Figures of one bf-p4c output directory (the -o directory)."""
    ctx = json.loads((out / "pipe" / "context.json").read_text())
    metrics = json.loads((out / "pipe" / "logs" / "metrics.json").read_text())
    b = Build(target=metrics.get("target", "?"), compiler=metrics.get("compiler_version", "?"))
    for t in ctx["tables"]:
        ma = t.get("match_attributes")
        st = sorted({s["stage_number"] for s in ma.get("stage_tables", [])} if isinstance(ma, dict) else set())
        if st:
            b.stages[t["name"]] = st
            last = max(st) + 1
            if t.get("direction") == "egress":
                b.egress_stages = max(b.egress_stages, last)
            else:
                b.ingress_stages = max(b.ingress_stages, last)
    for kind, dest in (("normal", b.phv), ("tagalong", b.phv_tagalong)):
        for c in metrics["phv"].get(kind, []):
            dest[c["bit_width"]] = c["containers_occupied"]
    mau = metrics["mau"]
    b.mau = {k: mau[k] for k in ("srams", "tcams", "map_rams", "logical_tables") if k in mau}
    b.latency = {x["gress"]: x["cycles"] for x in mau.get("latency", [])}
    b.alus = _alus(out / "pipe" / "logs" / "mau.resources.log")
    return b


def _alus(log: Path) -> dict[str, int]:
    """Meter ALU (LPF and stateful registers) and stats ALU (counters) totals of mau.resources.log."""
    if not log.exists():
        return {}
    text = log.read_text()
    header = next((line for line in text.splitlines() if line.startswith("| Stage Number")), None)
    totals = next((line for line in text.splitlines() if line.startswith("|    Totals")), None)
    if not header or not totals:
        return {}
    cols = [c.strip() for c in header.strip("|").split("|")]
    vals = [c.strip() for c in totals.strip("|").split("|")]
    out = {}
    for name in ("Meter ALU", "Stats ALU", "Gateway", "VLIW Instr"):
        if name in cols:
            out[name] = int(vals[cols.index(name)])
    return out


def parser_selects_lost(out: Path) -> bool:
    """Whether the compiler's output (the .bfa) lost the ingress parser's selects: p4src/'s parser
    branches on EtherType, IP version and protocol, and the shim's first word, so a correct build
    has `match:` lines on packet data in `parser ingress`; a build without any (only the padding
    loop's counter matches) takes the first transition of every state. bf-p4c 9.13.4 as built from
    p4c 1.2.5.16 does this on Tofino 1 (fixed upstream by p4c pull request 5753, "tofino: keep
    non-scratch parser match register slices"): such a program parses no packet as written."""
    (bfa,) = (out / "pipe").glob("*.bfa")
    text = bfa.read_text()
    m = re.search(r"^parser ingress:\n(.*?)(?=^\S)", text, flags=re.S | re.M)
    section = m.group(1) if m else ""
    data_matches = [m for m in re.findall(r"^\s+match:(.*)$", section, flags=re.M) if "ctr_" not in m]
    return not data_matches


EXAMPLE = "p4src/examples/l2l3_acl.p4"
# (label, program, extra bf-p4c flags): FFS composed with L2/L3/ACL forwarding, and that forwarding alone
EXAMPLE_VARIANTS = (("forwarding alone", EXAMPLE, "-DNO_FFS"), ("with FFS", EXAMPLE, ""))


def compile_target(target: str, program: str = "p4src/ffs.p4", flags: str = "", variant: str = "ffs") -> Path:
    build = ROOT / "build" / "resources" / variant / target
    subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(ROOT),
            "compile",
            f"TARGET={target}",
            f"BUILD={build}",
            f"P4SRC={program}",
            f"P4FLAGS={flags}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return build / "ffs"


def summary(b: Build) -> str:  # noqa: D103
    phv = ", ".join(f"{n}x{w}b" for w, n in sorted(b.phv.items()))
    return (
        f"{b.target}: {b.ingress_stages} ingress / {b.egress_stages} egress stages; PHV {phv} "
        f"(+ tagalong {sum(b.phv_tagalong.values())}); SRAM {b.mau.get('srams')}, TCAM {b.mau.get('tcams')}, "
        f"map RAM {b.mau.get('map_rams')}; meter ALUs {b.alus.get('Meter ALU')}, stats ALUs {b.alus.get('Stats ALU')}"
    )


def _clean(name: str) -> str:
    return name.replace("FfsIngress.", "").replace("FfsEgress.", "")


def markdown(builds: list[Build]) -> str:
    cpu = platform.processor() or platform.machine()
    lines = [
        BEGIN,
        f"Written by `python3 bench/p4_resources.py --write docs/pipeline.md` (bf-p4c {builds[0].compiler}, "
        f"{os.cpu_count()} cores, {cpu}); every number is the compiler's.",
        "",
        "| figure | " + " | ".join(b.target for b in builds) + " |",
        "|---|" + "---|" * len(builds),
    ]

    def row(label: str, f) -> None:
        lines.append(f"| {label} | " + " | ".join(str(f(b)) for b in builds) + " |")

    row("ingress stages used", lambda b: b.ingress_stages)
    row("egress stages used", lambda b: b.egress_stages)
    for w in (8, 16, 32):
        row(f"PHV {w}-bit containers (normal)", lambda b, w=w: b.phv.get(w, 0))
    row("PHV tagalong containers", lambda b: sum(b.phv_tagalong.values()))
    row("SRAM blocks", lambda b: b.mau.get("srams"))
    row("TCAM blocks", lambda b: b.mau.get("tcams"))
    row("map RAMs", lambda b: b.mau.get("map_rams"))
    row("logical tables", lambda b: b.mau.get("logical_tables"))
    row("meter ALUs (LPF, register)", lambda b: b.alus.get("Meter ALU"))
    row("stats ALUs (counters)", lambda b: b.alus.get("Stats ALU"))
    row("ingress latency (cycles)", lambda b: b.latency.get("ingress"))
    lines += ["", "Stage of every table (`tbl_*` are the compiler's names for actions applied outside a table):", ""]
    names = sorted({n for b in builds for n in b.stages}, key=lambda n: (min(builds[0].stages.get(n, [99])), n))
    lines.append("| table | " + " | ".join(b.target for b in builds) + " |")
    lines.append("|---|" + "---|" * len(builds))
    for n in names:
        if n.startswith("cond-"):
            continue
        lines.append(
            f"| `{_clean(n)}` | " + " | ".join(",".join(map(str, b.stages.get(n, []))) or "-" for b in builds) + " |"
        )
    lines.append(END)
    return "\n".join(lines)


def example_markdown(pairs: dict[str, tuple[Build, Build]]) -> str:
    """The composed example (EXAMPLE) per target: the forwarding alone, with FFS, and what FFS adds."""
    lines = [
        f"`{EXAMPLE}` (802.1Q/L2 bridging, L3 routing, ACL), compiled without (`-DNO_FFS`) and with the FFS library:",
        "",
        "| figure | " + " | ".join(f"{t}: forwarding alone | {t}: with FFS | {t}: FFS adds" for t in pairs) + " |",
        "|---|" + "---|---|---|" * len(pairs),
    ]

    def row(label: str, f) -> None:
        cells = []
        for alone, ffs in pairs.values():
            a, b = f(alone), f(ffs)
            cells += [str(a), str(b), f"{b - a:+d}" if isinstance(a, int) and isinstance(b, int) else "-"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("ingress stages used", lambda b: b.ingress_stages)
    row("egress stages used", lambda b: b.egress_stages)
    row("SRAM blocks", lambda b: b.mau.get("srams"))
    row("TCAM blocks", lambda b: b.mau.get("tcams"))
    row("PHV containers (normal)", lambda b: sum(b.phv.values()))
    row("meter ALUs (LPF, register)", lambda b: b.alus.get("Meter ALU"))
    row("stats ALUs (counters)", lambda b: b.alus.get("Stats ALU"))
    row("ingress latency (cycles)", lambda b: b.latency.get("ingress"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--summary", metavar="OUT", type=Path, help="print a few lines about one bf-p4c output dir")
    g.add_argument(
        "--defects", metavar="OUT", type=Path, help="print the known compiler defects one build shows (one per line)"
    )
    g.add_argument("--markdown", action="store_true", help="compile both targets, print the table")
    g.add_argument("--write", metavar="DOC", type=Path, help="compile both targets, replace the marked section of DOC")
    a = ap.parse_args(argv)
    try:
        if a.defects:
            if parser_selects_lost(a.defects):
                print("parser-selects-lost: bf-p4c dropped every parser select value (fixed in p4c pull request 5753)")
            return 0
        if a.summary:
            print(summary(read_build(a.summary)))
            if parser_selects_lost(a.summary):
                print(
                    "note: this bf-p4c dropped the parser's select values (p4c pull request 5753): "
                    "the build parses no packet as written (docs/pipeline.md)"
                )
            return 0
        builds = []
        for t in TARGETS:
            print(f"p4_resources: compiling p4src/ffs.p4 for {t}", file=sys.stderr)
            builds.append(read_build(compile_target(t)))
        pairs = {}
        for t in TARGETS:
            got = []
            for label, program, flags in EXAMPLE_VARIANTS:
                print(f"p4_resources: compiling {program} ({label}) for {t}", file=sys.stderr)
                got.append(
                    read_build(compile_target(t, program, flags, "example-ffs" if not flags else "example-alone"))
                )
            pairs[t] = (got[0], got[1])
    except (OSError, KeyError, ValueError, subprocess.CalledProcessError) as e:
        print(f"p4_resources: {e}", file=sys.stderr)
        return 1
    md = markdown(builds).replace(END, "\n" + example_markdown(pairs) + "\n" + END)
    if a.markdown:
        print(md)
        return 0
    text = a.write.read_text()
    if BEGIN not in text or END not in text:
        print(f"p4_resources: {a.write} has no {BEGIN} ... {END} section", file=sys.stderr)
        return 1
    a.write.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: md, text, flags=re.S))
    print(f"p4_resources: wrote {a.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
