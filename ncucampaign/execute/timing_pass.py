"""The timing pass (`weigh: true`, `run --weigh`): the application's GPU time by kernel, to rank findings by
what they would gain it. One run under ncu with gpu__time_duration.sum, every launch, cached like a trace (same
key); listed with `--page raw --csv` (nanoseconds), summed by demangled name (PyTorch launches a dozen kernels
named `vectorized_elementwise_kernel`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.shared_record import new_shared_record
from ncucampaign.execute.rundir.manifest import GpuTime, KernelTime, Manifest
from ncucampaign.execute.rundir.status import TIMING_PREFIX, Status
from ncucampaign.execute.trace.cache.store import Cached, TraceCache, TraceKey
from ncucampaign.execute.trace.cache.workload import key_of
from ncucampaign.execute.trace.ncu_import import importer_of
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.share.launches import raw_csv_rows
from ncucampaign.plan.share.union import NO_CONFIG, TIMING_LAUNCHES, timing_invocation
from ncucampaign.spec.ncu_catalog import DURATION


def timing_listing_argv(ncu: str, report: Path, base: str = "mangled") -> list[str]:
    """Kernels by their symbol (`mangled`: ncu's console demangles templates differently from its
    report reader, `at::vectorized_elementwise_kernel<8, ...>` against `at::native::...<(int)8, ...>`),
    or by `demangled` name for people to read."""
    page = ["--page", "raw", "--csv", "--print-units", "base", "--print-kernel-base", base]
    return [ncu, "--import", str(report), *NO_CONFIG, *page]


# ncu's duration units (its units row): without --print-units base, 2025.3.1 printed "us" on the H200.
TO_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}


def gpu_time_of(listing: str, limit: int, run: str, names: str = "") -> GpuTime:
    """The listing's launches summed per kernel symbol (pure); rows without a duration are left out.
    `names`: the same report listed by demangled name, for each kernel's readable name."""
    rows = raw_csv_rows(listing)
    readable = {row.get("ID"): row.get("Kernel Name") or "" for row in raw_csv_rows(names)}
    name_of: dict[str, str] = {}
    units = next((row for row in rows if not (row.get("ID") or "").strip()), {})
    scale = TO_NS.get((units.get(DURATION) or "ns").strip())
    by_kernel: dict[str, list[float]] = {}
    for row in rows:
        ident, duration = (row.get("ID") or "").strip(), (row.get(DURATION) or "").replace(",", "").strip()
        try:
            value = float(duration)
        except ValueError:
            continue
        if ident.isdigit() and scale is not None:  # an unknown unit: no shares rather than wrong ones
            symbol = row.get("Kernel Name") or ""
            by_kernel.setdefault(symbol, []).append(value * scale)
            name_of.setdefault(symbol, readable.get(row.get("ID")) or symbol)
    kernels = sorted(
        (
            KernelTime(kernel=symbol, name=name_of[symbol], launches=len(times), ns=sum(times))
            for symbol, times in by_kernel.items()
        ),
        key=lambda k: -k.ns,
    )
    launches = sum(k.launches for k in kernels)
    return GpuTime(
        run=run, launches=launches, complete=launches < limit, total_ns=sum(k.ns for k in kernels), kernels=kernels
    )


def target_shares(manifest: Manifest) -> None:
    """Each target's share: the timed GPU time of the kernels its results profiled (each once)."""
    timing = manifest.gpu_time
    by_kernel = {k.kernel: k.ns for k in timing.kernels} if timing is not None else {}
    for target in manifest.targets:
        kernels = {r.mangled or r.demangled for r in target.results if r.workload == "kernel"}
        known = [by_kernel[k] for k in kernels if k in by_kernel]
        target.gpu_time_share = sum(known) / timing.total_ns if known and timing and timing.total_ns else None


def weigh(ctx: RunContext, plan: Plan, cache: TraceCache, limit: int = TIMING_LAUNCHES) -> None:
    """Time the application (or take the cached pass) and record gpu_time and each target's share; a failed
    pass records why (`gpu_time_note`). A cached pass that cannot be listed or times nothing is run again, once."""
    if not plan.invocations:
        return
    timing = timing_invocation(plan.invocations[0], limit)
    key = key_of(timing, ctx.book.manifest, None, cache.runs_root)
    for _ in range(2):
        with cache.key_lock(key):
            found = _timed(ctx, cache, key, timing)
        if isinstance(found, str):
            return _note(ctx, found)
        report, run, reused = found
        measured = _measured(ctx, report, run, limit)
        if isinstance(measured, GpuTime) or not reused:
            break
        cache.forget(key.digest)  # a damaged cache entry: every later run would say the same
    if isinstance(measured, str):
        return _note(ctx, measured)

    def record_it() -> None:
        ctx.book.manifest.gpu_time, ctx.book.manifest.gpu_time_note = measured, ""
        target_shares(ctx.book.manifest)

    ctx.book.commit(record_it, ctx.book.manifest, *ctx.book.manifest.targets)


def _timed(ctx: RunContext, cache: TraceCache, key: TraceKey, timing: Invocation) -> tuple[Path, str, bool] | str:
    """(the pass's report, what to call it, whether it came from the cache), or why there is none."""
    found = cache.find(key)
    if isinstance(found, Cached):
        return found.path, str(found.path), found.reused
    if found is not None:
        cache.forget(key.digest)  # not the file that was kept: timed again
    timing = dataclasses.replace(timing, name=f"{TIMING_PREFIX}{key.short}", target=f"timing-{key.short}")
    record = new_shared_record(ctx, timing, (), "trace", None, kind="timing")
    run_attempts(ctx, timing, record.argv, record, None, read_results=False)
    if record.status != Status.OK or record.report is None:
        return f"the timing pass {record.name} ended {record.status.value}: {record.message}"
    return cache.remember(key, ctx.run.root / record.report.path, record.seconds), record.name, False


def _measured(ctx: RunContext, report: Path, run: str, limit: int) -> GpuTime | str:
    """The pass's GPU time by kernel, or why it has none."""
    code, listing = importer_of(ctx).run(timing_listing_argv(ctx.ncu_path, report))
    if code != 0:
        return f"the timing pass's report could not be listed (ncu --import exited {code})"
    code, names = importer_of(ctx).run(timing_listing_argv(ctx.ncu_path, report, "demangled"))
    measured = gpu_time_of(listing, limit, run, names if code == 0 else "")
    return measured if measured.total_ns else "the timing pass timed no launch"


def _note(ctx: RunContext, why: str) -> None:
    ctx.book.commit(lambda: setattr(ctx.book.manifest, "gpu_time_note", why))
    ctx.reporter.echo(f"no GPU-time shares: {why}")
