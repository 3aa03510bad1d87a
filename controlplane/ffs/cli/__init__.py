# SPDX-License-Identifier: Apache-2.0
"""Command-line entry points: ffs-sim, ffs-switch, ffs-agent, ffsctl."""
