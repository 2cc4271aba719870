"""What a person sees during and after a run: a line per finished target, a live progress display
on a terminal (plain lines otherwise), and the final table. rich does the rendering."""

from __future__ import annotations

import sys
import time
from collections import Counter
from types import TracebackType

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from ncucampaign.backends.local import LOCAL
from ncucampaign.backends.systems import batch_system
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.parts.progress_text import launches_text
from ncucampaign.errors import printable
from ncucampaign.escaping import console_text
from ncucampaign.execute.attempt.launches import LaunchCount
from ncucampaign.execute.rundir.manifest import AttemptRecord, Manifest, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.share.text import short_names
from ncucampaign.results.run_summary import CAUSE_AT, FOLD_AT, causes, folded
from ncucampaign.results.sharing import how_obtained

PHASE_EVERY_S = 10.0  # on a pipe, a long phase says how far it is this often
LAUNCHES_EVERY_S = 30.0  # on a pipe, a running attempt says its launches this often (never silent for 60 s)

STATUS_STYLE = {
    Status.OK: "green",
    Status.INCOMPLETE: "yellow",
    Status.NO_KERNELS: "yellow",
    Status.INTERRUPTED: "magenta",
    Status.PENDING: "dim",
    Status.RUNNING: "cyan",
}


def results_text(record: TargetRecord) -> str:
    if record.report is None or record.report.results is None:
        return "-"
    expected = f"/{record.expected_results}" if record.expected_results is not None else ""
    return f"{record.report.results}{expected}"


def finished_line(position: int, total: int, record: TargetRecord, said_for: str | None = None) -> str:
    """`said_for`: the target whose line said this message already (a long one is then not said again)."""
    attempts = len(record.attempts)
    tries = f", {attempts} attempts" if attempts > 1 else ""
    where = f" [GPU {','.join(record.gpus)}]" if record.gpus else ""
    return (
        f"[{position}/{total}] {record.status.value:<14} {record.name}{where}  kernels {results_text(record)}  "
        f"{record.seconds:.1f}s{tries}  {_message(record.message, said_for)}"
    )


def _message(message: str, said_for: str | None) -> str:
    if said_for is None or len(message) <= SAID_AGAIN:
        return message
    return f"{message[: message.find(':') + 1] or message[:SAID_AGAIN]} as {said_for}'s above"


SAID_AGAIN = 100  # characters of a message a target's line says again whole (a longer one: "as t0's above")


class ConsoleReporter:
    """Reports progress; live (rich) on a terminal unless ncu's output is shown, plain lines otherwise."""

    def __init__(
        self, console: Console | None = None, live: bool | None = None, stopping: str = LOCAL.words.stopping
    ) -> None:
        """`stopping`: what the first Ctrl-C does, as the run's backend says it."""
        self.console = console or out_console()
        self.stopping_words = stopping
        self.err = out_console(stderr=True)
        self.live = self.console.is_terminal if live is None else live
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.lanes: dict[str, TaskID] = {}
        self.fold = False  # over FOLD_AT targets: a line for each one not ok, and the count now and then
        self.counts: Counter[str] = Counter()
        self.causes: Counter[tuple[Status, str]] = Counter()  # over FOLD_AT: each message said CAUSE_AT times at most
        self.first_said: dict[tuple[Status, str], str] = {}  # the target whose line said a message first
        self.phase_task: TaskID | None = None
        self.phase_said: tuple[str, float] = ("", 0.0)  # on a pipe: the last phase said, and when
        self.launches_said: dict[str, float] = {}  # on a pipe: when each running attempt's launches were last said
        self.running: dict[str, tuple[int, int]] = {}  # live: each running attempt's launches profiled, expected
        self.lane_of: dict[str, str] = {}  # live: the lane each attempt runs in
        self.profiled_before = 0  # live: the launches of attempts that ended

    def __enter__(self) -> ConsoleReporter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def _print(self, text: str, style: str | None = None) -> None:
        target = self.progress.console if self.progress is not None else self.console
        target.print(console_text(text), style=style, soft_wrap=True, highlight=False)

    def started(self, run: RunDir, plan: Plan, skipped: int = 0) -> None:
        count = len(plan.invocations) - skipped
        self.fold, self.counts, self.causes = count > FOLD_AT, Counter(), Counter()
        kept = f" ({skipped} already done, skipped)" if skipped else ""
        noun = "invocation" if count == 1 else "invocations"
        self._print(f"ncucampaign: {plan.campaign}: {count} {noun}{kept} -> {run.root}")
        if self.live:
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("all targets", total=count)

    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None = None) -> None:
        """On a terminal, one line per lane (GPU) says what it is doing."""
        if self.progress is None:
            return
        suffix = f" (attempt {number}/{of})" if number > 1 else ""
        key = lane or "running"
        if key not in self.lanes:
            self.lanes[key] = self.progress.add_task("", total=None)
        self.lane_of[invocation.name] = key
        self.progress.update(self.lanes[key], description=f"{key}: {invocation.name}{suffix}", total=None, completed=0)

    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None:
        if retry_in is not None:
            self._print(
                f"    {invocation.name}: attempt {attempt.number} {attempt.status.value}: {attempt.message}; "
                f"retrying in {retry_in:.0f}s",
                style="yellow",
            )

    def target_finished(self, position: int, total: int, record: TargetRecord) -> None:
        self.counts[record.status.value] += 1
        said = self.causes[record.status, record.message] = self.causes[record.status, record.message] + 1
        first = self.first_said.setdefault((record.status, record.message), record.name)
        if not self.fold or (record.status != Status.OK and said <= CAUSE_AT):
            again = first if first != record.name and record.status != Status.OK else None
            self._print(finished_line(position, total, record, again), style=STATUS_STYLE.get(record.status, "red"))
            for hint in record.diagnosis:
                self._print(f"    hint: {hint}", style="cyan")
            if self.fold and said == CAUSE_AT:
                self._print("    ... other targets that end the same way are counted at the end, not each said")
        elif self.progress is None and (position % max(1, total // 10) == 0 or position == total):
            counted = ", ".join(f"{n} {status}" for status, n in self.counts.most_common())
            self._print(f"[{position}/{total}] {counted}")  # on a pipe: how far, a tenth at a time
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task)

    def phase(self, what: str, progress: str = "") -> None:
        """Live, a line of its own that says what the run does now and how far it got; on a pipe, a line when it
        starts and every PHASE_EVERY_S seconds while it lasts."""
        shown = f"{what}: {progress}" if progress else what
        if self.progress is None:
            now = time.monotonic()
            if what != self.phase_said[0] or now - self.phase_said[1] >= PHASE_EVERY_S:
                self.phase_said = (what, now)
                self._print(f"  {shown}", style="dim")
            return
        if self.phase_task is None:
            self.phase_task = self.progress.add_task("", total=None)
        self.progress.update(self.phase_task, description=console_text(shown))

    def launches(self, invocation: Invocation, count: LaunchCount, done: bool = False) -> None:
        """How far an attempt is, by the launches ncu profiled and the time left (execute/attempt/launches.py). Live:
        its lane's bar counts them, and the targets' line the launches of every attempt running. On a pipe, for a
        shared run or trace, a line when it starts and ends; for any attempt, a line every LAUNCHES_EVERY_S while it
        runs (a union of an hour is never silent)."""
        now = time.monotonic()
        shown = launches_text(invocation.name, count, now, done)
        shared = invocation.name.startswith("shared/")
        if self.progress is None:
            said = self.launches_said.get(invocation.name)
            due = said is not None and now - said >= LAUNCHES_EVERY_S
            if (shared and (said is None or done)) or (due and not done):
                self.launches_said[invocation.name] = now
                self._print(f"  {shown}", style="dim")
            elif said is None:
                self.launches_said[invocation.name] = now
            if done:
                self.launches_said.pop(invocation.name, None)
            return
        self.running[invocation.name] = (count.profiled, count.expected or count.profiled)
        if done:
            self.running.pop(invocation.name, None)
            self.profiled_before += count.profiled
        lane = self.lanes.get(self.lane_of.get(invocation.name, ""))
        if lane is not None and count.expected and not done:
            key = self.lane_of[invocation.name]
            self.progress.update(lane, total=count.expected, completed=count.profiled, description=f"{key}: {shown}")
        if self.task is not None:
            profiled = self.profiled_before + sum(p for p, _ in self.running.values())
            self.progress.update(self.task, description=f"all targets ({profiled:,} launches profiled)")

    def stopping(self, level: int) -> None:
        if level >= 2:
            self.err.print("ncucampaign: killing the running attempt now.", style="bold red")
        else:
            self.err.print(f"ncucampaign: {self.stopping_words}", style="bold yellow")

    def echo(self, text: str) -> None:  # --show-output: the lines as printed, their control characters inert
        sys.stdout.write(printable(text, keep_newlines=True))
        sys.stdout.flush()


def final_table(manifest: Manifest, run_root: str, every: bool = False) -> Table:
    """A row a target; over FOLD_AT targets (unless `every`) those not ok (left_out_line counts the rest), and a row
    for each cause that closed several (run_summary.causes: their line names it once)."""
    shown, left_out = folded(manifest.targets, every)
    grouped = causes(shown) if left_out or (len(manifest.targets) > FOLD_AT and not every) else []
    in_groups = {name for cause in grouped for name in cause.names}
    shown = [record for record in shown if record.name not in in_groups]
    table = Table(title=f"{manifest.campaign.name}: {run_root}", box=box.SIMPLE_HEAD, title_justify="left")
    placed = [batch_system(record.placement.backend) for record in manifest.targets if record.placement]
    columns = (
        "target",
        "status",
        "attempts",
        "seconds",
        "kernels",
        "obtained",
        *((placed[-1].words.task_column,) if placed else ()),
        "report",
    )
    for column in columns:
        table.add_column(column, justify="right" if column in ("attempts", "seconds", "kernels") else "left")
    for record in shown:
        where = record.placement
        task = (
            f"{where.array_job_id}_{where.array_task_id} {where.node}"
            + ("" if not batch_system(where.backend).shows_gpus_set and where.cuda_visible_devices is None else
               f" GPU {where.cuda_visible_devices}")
            if where
            else "-"
        )  # fmt: skip
        table.add_row(
            console_text(record.name),
            f"[{STATUS_STYLE.get(record.status, 'red')}]{record.status.value}[/]",
            str(len(record.attempts)),
            f"{record.seconds:.1f}",
            results_text(record),
            console_text(how_obtained(record)),
            *((console_text(task),) if placed else ()),
            console_text(_report_cell(record)),
        )
    for cause in grouped:
        style = STATUS_STYLE.get(cause.status, "red")
        cells = ["-"] * (len(columns) - 2)
        table.add_row(console_text(short_names(cause.names)), f"[{style}]{cause.status.value}[/]", *cells)
    return table


def left_out_line(manifest: Manifest, every: bool = False) -> str | None:
    """What a folded final table leaves out (None: nothing)."""
    shown, left_out = folded(manifest.targets, every)
    if not left_out:
        return None
    rest = "every target" if not shown else f"{left_out} more targets"
    return f"{rest} ok: not shown one by one (run --all, or summarize, shows every row)"


def _report_cell(record: TargetRecord) -> str:
    if record.report:
        return record.report.path
    return f"log: {record.log}" if record.log and record.attempts else "-"
