# SPDX-License-Identifier: Apache-2.0
"""The software switch (the executable specification) in virtual time: its pipeline, control service,
traffic manager and trace loop, and the papers' claims run packet by packet through it with the agent;
no root, no SDE."""

from __future__ import annotations

import pytest

from conftest import mark_kind

# what takes long (a file, or file::function; -> why): make unit-tests leaves it out, make test runs it
SLOW: dict[str, str] = {
    "test_attacks.py": "attacks at line rate over whole code ranges, up to 100 Gb/s",
    "test_chain.py": "two nodes' replay and every counter cell",
    "test_csfq_paper.py": "the CSFQ paper's runs at its own durations",
    "test_endpoint_virtual.py": "transfers at 10 Gb/s until the endpoints converge",
    "test_greedy_node.py": "label distributions packet by packet",
    "test_host_vlan.py": "the closed loop at line rate per packet size, tag change and engine",
    "test_quarantine_evidence.py": "minutes of traffic in virtual time",
    "test_quarantine_held.py": "both engines at every tau",
    "test_reaction.py": "floods' onsets and pulses at three packet sizes",
    "test_scenarios.py": "every scenario of scenarios/ until it settles",
    "test_slow_drain.py": "the closed loop on a drained port, per drain, until the target settles",
    "test_small_shares.py": "shares down to 0.1 % against floods, each cell long enough for its estimator",
    "test_switch_replay.py": "Table II at 15 Gb/s with the tau loop until it settles",
    "test_tau_noise.py": "jumbo frames over three seeds until tau settles",
    "test_tm_saturation.py": "four packet sizes, each until the closed loop settles",
    "test_allocator_labels.py::test_random_label_topologies_match_replay": "replays random topologies",
    "test_allocator_labels.py::test_table_ii_labels": "replays Table II packet by packet",
    "test_allocator_labels.py::test_two_hops_labels": "replays two hops packet by packet",
    "test_differential_probes.py::test_one_software_switch_tells_the_hidden_probes_as_a_fresh_one_per_probe_does": (
        "a fresh software switch per probe, each loaded with the node's 15,800 entries"
    ),
    "test_switch_control.py::test_refused_batch_changes_nothing": "every refusal against a full state dump",
    "test_switch_pipeline.py::test_a_length_wrapped_by_an_inserted_shim_is_still_malformed": "both engines",
    "test_switch_pipeline.py::test_a_non_first_fragment_is_never_a_shim": "every port mode and both engines",
    "test_switch_security.py::test_malformed_requests_change_nothing": "every malformed request over the socket",
    "test_switch_trace.py::test_compiled_trace_is_the_python_trace": "the Python engine packet for packet",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_kind(items, __file__, SLOW)
