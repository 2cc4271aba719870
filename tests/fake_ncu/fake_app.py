"""A stand-in for a PyTorch workload, run under the fake ncu.

It "launches kernels" by writing `push NAME`, `pop` and `launch KERNEL` lines to the pipe the fake
ncu passes in FAKE_NCU_FD, and otherwise behaves like the decode benchmark docs/ncu-behaviour.md was measured
on: prefill, then decode steps with decode_step > layer > attention | mlp ranges. Its failure modes
are the ones docs/ncu-behaviour.md lists (exit codes, abort, hang) plus a flaky one.
"""

from __future__ import annotations

import os
import sys
import time
from types import SimpleNamespace

TYPE_CHECKING = False  # typing's own, without importing typing (a third of this fake's start)
if TYPE_CHECKING:
    from collections.abc import Callable

# argparse, re, signal, subprocess and pathlib are imported where used, or not at all: the suite starts this fake
# application about 3,000 times, and those imports were most of each start (docs/testing.md, "Where the time goes").

# name: (default, type). A bool is a flag, a list is appended to. The options of the decode benchmark this stands in
# for, and the knobs the tests turn (`--name value` or `--name=value`).
OPTIONS: dict[str, tuple[object, type]] = {
    "steps": (12, int),
    "layers": (2, int),
    "exit_code": (0, int),
    "crash": (False, bool),  # abort() after the run
    "hang_at_step": (None, int),
    "stubborn": (False, bool),  # ignore SIGINT/SIGTERM while hanging
    "sleeper_child": (False, bool),  # start a child that sleeps (a worker)
    "pid_file": (None, str),  # append this process's pid (and its child's)
    "flaky_file": (None, str),  # fail (exit 1) unless this file exists; create it
    "profiler_api_step": (None, int),
    "hang_file": (None, str),  # with --hang-at-step: hang only while this file exists
    "vary_file": (None, str),  # count runs in this file; every second run launches one more rmsnorm first
    "vary_runs": ("even", str),  # with --vary-file: which runs launch the extra rmsnorm (even, or 2,3,...)
    "vary_launch": ("warmup/rmsnorm_kernel", str),  # with --vary-file: the extra launch, RANGE/KERNEL
    "replay": (None, str),  # launch what a real trace lists instead (ncu's raw CSV page of it, demangled names)
    # count runs in this file; every second run launches each layer's attention before its rmsnorm (two threads or
    # streams whose launches interleave differently from run to run)
    "interleave_file": (None, str),
    "ranks": (1, int),  # with 2 or more, each step ends with an all-reduce (a collective)
    "nproc_per_node": (None, int),  # torchrun's spelling of --ranks
    "templated": (False, bool),  # also launch two instances of one templated elementwise kernel a layer
    "mlp_range": ("mlp", str),  # the name of the mlp range (aten::linear, as PyTorch's)
    "slower": ([], list),  # REGEX=FACTOR: the kernels whose function REGEX matches last FACTOR times as long
}


def refuse(message: str) -> None:
    print(f"fake_app.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv: list[str]) -> SimpleNamespace:
    """OPTIONS from `argv`; an unknown option, a missing value or one of the wrong type exits 2, with argparse's
    words (argparse itself is not imported: see above)."""
    args = {name: list(default) if kind is list else default for name, (default, kind) in OPTIONS.items()}
    words = iter(argv)
    for word in words:
        spelled, has_value, value = word.partition("=")
        name = spelled[2:].replace("-", "_") if spelled.startswith("--") else ""
        if name not in OPTIONS:
            refuse(f"unrecognized arguments: {word}")
        kind = OPTIONS[name][1]
        if kind is bool:
            args[name] = True
            continue
        if not has_value:
            value = next(words, None)  # type: ignore[assignment]
            if value is None:
                refuse(f"argument {spelled}: expected one argument")
        if kind is list:
            args[name].append(value)  # type: ignore[union-attr]
        else:
            try:
                args[name] = kind(value)
            except ValueError:
                refuse(f"argument {spelled}: invalid {kind.__name__} value: {value!r}")
    return SimpleNamespace(**args)


def main() -> int:
    args = parse_args(sys.argv[1:])
    ranks = args.nproc_per_node or args.ranks
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "-")

    channel = os.fdopen(int(os.environ["FAKE_NCU_FD"]), "w", buffering=1) if "FAKE_NCU_FD" in os.environ else None

    def emit(line: str) -> None:
        if channel is not None:
            channel.write(line + "\n")

    pids = [os.getpid()]
    if args.sleeper_child:
        import subprocess

        pids.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"]).pid)
    pid_file = args.pid_file or os.environ.get("FAKE_APP_PID_FILE")  # the variable: no file named in its argv,
    if pid_file:  # which a trace's key would hash (a count of starts that changed the key at every start)
        with open(pid_file, "a") as handle:
            handle.write("".join(f"{pid}\n" for pid in pids))

    for slower in args.slower:
        pattern, _, factor = slower.rpartition("=")
        emit(f"slower {pattern} {float(factor)}")

    if args.flaky_file and not os.path.exists(args.flaky_file):
        open(args.flaky_file, "w").close()
        print(f"[app pid={os.getpid()}] transient failure (first run)", flush=True)
        return 1

    if args.vary_file:  # a run-to-run difference (autotuning, say) that shifts every later launch
        number = count_run(args.vary_file)
        if number % 2 == 0 if args.vary_runs == "even" else str(number) in args.vary_runs.split(","):
            where, kernel = args.vary_launch.split("/", 1)
            emit(f"push {where}")
            emit(f"launch {kernel}")
            emit("pop")
    if args.replay:
        replay(args.replay, emit)
        return args.exit_code
    interleaved = bool(args.interleave_file) and count_run(args.interleave_file) % 2 == 0
    emit("push prefill")
    emit("launch nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT")
    emit("launch rmsnorm_kernel")
    emit("pop")
    for step in range(1, args.steps + 1):
        if args.profiler_api_step == step:
            emit("profiler start")
        if args.hang_at_step == step and (args.hang_file is None or os.path.exists(args.hang_file)):
            print(f"[app pid={os.getpid()}] hanging at step {step}", flush=True)
            if args.stubborn:
                import signal

                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while args.hang_file is None or os.path.exists(args.hang_file):
                time.sleep(0.2)
        emit("push decode_step")
        for _layer in range(args.layers):
            emit("push layer")
            if not interleaved:
                emit("launch rmsnorm_kernel")
            emit("push attention")
            emit("launch cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0")
            if args.templated:
                emit("launch void at::vectorized_elementwise_kernel<4, at::AddFunctor<c10::Half>>(int, T2)")
            emit("pop")
            if interleaved:
                emit("launch rmsnorm_kernel")
            emit(f"push {args.mlp_range}")
            emit("launch rmsnorm_kernel")
            emit("launch nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT")
            if args.templated:
                emit("launch void at::vectorized_elementwise_kernel<8, at::MulFunctor<c10::Half>>(int, T2)")
            emit("pop")
            emit("pop")
        if ranks > 1:  # NCCL's all-reduce: it waits for every rank, so ncu cannot replay it alone
            emit("collective ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
        emit("pop")
        if args.profiler_api_step == step:
            emit("profiler stop")
    print(f"[app pid={os.getpid()} gpu={gpu}] done steps={args.steps}", flush=True)
    if args.crash:
        os.abort()
    return args.exit_code


def replay(listing: str, emit: Callable[[str], None]) -> None:
    """Launch, in order and within their push/pop ranges, what a real trace listed (the CSV columns
    "Kernel Name" and the thread's push/pop stack): a real workload's names and ranges, for the fake ncu."""
    import csv
    import re

    stack: list[str] = []
    with open(listing) as handle:
        rows = list(csv.DictReader(handle))
    column = next(name for name in rows[0] if name.startswith("thread Domain"))
    for row in rows:
        if not (row.get("ID") or "").isdigit():
            continue  # the units row
        wanted = [entry.split(":")[1] for entry in re.findall(r'"([^"]*)"', row[column] or "")]
        while stack and stack != wanted[: len(stack)]:
            emit("pop")
            stack.pop()
        for name in wanted[len(stack) :]:
            emit(f"push {name}")
            stack.append(name)
        emit(f"launch {row['Kernel Name']}")
    for _ in stack:
        emit("pop")


def count_run(path: str) -> int:
    """This run's number (from 1), counted in the file at `path`."""
    if os.path.exists(path):
        with open(path) as handle:
            runs = int(handle.read() or 0) + 1
    else:
        runs = 1
    with open(path, "w") as handle:
        handle.write(str(runs))
    return runs


if __name__ == "__main__":
    sys.exit(main())
