# SPDX-License-Identifier: Apache-2.0
"""p4src/ through the SDE's real compiler (bf-p4c): it compiles for Tofino 1 and 2 inside the stage
budget (docs/pipeline.md), with no warning the docs do not explain, ffs.core.p4names is what
`make names` generates from the bf-rt.json it writes, and the software switch has every object it
names. Skipped where no SDE with bf-p4c is installed ($SDE_INSTALL/bin/bf-p4c)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bfrt_schema import schema_of
from conftest import ROOT
from ffs.core import p4names, p4names_gen
from ffs.switch.pipeline import Pipeline

BF_P4C = Path(os.environ.get("SDE_INSTALL", "/nonexistent")) / "bin" / "bf-p4c"
pytestmark = pytest.mark.skipif(
    not BF_P4C.exists() or shutil.which("make") is None,
    reason="needs the SDE's compiler: set SDE and SDE_INSTALL (open-p4studio or Intel's SDE with bf-p4c)",
)

INGRESS_STAGE_BUDGET = 7  # docs/pipeline.md: at most 7 ingress stages on Tofino 1 (of 12) and Tofino 2 (of 20)
# warnings docs/pipeline.md explains: the frontend cannot see @pa_auto_init_metadata, and the
# backend pads short packets with a loop it unrolls itself
EXPLAINED = (
    re.compile(r"warning: out parameter 'md' may be uninitialized when 'Ffs(Ingress|Egress)Parser' terminates"),
    re.compile(r"^\s*parser Ffs(Ingress|Egress)Parser\(packet_in pkt,$"),  # the line the warning above quotes
    re.compile(r"warning: Parser state min_parse_depth_accept_loop will be unrolled"),
)


@pytest.fixture(scope="module", params=["tofino", "tofino2"])
def build(request):
    """`make compile` into build/<target> (a no-op when make build already compiled these sources);
    the compiler's output is kept in build/<target>/ffs/bf-p4c.log."""
    p = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "compile", f"TARGET={request.param}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    out = ROOT / "build" / request.param / "ffs"
    return request.param, out, (out / "bf-p4c.log").read_text()


def test_compiles_with_only_explained_warnings(build):
    target, out, log = build
    assert (out / "pipe" / ("tofino2.bin" if target == "tofino2" else "tofino.bin")).exists()
    warnings = [line for line in log.splitlines() if "warning:" in line]
    assert [w for w in warnings if not any(r.search(w) for r in EXPLAINED)] == []
    assert "error" not in log.lower().replace("0 errors", "")


def test_stage_budget_without_recirculation(build):
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from p4_resources import read_build

    b = read_build(build[1])
    assert 1 <= b.ingress_stages <= INGRESS_STAGE_BUDGET
    src = "\n".join(f.read_text() for f in (ROOT / "p4src").rglob("*.p4"))
    assert not re.search(r"\b(resubmit|recirc|mirror)\w*\s*[.(=]", src), "FFS needs one pass"


def test_parser_keeps_its_selects(build):
    """Every select of p4src/'s parsers must reach the .bfa as match values. The bf-p4c built from
    p4c 1.2.5.16 drops them (p4c pull request 5753 fixes it): then the first transition of every
    state wins and no packet is parsed as written, on tofino-model or hardware. That is the
    compiler's defect, not the program's, so it is reported here as an expected failure."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from p4_resources import parser_selects_lost

    if parser_selects_lost(build[1]):
        pytest.xfail("this bf-p4c dropped every parser select value (p4c pull request 5753 not in this build)")
    assert not parser_selects_lost(build[1])


def test_p4names_is_what_the_compiled_program_generates(build):
    generated = p4names_gen.render(p4names_gen.read(build[1] / "bf-rt.json"))
    checked_in = (ROOT / "controlplane" / "ffs" / "core" / "p4names.py").read_text()
    assert p4names_gen.first_difference(checked_in, generated) is None, "run make names"


def test_software_switch_has_what_was_compiled(build):
    schema = schema_of(build[1])
    p = Pipeline()
    for kind, objects in (
        ("MatchAction", p.tables),
        ("Counter", p.counters),
        ("Register", p.registers),
        ("Lpf", p.lpfs),
    ):
        compiled = {n for n, t in schema.items() if t["table_type"].startswith(kind)}
        assert set(objects) == compiled, kind


EXAMPLE = "p4src/examples/l2l3_acl.p4"


@pytest.fixture(scope="module", params=["tofino", "tofino2"])
def example(request):
    """`make example`: the FFS library composed with L2/L3/ACL forwarding, and that forwarding alone."""
    p = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "example", f"TARGET={request.param}"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return (
        request.param,
        ROOT / "build" / "example-ffs" / request.param / "ffs",
        ROOT / "build" / "example-alone" / request.param / "ffs",
    )


def test_library_composes_with_other_forwarding_under_the_ffs_names(example):
    """docs/pipeline.md, "FFS as a P4 library": another program composes FFS through FfsCore and
    FfsEgressCore, and every FFS object keeps the BF-Runtime name ffs-agent drives."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from p4_resources import read_build

    _, with_ffs, alone = example
    schema = schema_of(with_ffs)
    forwarding = {p4names.IPV4_ROUTES.name, p4names.IPV6_ROUTES.name}
    ffs_objects = (
        ({t.name for t in p4names.TABLES} - forwarding)
        | {c.name for c in p4names.COUNTERS}
        | {r.name for r in p4names.REGISTERS}
    )
    ffs_objects |= {lpf.name for lpf in p4names.LPFS} | {p4names.PORT_METADATA.name}
    assert ffs_objects <= schema.keys()
    assert not any(n.startswith(("FfsIngress.", "FfsEgress.")) for n in schema_of(alone))
    # FFS adds stages after the forwarding has chosen the egress port (the pair is (ingress, egress))
    a, b = read_build(alone), read_build(with_ffs)
    assert a.ingress_stages < b.ingress_stages <= 12
