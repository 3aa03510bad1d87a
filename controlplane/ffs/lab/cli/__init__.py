# SPDX-License-Identifier: Apache-2.0
"""The laboratory's commands: ffs-sim, ffs-switch, ffs-transfer (installed through `entry`)."""
