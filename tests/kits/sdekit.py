# SPDX-License-Identifier: Apache-2.0
"""The SDE kit of the tests: tofino-model + bf_switchd as ffs.lab.sde starts them."""

from ffs.lab.sde import GRPC_PORT, Sde, free_port, running_sde, sde_missing

__all__ = ["GRPC_PORT", "Sde", "free_port", "running_sde", "sde_missing"]
