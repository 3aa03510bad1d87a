# SPDX-License-Identifier: Apache-2.0
"""ffs-tofino: FFS (Fractional Fair Shares) for Intel Tofino.

Three parts, a folder per layer (docs/control-plane.md, "Code"): the product, which runs on a
switch (`core`, the values and pure rules; `driver`; `agent`; `cli`, ffs-agent and ffsctl); the
executable specification (`switch`, the pipeline, traffic manager and ports in software); and the
laboratory (`lab`: scenarios, baselines, endpoints, live runs and the SDE runs, and its commands in
`lab.cli`). The product imports nothing of the other two (tests/docs/test_layers.py).
"""

__version__ = "0.1.0"
