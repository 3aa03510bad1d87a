# SPDX-License-Identifier: Apache-2.0
"""The laboratory around the product: what evaluates FFS rather than what runs it.

`experiments` (scenarios in virtual time, FFS against FIFO and CSFQ), `nodes` (a pipeline and an
agent per node of a topology), `baselines` (CSFQ), `attacks` (the Tofino-order model of the
length-lie attack), `cca` (real TCP congestion control through the live switch), `network` (the
AS-level study), `demo` and `liverun` (the live demo and its pieces), `traffic` (senders and
receivers for live runs), `endpoint` (the FFS-aware endpoints of the paper's §IX, live) and
`virtual_endpoints` (the same in virtual time), `netns` (network namespaces and veth for live runs),
`differential` and `demo_tofino` (the SDE runs, with `sde`, which starts tofino-model and
bf_switchd), `scapy_ffs` and `binomial` (the shim for scapy and the binomial bounds the tests use),
and `cli` (its commands: ffs-sim, ffs-switch, ffs-transfer).

It builds on every layer below it (the switch, the agent, the drivers); nothing below imports it.
"""
