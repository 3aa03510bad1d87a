# SPDX-License-Identifier: Apache-2.0
"""The values and pure rules every other part rests on: the contract's constants and units, the label
codec, the P4 names, the table generators, τ, the allocator, topology files and their safe loading.
It imports nothing of the package outside itself."""
