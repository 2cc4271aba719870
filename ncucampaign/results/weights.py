"""What a finding would gain the whole application: ncu's estimated speedup (of one kernel's time) times that
kernel's share of the application's GPU time (the timing pass). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import GpuTime, Manifest
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.results.metrics import middle
from ncucampaign.results.scaled import significant

TEXT_WIDTH = 72  # a kernel name in a line of text (JSON keeps it whole)


@dataclass(frozen=True)
class GainTerm:
    """One kernel's part of a finding's gain: its best estimated speedup times its share."""

    kernel: str  # the symbol (mangled name) shares are keyed by
    speedup: float  # percent of the kernel's own time (ncu's estimate)
    share: float | None  # fraction of the application's timed GPU time; None: not timed
    name: str = ""  # as people read it (ncu's demangled name)

    @property
    def gain(self) -> float | None:
        """Percent of the application's GPU time."""
        return self.speedup * self.share if self.share is not None else None

    def arithmetic(self) -> str:
        """Three significant digits each, so that the product can be checked by hand (a 0.2% speedup
        was printed as "0% x 12.8% of GPU time = 0.03%")."""
        shown = middle(self.name or self.kernel, TEXT_WIDTH)
        if self.share is None:
            return f"{percent(self.speedup)} x (no share known) for {shown}"
        return f"{percent(self.speedup)} x {percent(100 * self.share)} of GPU time = {percent(self.gain)} for {shown}"


def percent(value: float | None) -> str:
    return "unknown" if value is None else f"{significant(value)}%"


def timing_source(manifest: Manifest, timing: GpuTime) -> str:
    """'timing pass shared/timing-1', or 'timing pass (cached)' for a reused report (its path is a
    64-hex cache file nobody reads)."""
    ran = any(r.kind == "timing" and r.name == timing.run for r in manifest.shared_runs)
    return f"timing pass {timing.run}" if ran else "timing pass (cached)"


def weighed_as(result: ResultRecord) -> str:
    """What a result's share is looked up by: its symbol (older manifests: its demangled name)."""
    return result.mangled or result.demangled


def shares_by_kernel(manifest: Manifest) -> dict[str, float]:
    """Each timed kernel's share (0-1) of the application's timed GPU time, by symbol (results'
    `mangled`); {} when not timed."""
    timing = manifest.gpu_time
    if timing is None or not timing.total_ns:
        return {}
    return {k.kernel: k.ns / timing.total_ns for k in timing.kernels}


def kernel_names(manifest: Manifest) -> dict[str, str]:
    """Each timed kernel's readable name, by symbol."""
    return {k.kernel: k.name for k in manifest.gpu_time.kernels} if manifest.gpu_time else {}


def gain_terms(
    speedups: Iterable[tuple[str, float | None]], shares: Mapping[str, float], names: Mapping[str, str] | None = None
) -> list[GainTerm]:
    """One term per kernel, with the best speedup estimated for it (results without one add nothing)."""
    best: dict[str, float] = {}
    for kernel, speedup in speedups:
        if speedup is not None:
            best[kernel] = max(speedup, best.get(kernel, speedup))
    names = names or {}
    terms = [GainTerm(kernel, speedup, shares.get(kernel), names.get(kernel, "")) for kernel, speedup in best.items()]
    return sorted(terms, key=lambda t: (t.gain is None, -(t.gain or 0.0), -t.speedup))


def total_gain(terms: Iterable[GainTerm]) -> float | None:
    """Percent of the application's GPU time; None when no term has a share."""
    known = [t.gain for t in terms if t.gain is not None]
    return sum(known) if known else None


def gpu_time_line(manifest: Manifest) -> str | None:
    """What `run` prints at its end about the timing pass (None when the run was not weighed)."""
    timing = manifest.gpu_time
    if timing is None:
        return f"GPU time: not known ({manifest.gpu_time_note})" if manifest.gpu_time_note else None
    biggest = ", ".join(
        f"{middle(k.name or k.kernel, TEXT_WIDTH)} {100 * k.ns / timing.total_ns:.1f}%" for k in timing.kernels[:3]
    )
    return f"GPU time: {timing.launches} launches timed ({timing_source(manifest, timing)}); largest shares: {biggest}"


def gpu_time_summary(manifest: Manifest) -> str:
    """One line: where the shares come from, or why there are none."""
    timing = manifest.gpu_time
    if timing is None:
        why = manifest.gpu_time_note or "the run was not weighed (campaign key weigh: true, or run --weigh)"
        return f"no GPU-time share known: {why}; ranked by ncu's own estimates, each local to one kernel"
    scope = "every launch" if timing.complete else f"the first {timing.launches} launches (the pass's limit)"
    return (
        f"GPU time: {timing.total_ns / 1e6:.3f} ms in {timing.launches} launches of {len(timing.kernels)} kernels "
        f"({scope}; {timing_source(manifest, timing)}); ranked by estimated application gain = ncu's speedup x the "
        "kernel's share"
    )
