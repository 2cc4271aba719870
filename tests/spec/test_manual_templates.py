"""Every ncu command of the manual, written as a target of campaigns/manual.yaml, plans to the
manual's own command: same options and values, same application, same environment.

Commands are copied verbatim from shared/manual/selective-ncu-profiling.zh.md. Option order is not
compared (ncu does not care, and the manual itself is not consistent); -f/-o are compared by report
name, because ncucampaign always chooses where reports go.
"""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path

import pytest

from ncucampaign.plan.argv import ncu_argv
from ncucampaign.plan.expand import build_plan
from ncucampaign.spec.loader import load_campaign
from ncucampaign.spec.ncu_catalog import known_options

ROOT = Path(__file__).resolve().parents[2]

MANUAL_COMMANDS = {
    "ncu_probe": """ncu --set basic \\
  --launch-count 30 \\
  --page raw \\
  -f -o ncu_probe \\
  python bench.py --args ...""",
    "ncu_my_kernel": """ncu --set full \\
  --kernel-name my_kernel \\
  --launch-count 1 \\
  -f -o ncu_my_kernel \\
  python bench.py --args ...""",
    "ncu_selected": """ncu --set full \\
  --kernel-name regex:".*(flash|cutlass|triton).*" \\
  --launch-count 3 \\
  -f -o ncu_selected \\
  python bench.py --args ...""",
    "ncu_attention": """ncu --set full \\
  --kernel-name-base demangled \\
  --kernel-name regex:".*Attention.*" \\
  --launch-count 1 \\
  -f -o ncu_attention \\
  python bench.py --args ...""",
    "ncu_decode_attention_11th": """ncu --set full \\
  --kernel-name regex:".*decode_attention.*" \\
  --launch-skip 10 \\
  --launch-count 1 \\
  -f -o ncu_decode_attention_11th \\
  python bench.py""",
    "ncu_one_decode": """ncu --set full \\
  --kernel-name regex:".*decode_attention.*" \\
  --launch-skip 5 \\
  --launch-count 1 \\
  --kill yes \\
  -f -o ncu_one_decode \\
  python bench.py""",
    "ncu_decode_step": """ncu --set full \\
  --nvtx \\
  --nvtx-include "decode_step/" \\
  --launch-count 1 \\
  -f -o ncu_decode_step \\
  python bench.py""",
    "ncu_decode_attention": """ncu --set full \\
  --nvtx \\
  --nvtx-include "decode_step/" \\
  --kernel-name regex:".*(attention|flash|paged).*" \\
  --launch-count 1 \\
  -f -o ncu_decode_attention \\
  python bench.py""",
    "ncu_decode_flash": """ncu --nvtx \\
  --nvtx-include "decode/*/attention" \\
  --kernel-name regex:".*flash.*" \\
  --launch-count 1 \\
  -f -o ncu_decode_flash \\
  python bench.py""",
    "ncu_decode_step_8_attention": """ncu --set full \\
  --nvtx \\
  --nvtx-include "decode_step/" \\
  --range-filter ::8 \\
  --kernel-name regex:".*attention.*" \\
  --launch-count 1 \\
  -f -o ncu_decode_step_8_attention \\
  python bench.py""",
    "ncu_profile_api_attention": """ncu --set full \\
  --profile-from-start off \\
  --kernel-name regex:".*attention.*" \\
  --launch-count 1 \\
  -f -o ncu_profile_api_attention \\
  python bench.py""",
    "ncu_py_stack_attention": """ncu --set full \\
  --call-stack-type python \\
  --python-include "decode.py@run_attention" \\
  --kernel-name regex:".*attention.*" \\
  --launch-count 1 \\
  -f -o ncu_py_stack_attention \\
  python bench.py""",
    "py_stack_function": """ncu --call-stack-type python \\
  --python-include "run_attention" \\
  python bench.py""",
    "ncu_matmul": """ncu --set full \\
  --nvtx \\
  --nvtx-include "target_matmul/" \\
  --kernel-name regex:".*(gemm|cutlass|cublas|nvjet).*" \\
  --launch-count 1 \\
  -f -o ncu_matmul \\
  python bench.py""",
    "ncu_decode16_attention": """ncu --set full \\
  --nvtx \\
  --nvtx-include "decode_step/" \\
  --range-filter ::16 \\
  --kernel-name regex:".*(attention|flash|paged).*" \\
  --launch-count 1 \\
  -f -o ncu_decode16_attention \\
  python bench.py""",
    "ncu_rmsnorm_triton": """ncu --section SpeedOfLight \\
  --section LaunchStats \\
  --section Occupancy \\
  --section SchedulerStats \\
  --section WarpStateStats \\
  --section MemoryWorkloadAnalysis \\
  --nvtx \\
  --nvtx-include "rmsnorm_kernel/" \\
  --kernel-name regex:".*triton.*" \\
  --launch-count 1 \\
  -f -o ncu_rmsnorm_triton \\
  python bench.py""",
    "ncu_torchrun_decode": """ncu --set full \\
  --target-processes all \\
  --target-processes-filter regex:".*python.*" \\
  --nvtx \\
  --nvtx-include "decode_step/" \\
  --kernel-name regex:".*attention.*" \\
  --launch-count 1 \\
  -f -o ncu_torchrun_decode \\
  torchrun --nproc_per_node=1 bench.py""",
    "ncu_rank0_decode": """CUDA_VISIBLE_DEVICES=0 ncu --devices 0 \\
  --target-processes all \\
  --nvtx \\
  --nvtx-include "decode_step/" \\
  --kernel-name regex:".*attention.*" \\
  --launch-count 1 \\
  -f -o ncu_rank0_decode \\
  torchrun --nproc_per_node=1 bench.py""",
    "ncu_target": """ncu --set full \\
  --nvtx \\
  --nvtx-include "<range_name>/" \\
  --kernel-name regex:"<kernel_keyword>" \\
  --launch-count 1 \\
  -f -o ncu_target \\
  python bench.py""",
    "ncu_iter": """ncu \\
  --section SpeedOfLight \\
  --section LaunchStats \\
  --section Occupancy \\
  --section SchedulerStats \\
  --section WarpStateStats \\
  --section MemoryWorkloadAnalysis \\
  --nvtx \\
  --nvtx-include "<range_name>/" \\
  --kernel-name regex:"<kernel_keyword>" \\
  --launch-count 1 \\
  -f -o ncu_iter \\
  python bench.py""",
    "ncu_by_name": """ncu --set full \\
  --kernel-name-base demangled \\
  --kernel-name regex:".*(cutlass|flash|triton).*" \\
  --launch-skip 5 \\
  --launch-count 1 \\
  -f -o ncu_by_name \\
  python bench.py""",
    "ncu_start_stop": """ncu --set full \\
  --profile-from-start off \\
  --kernel-name regex:".*target.*" \\
  --launch-count 1 \\
  -f -o ncu_start_stop \\
  python bench.py""",
    "list": """ncu --set basic --launch-count 100 --page raw \\
    --kernel-name regex:".*attention.*" \\
    -o list.ncu-rep python ...""",
}

# Options the manual shows as a fragment, not as a whole command.
MANUAL_FRAGMENTS = {
    "skip_startup": "--launch-skip-before-match 200",
    "process_scope": "--nvtx-push-pop-scope process",
    "graph_node": "--graph-profiling node",
    "graph_whole": "--graph-profiling graph",
    "real_cache": "--cache-control none",
}


def split_command(text: str) -> tuple[dict[str, str], list[tuple[str, str]], list[str]]:
    """`VAR=v ncu opts... app args` -> (env, [(flag, value)], app argv), with short flags made long."""
    words = shlex.split(text.replace("\\\n", " "))
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words.pop(0).endswith("ncu")
    options = known_options()
    pairs: list[tuple[str, str]] = []
    while words and words[0].startswith("-"):
        option = options[words.pop(0)]
        pairs.append((option.flag, words.pop(0) if option.takes_value else ""))
    return env, pairs, words


@pytest.fixture(scope="module")
def planned() -> dict[str, str]:
    plan = build_plan(load_campaign(ROOT / "campaigns" / "manual.yaml"))
    lines = {}
    for inv in plan.invocations:
        argv = ncu_argv(inv, "ncu", Path("reports"), ".ncu-rep")
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in inv.env)
        lines[inv.name] = f"{env} {shlex.join(argv)}".strip()
    return lines


def test_every_manual_command_is_a_target(planned: dict[str, str]) -> None:
    assert set(MANUAL_COMMANDS) | set(MANUAL_FRAGMENTS) == set(planned)


# What ncucampaign passes where a campaign names no config or renames file: nothing the
# manual wrote, and nothing a stray file beside the workload can change.
PINNED_OFF = (("--config-file", "off"), ("--rename-kernels", "off"))


@pytest.mark.parametrize("name", sorted(MANUAL_COMMANDS))
def test_target_plans_to_the_manual_command(planned: dict[str, str], name: str) -> None:
    manual_env, manual_options, manual_app = split_command(MANUAL_COMMANDS[name])
    env, options, app = split_command(planned[name])
    assert env == manual_env
    assert app == manual_app

    def without_output(pairs: list[tuple[str, str]]) -> Counter[tuple[str, str]]:
        return Counter(p for p in pairs if p[0] not in ("--force-overwrite", "--export"))

    if not any(flag == "--clock-control" for flag, _ in manual_options):  # pinned where a campaign sets none
        options = [pair for pair in options if pair != ("--clock-control", "base")]
    options = [pair for pair in options if pair not in PINNED_OFF]  # no config or renames file is read
    assert without_output(options) == without_output(manual_options)
    exports = [value for flag, value in manual_options if flag == "--export"]
    ours = [value for flag, value in options if flag == "--export"]
    assert ours == [f"reports/{name}.ncu-rep"]  # named with its suffix: ncu writes exactly that
    if exports:  # ncu appends .ncu-rep; the manual names the report with or without it
        assert exports[0].removesuffix(".ncu-rep") == name


@pytest.mark.parametrize("name", sorted(MANUAL_FRAGMENTS))
def test_target_holds_the_manual_fragment(planned: dict[str, str], name: str) -> None:
    _, options, _ = split_command(planned[name])
    flag, value = MANUAL_FRAGMENTS[name].split(" ")
    pinned = [] if flag == "--clock-control" else [("--clock-control", "base")]  # where a campaign sets none
    pinned += list(PINNED_OFF)
    assert [p for p in options if p[0] not in ("--force-overwrite", "--export")] == [(flag, value), *pinned]
