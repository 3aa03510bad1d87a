# SPDX-License-Identifier: Apache-2.0
"""The CSFQ baseline against the CSFQ paper (papers/001) and the label lie of FFS §VII-A, with the
paper's parameters in virtual time (ffs.lab.csfq_paper; docs/results.md, "CSFQ against the CSFQ
paper"). Runs are deterministic for their seed; each lasts 11 s and is measured over 10, as the
paper's averages are.

Figure 4a's band (−11 % / +5 %) is one ns-2 run; a flow there delivers ~376 packets in 10 s, so its
throughput has a binomial spread of ~5 % from the drop draws alone. The test takes the paper's band
widened by two of those on each side for one run, and holds the mean over flows (the systematic
part) to ±2 %; `python bench/csfq_paper.py` shows each flow's mean over 5 seeds inside the paper's
band itself (−5.4 % / +4.8 %)."""

from __future__ import annotations

import math
import statistics

import pytest

from ffs.core.tables import wire_len
from ffs.lab.csfq_paper import FAIR_4A, FLOWS_4A, PAPER_4A, PAPER_TABLE4, SIZE, band, run

SD = math.sqrt((FLOWS_4A - 1) / FLOWS_4A / (10 * FAIR_4A / (wire_len(SIZE + 18) * 8)))


def test_figure_4a_csfq_keeps_every_flow_near_its_fair_share():
    r = run("fig4a", "csfq")
    lo, hi = band(r)
    assert PAPER_4A[0] - 2 * SD <= lo and hi <= PAPER_4A[1] + 2 * SD, (lo, hi, SD)
    assert abs(statistics.mean(r.measured[k] / r.exact[k] - 1 for k in r.exact)) <= 0.02


def test_figure_4a_fifo_gives_each_flow_what_it_sends():
    """The same bench without fairness: flow 31 sends 32 times its share and FIFO lets it through
    in proportion (the paper's FIFO curve): the band check above can see unfairness."""
    lo, hi = band(run("fig4a", "fifo"))
    assert lo < -0.9 and hi > 0.9


@pytest.mark.parametrize("scheme", ["csfq", "ffs"])
def test_table_4_relabeling_gives_link_2_three_fair_thirds(scheme):
    """Paper: 3.36 / 3.32 / 3.28 Mb/s (fair 3.33: within 1.6 %); the same band here, for CSFQ and for
    FFS with the matching matrices."""
    r = run("table4", scheme)
    worst = max(abs(PAPER_TABLE4[k] - 10e6 / 3) for k in PAPER_TABLE4) / (10e6 / 3)
    for k in PAPER_TABLE4:
        assert abs(r.measured[k] / (10e6 / 3) - 1) <= worst, (k, r.measured)


def test_table_4_needs_the_relabeling():
    """FIFO on the same links: flow 3 takes link 2 from the two flows that link 1 already cut."""
    r = run("table4", "fifo")
    assert r.measured["flow3"] > 1.5 * r.measured["flow1"]


def test_a_lying_label_fools_csfq_and_not_ffs():
    """FFS §VII-A: a flow whose edge claims a tenth of its rate is never dropped by a CSFQ core and
    takes all it sends, twice its fair share, from the honest flows; FFS normalizes the label
    against its ingress's F (Eq. 1), so the lie leaves it at its share."""
    c = run("liar", "csfq")
    assert c.measured["liar"] >= 0.95 * 4e6
    assert all(v < 0.8 * 2e6 for k, v in c.measured.items() if k != "liar")
    f = run("liar", "ffs")
    for k, v in f.measured.items():
        assert abs(v / f.exact[k] - 1) <= 0.05, (k, f.measured)
