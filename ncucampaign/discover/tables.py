"""Tables of what discovery found."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table

from ncucampaign.discover.analysis import KernelSummary, readable, short
from ncucampaign.escaping import console_text
from ncucampaign.plan.expand import Invocation
from ncucampaign.results.metrics import middle
from ncucampaign.results.reading.reader import ReportedLaunch


def kernel_table(kernels: Sequence[KernelSummary], launches: int, limit: int) -> Table:
    table = Table(
        title=f"{launches} launches of {len(kernels)} kernel{'s' if len(kernels) != 1 else ''} "
        f"(launch limit {limit}), by GPU time",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for column in ("kernel", "demangled", "launches", "total us", "mean us", "share", "NVTX"):
        table.add_column(column, justify="right" if column in ("launches", "total us", "mean us", "share") else "left")
    for kernel in kernels:
        paths = ", ".join(f"{path or '(none)'} ({count})" for path, count in kernel.nvtx[:3])
        if len(kernel.nvtx) > 3:
            paths += ", ..."
        table.add_row(
            # both ends, as kernel names are shortened everywhere: cut at its end, moe_train's
            # `nvjet_sm90_tst_64x48_64x15_2x4_h_bz_bias_TNT` read as `..._bz_bia…`, its TNT/TNN lost
            console_text(middle(kernel.function, 40)),
            console_text(short(readable(kernel.demangled), 48)),
            str(kernel.launches),
            f"{kernel.total_ns / 1000:.1f}",
            f"{kernel.mean_ns / 1000:.2f}",
            f"{kernel.share:.1%}",
            console_text(paths),
        )
    return table


def suggested_targets_table(base: Invocation, listed: Sequence[ReportedLaunch], profiled: frozenset[int]) -> Table:
    skip = base.options.launch_skip or 0
    count = base.options.launch_count
    picked = [launch.ordinal for launch in listed if launch.ordinal in profiled]
    title = (
        f"{base.name}: {len(listed)} launches match its filters (ncu filtered them); "
        f"launch_skip {skip}, launch_count {count if count is not None else 'all'} profile "
        + (f"#{picked[0]}" + (f"..#{picked[-1]}" if len(picked) > 1 else "") if picked else "none of them")
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for column in ("launch_skip", "kernel", "us", "NVTX", ""):
        table.add_column(column, justify="right" if column in ("launch_skip", "us") else "left")
    for launch in listed:
        table.add_row(
            str(launch.ordinal),
            console_text(short(launch.function, 50)),
            f"{launch.duration_ns / 1000:.2f}" if launch.duration_ns is not None else "-",
            console_text(", ".join(launch.nvtx)),
            "[bold green]<- profiled[/]" if launch.ordinal in profiled else "",
        )
    return table
