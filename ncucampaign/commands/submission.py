"""Opening a run and handing it to a batch system (Slurm's sbatch, the Kubernetes API), for both: a
refused submission of a fresh run leaves no run behind (its folder removed, `latest` where it was),
and a refused one of a resumed run says how to finish it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EnvironmentProblem, printable
from ncucampaign.execute.open_run import OpenRun, open_run
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import Submission
from ncucampaign.execute.rundir.store import latest_run
from ncucampaign.plan.expand import Plan
from ncucampaign.spec.loader import LoadedCampaign


def open_and_submit(
    loaded: LoadedCampaign, plan: Plan, settings: RunSettings, submit: Callable[[OpenRun], Submission], flag: str
) -> tuple[OpenRun, Submission | None]:
    """The opened run and what `submit` made of it; None when every target is ok already."""
    link = latest_run(settings.runs_root.absolute(), plan.campaign)
    before = os.readlink(link) if link.is_symlink() else None
    run = open_run(loaded, plan, settings)
    for note in run.notes:
        print(f"ncucampaign: note: {printable(note)}", file=sys.stderr)
    try:
        if not run.to_run:
            return run, None
        try:
            return run, submit(run)
        except EnvironmentProblem as exc:
            if settings.resume is None:  # nothing ran: no run directory left behind as `latest`
                run.close()  # the lock first: its file is in the folder that goes
                run.store.withdraw(before)
                raise EnvironmentProblem(f"{exc}\nnothing was submitted and no run directory was kept") from None
            raise EnvironmentProblem(
                f"{exc}\nnothing was submitted; once that is mended, finish this run with: ncucampaign run --resume "
                f"{run.store.run.root} {flag}"
            ) from None
    finally:
        run.close()


def submitted(stop: StopRequest) -> int:
    """The command's exit once a submission stands: 130 when a Ctrl-C came while it was made (it was
    finished and recorded first; the Job or array runs on)."""
    if stop.by_signal:
        print("ncucampaign: interrupted; the submission stands (cancel it as shown above)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK
