# SPDX-License-Identifier: Apache-2.0
"""One Driver interface (base.py), the BF-Runtime gRPC target (bfrt.py) and the software switch's
gRPC service (model.py, its JSON schema in wire.py); the in-process driver of the software switch is
`ffs.switch.driver`, the values they exchange `ffs.core.entries`."""
