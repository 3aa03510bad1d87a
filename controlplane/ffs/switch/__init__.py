# SPDX-License-Identifier: Apache-2.0
"""The software switch: the FFS pipeline of p4src/ as an executable specification.

`pipeline` (the controls, the reference), `tna` (the externs), `packet` (parser/deparser), `fast`
(the same pipeline compiled, `FastPipeline` / `new_pipeline`), `control` (the BF-Runtime-like
control interface), `server` (that interface over gRPC), `driver` (the Drivers of this switch:
`LocalDriver` in process; `ModelDriver`, over gRPC, is `ffs.driver.model`), `trace` (virtual time, synthetic traffic
or a pcap), `live` (Linux interfaces).
"""
