"""A campaign as a Slurm job array, one task per unit, and its batch script. Pure. Slurm's SIGTERM reaches every
process of a job at once, and ncu killed so writes no report; so the script `exec`s the runner with
`--signal=B:INT@<grace>`: only the runner gets SIGINT, before the limit, and stops its ncu (docs/slurm.md)."""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from pathlib import Path

from ncucampaign.errors import control_characters, printable
from ncucampaign.plan.expand import MAX_RETRY_WAIT_S, Invocation
from ncucampaign.plan.units import UNIONS, ArrayTask, gpus_per_task, signal_grace

MARGIN_S = 300.0  # start-up, report reading, claims and records, per task
# Directives ncucampaign writes itself: passing them through would break the array or its records.
OWN_OPTIONS = ("--array", "--output", "--error", "--signal", "--wrap", "--parsable", "--open-mode", "-a", "-o", "-e")
# Options after which sbatch submits nothing, or nothing ncucampaign can follow.
NOT_SUBMITTING = ("--help", "--usage", "--version", "--test-only", "--wait", "-h", "-u", "-V", "-W")
# sbatch's short options (Slurm 22.05, `sbatch --help`): those that take a value, and flags. getopt reads
# a cluster the way `short_options` does: `-Qo<file>` is -Q, then -o with the value `<file>`.
SHORT_WITH_VALUE = frozenset("aAbBcCdDeFGiJLmMnNopqStwx")
SHORT_FLAGS = frozenset("hHIkOQsuvVW")


def check_slurm_args(args: Sequence[str]) -> str | None:
    """Why these --slurm-arg values cannot be used (None: they can). Each is one sbatch option, read as
    sbatch reads it: a long option may be any unique prefix of its name (`--outp` is `--output`), short
    ones may carry a value (`-ofile`) or come several in one word (`-Qofile`); none may be one
    ncucampaign writes itself, or one after which sbatch submits nothing it can follow."""
    for arg in args:
        problem = _problem(arg)
        if problem is not None:
            return f"--slurm-arg {arg!r}: {problem}"
    return None


def _problem(arg: str) -> str | None:
    if not arg.startswith("-") or arg.strip("-") == "":
        return "pass sbatch options, e.g. --slurm-arg=--partition=gpu"
    if any(ch in arg for ch in "\n\r\0"):
        return "a line break or NUL cannot go into a batch script"
    if any(ch.isspace() for ch in arg):
        return "one sbatch option per --slurm-arg, its value joined with '=' (no spaces)"
    names = short_options(arg) if not arg.startswith("--") else [arg.split("=", 1)[0]]
    if names is None:
        return "not an sbatch short option (or cluster of them) ncucampaign knows to pass"
    for name in names:
        owned, stops = _resolved(name, OWN_OPTIONS), _resolved(name, NOT_SUBMITTING)
        if owned is not None:
            return f"ncucampaign sets {owned} itself (one array task per target, its output files)"
        if stops is not None:
            return f"{stops} does not submit an array ncucampaign can follow"
    return None


def short_options(arg: str) -> list[str] | None:
    """The short options one `-XYZ...` word sets, as sbatch's getopt reads it: flags until one that takes
    a value, which takes the rest of the word (`-Qo<file>`: -Q, -o). None: a letter sbatch has not."""
    found = []
    for index, letter in enumerate(arg[1:], start=1):
        if letter in SHORT_WITH_VALUE:
            found.append(f"-{letter}")
            return found
        if letter not in SHORT_FLAGS:
            return None
        found.append(f"-{letter}")
        if index == len(arg) - 1:
            return found
    return found


def _sets(arg: str, long: str, short: str) -> bool:
    """Whether one --slurm-arg word sets this option (`--time=..`, `--ti=..`, `-t1:00:00`, `-Ht..`)."""
    if arg.startswith("--"):
        return _resolved(arg.split("=", 1)[0], (long,)) is not None
    return short in (short_options(arg) or [])


def _resolved(name: str, options: Sequence[str]) -> str | None:
    """The option of `options` that `name` is, as sbatch resolves a long option's abbreviation; None: another."""
    if not name.startswith("--"):
        return name if name in options else None
    if len(name) <= 2:
        return None
    return next((own for own in options if own.startswith("--") and own.startswith(name)), None)


def task_seconds(invocations: Sequence[Invocation]) -> float:
    """The longest a task can take: every attempt of each invocation up to its timeout, the waits
    between them, the stop grace, and (a group) a trace and each member on its own after a failure."""
    total = 0.0
    for inv in invocations:
        waits = sum(min(inv.retry_delay * 2**n, MAX_RETRY_WAIT_S) for n in range(inv.retries))
        total += inv.timeout * (inv.retries + 1) + waits + 2 * inv.stop_grace
    if len(invocations) > 1:  # the trace and the union run, then possibly each member alone
        first = invocations[0]
        total += 2 * first.timeout * (first.retries + 1)
    return total + MARGIN_S


def slurm_time(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    days, minutes = divmod(minutes, 24 * 60)
    return f"{days}-{minutes // 60:02d}:{minutes % 60:02d}:00"


def _what(tasks: Sequence[ArrayTask]) -> str:
    if all(task.stage == UNIONS for task in tasks):
        return "the unions of its trace pool(s) as their first tasks plan them, each task taking one at a time"
    return "one per target or shared group"


def sbatch_file_name(folder: str, pattern: str) -> str:
    """A file `pattern` (its %A, %a expanded by Slurm) in `folder` as an `#SBATCH` line's value: sbatch reads the
    line as a command line of its own (blanks end a value, double quotes group, `\\"` is a quote inside them, `#`
    outside them starts a comment), then expands `%` patterns in file names (`%%` is one `%`): docs/slurm.md,
    "Paths" (measured on Slurm 22.05). Quoted here, so any printable folder reads back as itself; a backslash the
    folder holds would turn Slurm's patterns off, and refused_run_dir refuses it."""
    return '"' + folder.replace("%", "%%").replace('"', '\\"') + "/" + pattern + '"'


def refused_run_dir(run_dir: Path) -> str | None:
    """Why a run directory cannot be named in a batch script: a control character (a line of its own), or a
    backslash (Slurm then leaves %A and %a of the output files unexpanded)."""
    odd = control_characters(str(run_dir)) + (["\\"] if "\\" in str(run_dir) else [])
    if not odd:
        return None
    shown = " and ".join(repr(char) for char in odd)
    return (
        f"{printable(str(run_dir))}: a run directory for --slurm cannot hold {shown} (a control character would "
        "start a line of its own in the batch script; a backslash turns off Slurm's file name patterns); choose "
        "another --out"
    )


def batch_script(
    *,
    campaign: str,
    run_dir: Path,
    array: int,
    tasks: Sequence[ArrayTask],
    python: str,
    slurm_args: Sequence[str] = (),
    after: Sequence[str] = (),
) -> str:
    """`after`: the array tasks (<job>_<index>) this array starts after: the first tasks of the trace pools whose
    unions it runs (backends/batch/pools.py)."""
    everything = [inv for task in tasks for inv in task.invocations]
    longest = max(task_seconds(task.invocations) for task in tasks)
    user_time = any(_sets(a, "--time", "-t") for a in slurm_args)
    out = run_dir / "slurm" / "out"
    command = [python, "-m", "ncucampaign", "slurm-task", str(run_dir), "--array", str(array), "--index"]
    lines = [
        "#!/bin/bash",
        f"# ncucampaign: campaign {campaign}, array {array}: {len(tasks)} task(s), {_what(tasks)}",
        f"# collect: ncucampaign collect {shlex.quote(str(run_dir))}",
        "# cancel cleanly: scancel -t PENDING <job id>; scancel -b -s INT <job id>   (-b -s INT alone stops the",
        "#   running tasks, which record what they did, but lets pending ones start; then: ncucampaign run --resume",
        "#   RUN_DIR --slurm)",
        f"#SBATCH --job-name=ncucampaign-{campaign}",
        f"#SBATCH --array=0-{len(tasks) - 1}",
        "#SBATCH --ntasks=1",
        f"#SBATCH --gpus-per-task={gpus_per_task(everything)}",
        *([] if user_time else [f"#SBATCH --time={slurm_time(longest)}"]),
        f"#SBATCH --signal=B:INT@{signal_grace(everything)}",
        f"#SBATCH --output={sbatch_file_name(str(out), '%A_%a.out')}",
        "#SBATCH --open-mode=append",
        *(f"#SBATCH {arg}" for arg in slurm_args),
        # after the user's: a second stage starts once its pools' first tasks end (their plans are written)
        *([f"#SBATCH --dependency=afterany:{':'.join(after)}"] if after else []),
        "",
        "# exec: the runner is the batch shell, so Slurm's --signal reaches it (and not ncu) first",
        f'exec {shlex.join(command)} "$SLURM_ARRAY_TASK_ID"',
        "",
    ]
    return "\n".join(lines)
