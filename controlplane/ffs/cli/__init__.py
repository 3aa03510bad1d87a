# SPDX-License-Identifier: Apache-2.0
"""The product's commands: ffs-agent, ffsctl (with ffsctl fleet and ffsctl --host ssh://...)."""
