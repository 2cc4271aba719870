"""Handing an opened run to a batch system (sbatch, the Kubernetes API): a refused submission of a fresh run
leaves no run behind (folder removed, `latest` as it was); one of a resumed run says how to finish it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.open_run import OpenRun

T = TypeVar("T")  # what a system's submission hands back: a Submission, or several


def submitted(run: OpenRun, submit: Callable[[OpenRun], T], flag: str) -> T | None:
    """What `submit` made of the opened run (None: every target is ok already); it lets go of the run."""
    try:
        if not run.to_run:
            return None
        try:
            return submit(run)
        except EnvironmentProblem as exc:
            if run.settings.resume is None:  # nothing ran: no run directory left behind as `latest`
                run.close()  # the lock first: its file is in the folder that goes
                run.store.withdraw(run.latest_before)
                raise EnvironmentProblem(f"{exc}\nnothing was submitted and no run directory was kept") from None
            raise EnvironmentProblem(
                f"{exc}\nnothing was submitted; once that is mended, finish this run with: ncucampaign run --resume "
                f"{run.store.run.root} {flag}"
            ) from None
    finally:
        run.close()
