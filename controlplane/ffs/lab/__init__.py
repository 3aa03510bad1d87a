"""The laboratory around the product: what evaluates FFS rather than what runs it.

`experiments` (scenarios in virtual time, FFS against FIFO and CSFQ), `nodes` (a pipeline and an
agent per node of a topology), `baselines` (CSFQ), `attacks` (the Tofino-order model of the
length-lie attack), `cca` (real TCP congestion control through the live switch), `network` (the
AS-level study), `demo` and `liverun` (the live demo and its pieces), `traffic` (senders and
receivers for live runs), `virtual_endpoints` (FFS-aware endpoints in virtual time).

It builds on every layer below it (the switch, the agent, the drivers); nothing below imports it.
"""
