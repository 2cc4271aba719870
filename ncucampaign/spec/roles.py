"""The role of every campaign option, in one table: may it differ between targets sharing a run, does ncu apply
it on import, what a discovery pass keeps of it, does its text reach ncu as it is (the stray-quote check). The
sharing key, import filters, discovery scope and quote check derive from it; a test fails on a missing row."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Share(StrEnum):
    """What an option is to a shared run (docs/ncu-behaviour.md, "Shared runs")."""

    COLLECT = "collect"  # what is measured: merged into the union's collection
    SELECT = "select"  # which kernels: re-applied on import, may differ between members (OR-ed in the union)
    MATCHING = "matching"  # how names are matched: re-applied on import, identical within a group
    WINDOW = "window"  # which of the matching launches: each member's own window
    RUN = "run"  # how the application runs under ncu: identical within a group
    WORKLOAD = "workload"  # the application's arguments, environment and supervision: identical within a group
    ALONE = "alone"  # cannot be re-applied on import: a target that sets it never shares
    TOOL = "tool"  # ncucampaign's own (sharing, lint, options it derives itself): no effect on selection


class Discovery(StrEnum):
    """What a discovery pass (`discover`, plan/share/union.py's trace) keeps of an option."""

    SCOPE = "scope"  # where and in which process kernels run: kept by every discovery pass
    KERNEL = "kernel"  # which kernel: kept only by `discover --target`, where ncu counts the launches
    DROPPED = "dropped"  # what is collected, the window, how ncu replays: the discovery pass sets its own


@dataclass(frozen=True)
class Role:
    share: Share
    discovery: Discovery
    ncu_text: bool = False  # free text that becomes an ncu argument as it is


_S, _D = Share, Discovery
# In the model's order (discover writes a scope's options in this order).
OPTION_ROLES: dict[str, Role] = {
    "set": Role(_S.COLLECT, _D.DROPPED, ncu_text=True),
    "sections": Role(_S.COLLECT, _D.DROPPED, ncu_text=True),
    "metrics": Role(_S.COLLECT, _D.DROPPED, ncu_text=True),
    "page": Role(_S.RUN, _D.DROPPED),
    "nvtx": Role(_S.TOOL, _D.DROPPED),  # added with nvtx_include/exclude
    "nvtx_include": Role(_S.SELECT, _D.SCOPE, ncu_text=True),
    "nvtx_exclude": Role(_S.SELECT, _D.SCOPE, ncu_text=True),
    "nvtx_push_pop_scope": Role(_S.RUN, _D.SCOPE),
    "range_filter": Role(_S.RUN, _D.SCOPE, ncu_text=True),
    "profile_from_start": Role(_S.RUN, _D.SCOPE),
    "disable_profiler_start_stop": Role(_S.RUN, _D.SCOPE),
    "kernel_name": Role(_S.SELECT, _D.KERNEL, ncu_text=True),
    "kernel_name_base": Role(_S.MATCHING, _D.KERNEL),
    "kernel_id": Role(_S.ALONE, _D.KERNEL, ncu_text=True),
    "launch_skip": Role(_S.WINDOW, _D.DROPPED),
    "launch_skip_before_match": Role(_S.ALONE, _D.KERNEL),
    "launch_count": Role(_S.WINDOW, _D.DROPPED),
    "samples": Role(_S.TOOL, _D.DROPPED),  # planned as launch_count (plan/expand.py)
    "filter_mode": Role(_S.RUN, _D.KERNEL),  # only "global" shares (plan/share/groups.py alone_reason)
    "kill": Role(_S.TOOL, _D.DROPPED),  # added with launch_count
    "call_stack_type": Role(_S.RUN, _D.SCOPE),
    "python_include": Role(_S.RUN, _D.SCOPE, ncu_text=True),  # not re-applied on import (plan/share/union.py)
    "python_exclude": Role(_S.RUN, _D.SCOPE, ncu_text=True),
    "native_include": Role(_S.RUN, _D.SCOPE, ncu_text=True),
    "native_exclude": Role(_S.RUN, _D.SCOPE, ncu_text=True),
    "target_processes": Role(_S.RUN, _D.SCOPE),
    "target_processes_filter": Role(_S.RUN, _D.SCOPE, ncu_text=True),
    "devices": Role(_S.RUN, _D.SCOPE),
    "graph_profiling": Role(_S.RUN, _D.SCOPE),  # "graph" never shares
    "replay_mode": Role(_S.RUN, _D.DROPPED),  # only "kernel" shares
    "app_replay_mode": Role(_S.RUN, _D.DROPPED),
    "app_replay_match": Role(_S.RUN, _D.DROPPED),
    "cache_control": Role(_S.RUN, _D.SCOPE),
    "clock_control": Role(_S.RUN, _D.SCOPE),
    "config_file": Role(_S.RUN, _D.SCOPE),  # what ncu reads before the command line: pinned off
    "rename_kernels": Role(_S.RUN, _D.SCOPE),
    "communicator": Role(_S.RUN, _D.SCOPE),  # how the job's ncu instances coordinate: kept by discovery
    "communicator_tcp_num_peers": Role(_S.RUN, _D.SCOPE),
    "communicator_tcp_port": Role(_S.RUN, _D.SCOPE),
    "communicator_shmem_num_peers": Role(_S.RUN, _D.SCOPE),
    "lockstep_kernel_launch": Role(_S.RUN, _D.SCOPE),
    "extra_args": Role(_S.ALONE, _D.DROPPED),
    "args": Role(_S.WORKLOAD, _D.SCOPE),
    "env": Role(_S.WORKLOAD, _D.SCOPE),
    "timeout": Role(_S.WORKLOAD, _D.SCOPE),
    "retries": Role(_S.WORKLOAD, _D.DROPPED),
    "retry_delay": Role(_S.WORKLOAD, _D.DROPPED),
    "lint_ignore": Role(_S.TOOL, _D.DROPPED),
    "stop_grace": Role(_S.WORKLOAD, _D.SCOPE),
    "stall_timeout": Role(_S.WORKLOAD, _D.SCOPE),
    "share": Role(_S.TOOL, _D.DROPPED),  # share: off never shares
}
# The one key whose model field has another name (a Python keyword-like clash: `set`).
FIELD_OF_KEY = {"set": "section_set"}


def keys_where(share: Share | None = None, discovery: Discovery | None = None) -> tuple[str, ...]:
    """The option keys with that sharing role and/or discovery role, in table order."""
    return tuple(
        key
        for key, role in OPTION_ROLES.items()
        if (share is None or role.share == share) and (discovery is None or role.discovery == discovery)
    )


# Re-applied by `ncu --import` (docs/ncu-behaviour.md, "Shared runs").
IMPORT_FILTERS = (*keys_where(Share.MATCHING), *keys_where(Share.SELECT))
# Identical within a group (with the workload, which the invocation carries).
GROUP_KEY_OPTIONS = (*keys_where(Share.RUN), *keys_where(Share.MATCHING))
# May differ between the members of a group that shares a run.
MEMBER_FILTERS = keys_where(Share.SELECT)
# What a discovery pass keeps: the scope, and with --target the kernel filters too.
SCOPE_KEYS = keys_where(discovery=Discovery.SCOPE)
KERNEL_KEYS = keys_where(discovery=Discovery.KERNEL)
# Model fields whose text reaches ncu as it is.
NCU_TEXT_FIELDS = tuple(FIELD_OF_KEY.get(key, key) for key, role in OPTION_ROLES.items() if role.ncu_text)
