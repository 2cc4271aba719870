"""spec/roles.py: every campaign option has exactly one row, and the lists derived from it do what
their users need (a new option without a row fails here instead of silently taking the first
member's value in a shared union)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from ncucampaign.discover.analysis import FILTER_KEYS
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.groups import alone_reason, filter_signature, group_key
from ncucampaign.plan.share.union import filter_words
from ncucampaign.spec.keys import OPTION_KEYS, field_name
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.roles import (
    FIELD_OF_KEY,
    IMPORT_FILTERS,
    NCU_TEXT_FIELDS,
    OPTION_ROLES,
    SCOPE_KEYS,
    Discovery,
    Share,
    keys_where,
)
from tests.conftest import invocation

# A value for each option that differs from an unset one and passes validation.
SAMPLE: dict[str, Any] = {
    "set": "full",
    "sections": ["SpeedOfLight"],
    "metrics": ["gpu__time_duration.sum"],
    "page": "raw",
    "nvtx": True,
    "nvtx_include": ["decode_step/"],
    "nvtx_exclude": ["warmup/"],
    "nvtx_push_pop_scope": "process",
    "range_filter": "::8",
    "profile_from_start": False,
    "disable_profiler_start_stop": True,
    "kernel_name": "rmsnorm_kernel",
    "kernel_name_base": "demangled",
    "kernel_id": "::foo:2",
    "launch_skip": 3,
    "launch_skip_before_match": 2,
    "launch_count": 2,
    "samples": 4,
    "filter_mode": "per-gpu",
    "kill": False,
    "call_stack_type": ["python"],
    "python_include": ["decode.py@run"],
    "python_exclude": ["warm.py@run"],
    "native_include": ["libfoo.so@bar"],
    "native_exclude": ["libbaz.so@qux"],
    "target_processes": "all",
    "target_processes_filter": ["regex:python"],
    "devices": [1],
    "graph_profiling": "node",
    "replay_mode": "application",
    "app_replay_mode": "relaxed",
    "app_replay_match": "grid",
    "cache_control": "none",
    "clock_control": "none",
    "config_file": "/etc/ncu/config.ncu-cfg",
    "rename_kernels": True,
    "communicator": "shmem",
    "communicator_tcp_num_peers": 2,
    "communicator_tcp_port": 49300,
    "communicator_shmem_num_peers": 2,
    "lockstep_kernel_launch": True,
    "extra_args": ["--print-summary", "per-kernel"],
    "args": ["--steps", "3"],
    "env": {"A": "1"},
    "timeout": 60,
    "retries": 3,
    "retry_delay": 1,
    "lint_ignore": ["NCU001"],
    "stop_grace": 5,
    "stall_timeout": 5,
    "share": "off",
}
BASE = invocation(kernel_name="k", launch_count=1)
# The workload options reach an invocation as its own fields.
WORKLOAD_FIELDS = {
    "args": ("app_argv", ("app", "--steps", "3")),
    "env": ("env", (("A", "1"),)),
    "timeout": ("timeout", 60.0),
    "retries": ("retries", 3),
    "retry_delay": ("retry_delay", 1.0),
    "stop_grace": ("stop_grace", 5.0),
    "stall_timeout": ("stall_timeout", 5.0),
}


def with_key(key: str) -> Invocation:
    """BASE with one option set to its SAMPLE value (a workload option: as the invocation's field)."""
    if key in WORKLOAD_FIELDS:
        field, value = WORKLOAD_FIELDS[key]
        return dataclasses.replace(BASE, **{field: value})
    data: dict[str, Any] = {"kernel_name": "k", "launch_count": 1, key: SAMPLE[key]}
    return dataclasses.replace(BASE, options=TargetOptions.model_validate(data))


def test_every_option_key_has_exactly_one_row() -> None:
    assert list(OPTION_ROLES) == list(OPTION_KEYS)  # one row each, in the model's order
    assert set(SAMPLE) == set(OPTION_KEYS)
    assert all(
        isinstance(role.share, Share) and isinstance(role.discovery, Discovery) for role in OPTION_ROLES.values()
    )


def test_the_field_names_agree_with_the_model() -> None:
    for key in OPTION_KEYS:
        assert FIELD_OF_KEY.get(key, key) == field_name(key)


@pytest.mark.parametrize("key", sorted(keys_where(Share.RUN) + keys_where(Share.MATCHING) + keys_where(Share.WORKLOAD)))
def test_a_run_setting_changes_the_sharing_key(key: str) -> None:
    assert group_key(with_key(key)) != group_key(BASE)


@pytest.mark.parametrize(
    "key",
    sorted(keys_where(Share.SELECT) + keys_where(Share.COLLECT) + keys_where(Share.WINDOW) + keys_where(Share.TOOL)),
)
def test_what_may_differ_between_members_keeps_the_sharing_key(key: str) -> None:
    assert group_key(with_key(key)) == group_key(BASE)


@pytest.mark.parametrize("key", sorted(keys_where(Share.SELECT)))
def test_a_member_filter_is_part_of_the_filter_signature_and_reaches_the_import(key: str) -> None:
    changed = with_key(key)
    assert filter_signature(changed) != filter_signature(BASE)
    assert filter_words(changed.options) != filter_words(BASE.options)


@pytest.mark.parametrize("key", sorted(keys_where(Share.ALONE)))
def test_an_option_import_cannot_reapply_keeps_its_target_alone(key: str) -> None:
    assert alone_reason(BASE) is None
    assert alone_reason(with_key(key)) is not None


def test_the_import_filters_are_the_selection_and_the_matching() -> None:
    assert set(IMPORT_FILTERS) == {"kernel_name", "kernel_name_base", "nvtx_include", "nvtx_exclude"}


def test_the_discovery_scope_keeps_where_kernels_run_and_target_mode_adds_the_kernel_filters() -> None:
    assert "nvtx_include" in SCOPE_KEYS and "kernel_name" not in SCOPE_KEYS and "launch_skip" not in SCOPE_KEYS
    assert set(FILTER_KEYS) - set(SCOPE_KEYS) == set(keys_where(discovery=Discovery.KERNEL))


@pytest.mark.parametrize("key", [k for k, role in OPTION_ROLES.items() if role.ncu_text])
def test_every_ncu_text_option_refuses_shell_quotes(key: str) -> None:
    value = SAMPLE[key]
    quoted = [f'"{value[0]}"'] if isinstance(value, list) else f'"{value}"'
    # range_filter's own pattern refuses the quotes before the quote check can
    with pytest.raises(ValidationError, match="pattern" if key == "range_filter" else "quote"):
        TargetOptions.model_validate({key: quoted})
    assert field_name(key) in NCU_TEXT_FIELDS
