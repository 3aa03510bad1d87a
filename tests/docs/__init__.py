# SPDX-License-Identifier: Apache-2.0
"""A kind of test (docs/testing.md): a package, so that its conftest.py has a module name of its own."""
