"""Several runs of one campaign as one (`ncucampaign ab`): each target's results of every run, in
run order, as its samples. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.status import Status


def pooled(runs: Sequence[Manifest]) -> Manifest:
    """The first run, each of its targets holding the results of that target in every run (indexed
    anew). A target is ok only where it was ok in every run; otherwise it keeps the first failure."""
    first = runs[0]
    targets = []
    for record in first.targets:
        same = [t for run in runs for t in run.targets if t.name == record.name]
        targets.append(_pooled_target(same))
    return first.model_copy(update={"targets": targets})


def _pooled_target(records: Sequence[TargetRecord]) -> TargetRecord:
    failed = next((r for r in records if r.status != Status.OK), None)
    results = [r.model_copy(update={"index": i}) for i, r in enumerate(x for t in records for x in t.results)]
    base = failed if failed is not None else records[0]
    return base.model_copy(update={"results": results if failed is None else []})
