# SPDX-License-Identifier: Apache-2.0
"""The paper's Internet-scale experiments (FFS §VII-B network utilization, Appendix C incremental
deployment) on AS-level graphs: `graph` builds them, `study` runs FFS and the baselines."""
