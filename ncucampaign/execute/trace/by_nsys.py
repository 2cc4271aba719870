"""The tracer Nsight Systems: `nsys profile -t cuda,nvtx`, imported and exported to SQLite, read into launches
(nsys_export.py) that members' filters select as ncu would (plan/share/nsys_select.py). It costs about an
application start where ncu's trace adds ~10 ms a launch (docs/ncu-behaviour.md, "A trace by Nsight Systems
instead"). What keeps it from standing in (a filter only ncu applies, a multi-process launcher, no nsys, an
importer that cannot load, a failed step, a strange export) is the reason handed back; the next tracer takes it.
Which nsys: $NCUCAMPAIGN_NSYS (a path, or `off`), else the one beside ncu (bundled_nsys);
$NCUCAMPAIGN_NSYS_LIBRARY_PATH: libraries its QdstrmImporter lacks (libdw.so.1 on the H200 machine)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.shared_record import new_shared_record
from ncucampaign.execute.process.groups import RUN_MARKER, ProcessOutcome, run_in_group
from ncucampaign.execute.process.short import as_shown, run_captured
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import AttemptRecord, ReportInfo, SharedRunRecord
from ncucampaign.execute.rundir.report_record import report_info
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.cache.store import NSYS_SUFFIX, TraceCache, TraceKey
from ncucampaign.execute.trace.contract import Kept, Readiness, Taken, TraceAsk, trace_name
from ncucampaign.execute.trace.listings import Listings, Wanted, keep_launches, kept_launches, nsys_listings
from ncucampaign.execute.trace.nsys_export import Bounds, ExportRefused, read_export
from ncucampaign.own_time import CLOCK, TRACE_LISTING
from ncucampaign.plan.argv import shell_command
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.nsys_select import name_test, selector, why_not_launcher, why_not_nsys

NSYS_ENV = "NCUCAMPAIGN_NSYS"
NSYS_LIBRARIES_ENV = "NCUCAMPAIGN_NSYS_LIBRARY_PATH"
STEP_TIMEOUT_S = 300.0  # the import and the export: CPU work on what one application run recorded
CHECK_TIMEOUT_S = 15.0


@dataclasses.dataclass(frozen=True)
class NsysTools:
    nsys: Path
    importer: Path | None  # Nsight Compute's bundled nsys leaves a .qdstrm for it; None: nsys imports itself
    libraries: str | None  # LD_LIBRARY_PATH for the importer

    @property
    def identity(self) -> str:
        """What the trace cache keys an nsys trace by, beside ncu's own key."""
        return str(self.nsys)


def find_nsys(ncu_path: str, environ: Mapping[str, str]) -> NsysTools | str:
    """The nsys to trace with, or why there is none."""
    chosen = environ.get(NSYS_ENV, "").strip()
    if chosen.lower() == "off":
        return f"{NSYS_ENV}=off"
    if chosen:  # a path from where the user stands (nsys starts in the application's folder), or a name on PATH
        named = shutil.which(chosen) if os.sep not in chosen else None
        candidates = [Path(named or chosen).absolute()]
    else:
        found = shutil.which(ncu_path)
        if found is None:
            return "ncu's folder is unknown"
        candidates = bundled_nsys(Path(os.path.realpath(found)).parent)
    nsys = next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)
    if nsys is None:
        where = ", ".join(str(c) for c in candidates[:3])
        return f"no Nsight Systems at {where}" + ("" if chosen else f" (set {NSYS_ENV} to use one)")
    importers = sorted(nsys.parent.parent.glob("linux-desktop-glibc_*-x64/QdstrmImporter"))
    return NsysTools(nsys, importers[-1] if importers else None, environ.get(NSYS_LIBRARIES_ENV) or None)


def bundled_nsys(ncu_folder: Path, installs: Path = Path("/opt/nvidia/nsight-compute")) -> list[Path]:
    """The nsys shipped with Nsight Compute for an ncu in `ncu_folder`: in Nsight Compute's own folder; for a
    toolkit's bin/ncu (a script starting the newest Nsight Compute), in <toolkit>/nsight-compute-<version>/ or
    in `installs` (/usr/local/cuda-13.0/bin/ncu starts /opt/nvidia/nsight-compute/2025.3.1/ncu); newest first."""
    inside = Path("host") / "target-linux-x64" / "nsys"
    toolkit = sorted(ncu_folder.parent.glob("nsight-compute-*"), reverse=True)
    installed = sorted(installs.glob("*"), reverse=True) if installs.is_dir() else []
    return [ncu_folder / inside, *(folder / inside for folder in (*toolkit, *installed))]


def importer_problem(tools: NsysTools) -> str | None:
    """Why the importer cannot run here (None: it starts): checked before each trace, in milliseconds,
    so that a machine without its libraries pays no application run under nsys for nothing."""
    if tools.importer is None:
        return None
    code, output = run_captured([str(tools.importer), "--help"], CHECK_TIMEOUT_S, None, _libraries(tools))
    if code is None or code == 127 or "error while loading shared libraries" in output:
        lines = [line for line in output.splitlines() if line.strip()]
        return f"its importer {tools.importer.name} cannot run: {(lines[-1:] or ['no output'])[0][:200]}"
    return None


def _libraries(tools: NsysTools) -> dict[str, str]:
    if not tools.libraries:
        return {}
    earlier = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": tools.libraries + (f":{earlier}" if earlier else "")}


def profile_argv(nsys: Path, out_base: Path, app_argv: Sequence[str]) -> list[str]:
    """CUDA API and NVTX only (no CPU sampling, no context switches); a CUDA graph's kernels one by one, as ncu
    profiles them (nsys records a graph launch whole by default: `compiled` lost 16 kernels; docs/ncu-behaviour.md)."""
    return [str(nsys), "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--cuda-graph-trace=node",
            "-f", "true", "-o", str(out_base), *app_argv]  # fmt: skip


class NsysTracer:
    name = "nsys"
    label = "Nsight Systems"
    launch_s = 0.0  # it replays nothing: its seconds are a start under a tracer
    stops_at_count = False  # nsys records the whole run; the first launch_count of it are kept
    needs_confirming = True  # ncu's filters as applied here: ncu's runs confirm a miss

    def readiness(self, ncu_path: str, environ: Mapping[str, str]) -> Readiness:
        tools = find_nsys(ncu_path, environ)
        if isinstance(tools, str):
            off = environ.get(NSYS_ENV, "").strip().lower() == "off"
            return Readiness(False, tools, "" if off else f"set {NSYS_ENV}")
        problem = importer_problem(tools)
        if problem is not None:
            fix = f"set {NSYS_LIBRARIES_ENV} to a folder holding the library it lacks"
            return Readiness(False, f"the Nsight Systems at {tools.nsys}: {problem}", fix)
        return Readiness(True, str(tools.nsys))

    def stand_in(self, ask: TraceAsk, ncu_path: str) -> TraceKey | str:
        # The trace's filters select its launches; each member's own select its listings.
        reasons = (why_not_nsys(o, dict(ask.trace.env)) for o in (ask.trace.options, *(m.options for m in ask.members)))
        why = why_not_launcher(ask.trace.app_argv) or next(filter(None, reasons), None)
        tools = find_nsys(ncu_path, os.environ) if why is None else why
        if isinstance(tools, str):
            return tools
        digest = hashlib.sha256(f"{ask.key.digest} nsys {tools.identity}".encode()).hexdigest()
        return TraceKey(digest, ask.key.reusable)

    def take(self, ctx: RunContext, ask: TraceAsk, key: TraceKey, work: Path) -> Taken | str:
        tools = find_nsys(ctx.ncu_path, os.environ)
        problem = tools if isinstance(tools, str) else importer_problem(tools)
        if problem is not None or isinstance(tools, str):
            return problem or "no Nsight Systems"
        name = trace_name(key)
        trace = dataclasses.replace(ask.trace, name=name, target=name.rsplit("/", 1)[-1])
        record = new_shared_record(
            ctx, trace, ask.members, "trace", ask.gpus, kind="trace", traced_by=self.name, launch_s=self.launch_s
        )
        traced = _traced(ctx, trace, tools, record, work)
        if isinstance(traced, str):
            return traced
        launches, kept, profiled_s = traced  # the application's run alone calibrates what a start costs
        return Taken(Kept(kept, key.digest, tuple(launches)), record, profiled_s)

    def listings(self, ctx: RunContext, cache: TraceCache, kept: Kept, wanted: Wanted) -> Listings | str:
        launches = kept.launches if kept.launches is not None else kept_launches(kept.path)
        if launches is None:
            return f"the trace {kept.path.name} cannot be read (damaged, or kept by another version of ncucampaign)"
        return nsys_listings(launches, wanted)


def _traced(
    ctx: RunContext, trace: Invocation, tools: NsysTools, record: SharedRunRecord, work: Path
) -> tuple[list[Launch], Path, float] | str:
    """The launches traced, where they are kept, and the seconds nsys profile ran; or why there are none. The
    record's seconds are the whole trace's, its import and export read included (a 120 s read said 0.1 s)."""
    began = time.monotonic()
    argv = profile_argv(tools.nsys, work / "trace", trace.app_argv)
    attempt = AttemptRecord(number=1, started_at=now_iso(), status=Status.RUNNING)

    def started() -> None:
        record.argv, record.status = argv, Status.RUNNING
        record.shell_command = shell_command(argv, trace.env, trace.cwd)
        record.attempts.append(attempt)

    ctx.book.commit(started, record)
    ctx.reporter.attempt_started(trace, 1, 1, None)
    ctx.store.append_log(trace.name, f"# ncucampaign: the discovery trace by Nsight Systems, {now_iso()}\n")
    ctx.store.append_log(trace.name, f"# {shell_command(argv, trace.env, trace.cwd)}\n")
    outcome, why = _profiled(ctx, trace, argv, attempt, record)
    kept = ctx.run.inside("reports", trace.name + NSYS_SUFFIX)
    launches, why = _read(ctx, trace, tools, work, kept) if why is None else ([], why)
    status = Status.INTERRUPTED if outcome.interrupted else Status.OK if why is None else Status.PROFILER_ERROR
    message = f"{len(launches)} launches traced by Nsight Systems" if why is None else f"not used: {why}"
    ctx.store.append_log(trace.name, f"# ncucampaign: {message}\n")
    report = _report_info(ctx, kept, len(launches)) if why is None else None

    def finished() -> None:
        attempt.ended_at, attempt.seconds = now_iso(), round(outcome.seconds, 3)
        attempt.exit_code, attempt.status, attempt.message = outcome.exit_code, status, message
        record.status, record.message, record.seconds = status, message, round(time.monotonic() - began, 3)
        record.report, attempt.report = report, report.path if report is not None else None

    ctx.book.commit(finished, record)
    ctx.reporter.attempt_finished(trace, attempt, None)
    return (launches, kept, outcome.seconds) if why is None else why


def _profiled(
    ctx: RunContext, trace: Invocation, argv: list[str], attempt: AttemptRecord, record: SharedRunRecord
) -> tuple[ProcessOutcome, str | None]:
    """nsys profile's run of the application, and why it gives no trace (None: it does)."""
    try:
        outcome = run_in_group(
            argv,
            log_path=ctx.run.log(trace.name),
            cwd=trace.cwd,
            env_additions={**dict(trace.env), RUN_MARKER: str(ctx.run.root)},
            timeout=trace.timeout,
            stop=ctx.stop,
            grace=trace.stop_grace,
            on_start=lambda pid: ctx.book.commit(lambda: setattr(attempt, "process_group", pid), record),
        )
    except EnvironmentProblem as exc:  # nsys itself does not start: ncu's trace stands in, as for any refusal
        return ProcessOutcome(None, 0.0, False, False, (), 0), f"nsys {exc}"
    return outcome, _why_not_profiled(outcome.exit_code, outcome.timed_out, outcome.interrupted, trace.timeout)


def _read(
    ctx: RunContext, trace: Invocation, tools: NsysTools, work: Path, kept: Path
) -> tuple[list[Launch], str | None]:
    """The launches nsys recorded that the trace's filters select (the first of them up to its launch count, as ncu's
    trace holds them), imported, exported and kept in `kept`; or why they cannot stand in for ncu's."""
    found = _imported_and_exported(ctx, trace.name, tools, work)
    if isinstance(found, str):
        return [], found
    try:
        with CLOCK.phase(TRACE_LISTING):
            options, count = trace.options, trace.options.launch_count or 0
            held = read_export(found, selector(options), count, Bounds(ctx.stop), name_test(options))
        keep_launches(kept, held)
    except ExportRefused as exc:
        return [], str(exc)
    except OSError as exc:  # a full or read-only disk: the run goes on with the next tracer
        return [], f"its launches cannot be kept in {kept.name}: {exc.strerror or exc}"
    return held, None


def _report_info(ctx: RunContext, kept: Path, launches: int) -> ReportInfo:
    return report_info(kept, ctx.run.relative(kept), launches, "report")


def _why_not_profiled(code: int | None, timed_out: bool, interrupted: bool, timeout: float | None) -> str | None:
    if interrupted:
        return "interrupted"
    if timed_out:
        return f"nsys profile ran past the timeout ({timeout:g} s)"
    if code != 0:
        return f"nsys profile exited with {code} (the application's code, or nsys's own failure: see its log)"
    return None


def _imported_and_exported(ctx: RunContext, log: str, tools: NsysTools, work: Path) -> Path | str:
    """The trace's SQLite export, or why there is none (each step's output goes to the trace's log)."""
    report = work / "trace.nsys-rep"
    if not report.is_file():
        collected = work / "trace.qdstrm"
        if tools.importer is None or not collected.is_file():
            return "nsys profile wrote no report"
        why = _step(ctx, log, [str(tools.importer), "-f", "-i", str(collected)], _libraries(tools))
        if why is not None or not report.is_file():
            return why or f"{tools.importer.name} wrote no report"
    export = work / "trace.sqlite"
    why = _step(ctx, log, [str(tools.nsys), "export", "-t", "sqlite", "-f", "true", "-o", str(export), str(report)])
    if why is not None or not export.is_file():
        return why or "nsys export wrote no SQLite file"
    return export


def _step(ctx: RunContext, log: str, argv: list[str], env: Mapping[str, str] | None = None) -> str | None:
    """One short step in the work folder (the importer writes beside where it runs)."""
    marked = {**(env or {}), RUN_MARKER: str(ctx.run.root)}
    code, output = run_captured(argv, STEP_TIMEOUT_S, ctx.stop, marked, cwd=Path(argv[-1]).parent)
    ctx.store.append_log(log, f"# {' '.join(argv)}\n{as_shown(output).rstrip()}\n")
    if code == 0:
        return None
    lines = [line for line in as_shown(output).splitlines() if line.strip()]
    return f"{Path(argv[0]).name} {argv[1] if len(argv) > 1 else ''} failed ({code}): {(lines[-1:] or [''])[0][:200]}"
