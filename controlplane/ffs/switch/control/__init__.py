# SPDX-License-Identifier: Apache-2.0
"""The software switch's controls, one module per P4 control of `p4src/include/control/`, under its name."""
