"""The SDE kit of the tests: tofino-model + bf_switchd as ffs.sde starts them."""

from ffs.sde import GRPC_PORT, Sde, free_port, running_sde, sde_missing

__all__ = ["GRPC_PORT", "Sde", "free_port", "running_sde", "sde_missing"]
