# SPDX-License-Identifier: Apache-2.0
"""FFS-aware endpoints (FFS §IX, App. C, App. D): a reliable bulk transfer over UDP that carries the
FFS/RI shim (docs/spec.md §2), driven by the rate indicator the nodes write and the receiver echoes.

- `rate`: the rate controllers (MinTime, MinLoss, the partial-deployment cap) and the leaky-bucket
  pacer, pure classes stepped on events with explicit time;
- `wire`: the transfer's header after UDP, and the shim as the endpoints read and write it;
- `transport`: sender and receiver state machines (selective acknowledgements, loss detection,
  retransmission), again with explicit time;
- `live`: the two state machines on real sockets (raw IP protocol 253).

The same state machines run through the software switch's pipeline and agent in virtual time in
`ffs.lab.virtual_endpoints`.

docs/endpoint.md documents the library and the `ffs-transfer` command.
"""
