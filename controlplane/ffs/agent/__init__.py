# SPDX-License-Identifier: Apache-2.0
"""ffs-agent: owns one switch; programs it, keeps tau per egress, applies fairness matrices."""
