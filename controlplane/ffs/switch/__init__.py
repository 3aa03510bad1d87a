"""The software switch: the FFS pipeline of p4src/ as an executable specification.

`pipeline` (the controls), `tna` (the externs), `packet` (parser/deparser), `control` (the
BF-Runtime-like control interface), `server` (that interface over gRPC), `trace` (virtual time),
`live` (Linux interfaces).
"""
