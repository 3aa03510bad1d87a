# SPDX-License-Identifier: Apache-2.0
"""The resource comparison of docs/results.md ("Resources beside the published designs"): its table
is what `bench/resources_compared.py` prints from the compiler's figures in docs/pipeline.md, so a
recompile (`make p4-resources`) that changes ours leaves the comparison stale until it is rerun;
and the anchors' block counts are the ones their sources state, with the sources' own conversions."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import resources_compared as rc  # noqa: E402

from conftest import ROOT


def test_the_docs_table_is_what_the_script_prints_from_the_compilers_figures():
    table = rc.markdown(rc.ANCHORS + rc.ours(ROOT / "docs" / "pipeline.md"))
    assert table in (ROOT / "docs" / "results.md").read_text(), "rerun: make resources-compared"


def test_ours_are_read_from_the_compilers_section():
    alone, _, with_ffs = rc.ours(ROOT / "docs" / "pipeline.md")
    # the stage count on Tofino 1 is the larger of ingress and egress, which share the MAU stages
    ig, eg = (int(x) for x in alone.stages.split("(")[1].replace(" ingress", "").replace(" egress)", "").split(", "))
    assert int(alone.stages.split()[0]) == max(ig, eg)
    assert int(with_ffs.stages.split()[0]) >= int(alone.stages.split()[0])


def test_the_anchor_conversions_are_their_sources():
    # Cebinae's vm_experiments.md: "70 SRAM blocks. Each block is 16KB each, for a total of 1120KB";
    # "26 TCAM blocks. Each block is 1.28KB, for a total of <34KB" (Table 3, 2 cache stages: 34 KB)
    assert rc.CEBINAE_REPO["sram"] * rc.SRAM_KB == 1120
    assert rc.CEBINAE_REPO["tcam"] * rc.TCAM_KB_CEBINAE < rc.CEBINAE_PAPER[2][2]
    # Table 3's SRAM is a whole number of 16 KB blocks in both configurations
    assert all(kb % rc.SRAM_KB == 0 for _, kb, _ in rc.CEBINAE_PAPER.values())
    assert pytest.approx(2.75) == rc.TCAM_KB


def test_a_section_without_the_figures_is_refused(tmp_path):
    doc = tmp_path / "pipeline.md"
    doc.write_text("<!-- p4_resources: begin -->\n| SRAM blocks | 1 | 2 |\n<!-- p4_resources: end -->\n")
    with pytest.raises(ValueError):
        rc.ours(doc)
