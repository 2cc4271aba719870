"""`run FILE --k8s`: create the run directory on the shared volume and submit its units as one
Kubernetes Indexed Job; with `--wait`, follow it until it ends and collect its records. `plan --k8s`
prints the Job. A refused submission leaves no run behind: its folder is removed and `latest` points
where it did before."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ncucampaign.commands.batch_runs import wait as follow
from ncucampaign.commands.common import out_console
from ncucampaign.commands.run_request import KubernetesFlags, RunRequest
from ncucampaign.commands.submission import open_and_submit, submitted
from ncucampaign.errors import EXIT_OK, UsageError, printable
from ncucampaign.execute.backends.k8s.api import require_cluster
from ncucampaign.execute.backends.k8s.submit import submit_job
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.k8s import settings_problem, with_flags
from ncucampaign.spec.kubernetes import SECTION, KubernetesSection
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.messages import message_for


def add_arguments(parser: argparse.ArgumentParser, submits: bool = True) -> None:
    what = "submit the targets as a Kubernetes Indexed Job" if submits else "print the Kubernetes Job run --k8s creates"
    parser.add_argument("--k8s", action="store_true", help=f"{what} (one index per target or group)")
    parser.add_argument("--k8s-image", metavar="IMAGE", help="the pods' image (over kubernetes.image)")
    parser.add_argument("--k8s-namespace", metavar="NS", help="over kubernetes.namespace (default: default)")
    parser.add_argument("--k8s-service-account", metavar="NAME", help="over kubernetes.service_account")
    parser.add_argument(
        "--k8s-volume", metavar="CLAIM:PATH", help="the ReadWriteMany claim holding the run directory, and its path"
    )
    parser.add_argument("--k8s-node-selector", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--k8s-toleration", action="append", default=[], metavar="KEY[=VALUE]:EFFECT", help="(repeatable)"
    )
    parser.add_argument("--k8s-queue", metavar="QUEUE", help="a Kueue LocalQueue (over kubernetes.queue)")
    parser.add_argument("--k8s-parallelism", type=int, metavar="N", help="pods at once (over kubernetes.parallelism)")


def k8s_settings(given: KubernetesFlags, loaded: LoadedCampaign) -> KubernetesSection:
    """The campaign's kubernetes: section with the flags over it, validated as the section is."""
    flags: dict[str, Any] = {
        "image": given.image,
        "namespace": given.namespace,
        "service_account": given.service_account,
        "queue": given.queue,
        "parallelism": given.parallelism,
        "node_selector": dict(_pair(item, "=", "--k8s-node-selector", "KEY=VALUE") for item in given.node_selector),
        "tolerations": [_toleration(item) for item in given.tolerations],
    }
    if given.volume:
        claim, path = _pair(given.volume, ":", "--k8s-volume", "CLAIM:PATH")
        flags["volume"] = {"claim": claim, "path": path}
    try:
        return with_flags(loaded.campaign.kubernetes, flags)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        where = (SECTION, *(part for part in problem["loc"] if part != "[key]"))
        shown = printable(".".join(str(part) for part in where[1:]))
        raise UsageError(f"--k8s: {shown}: {message_for(problem, where)}") from None


def _pair(item: str, separator: str, flag: str, form: str) -> tuple[str, str]:
    left, found, right = item.partition(separator)
    if not found or not left or not right:
        raise UsageError(f"{flag} {item!r}: write it as {form}")
    return left, right


def _toleration(item: str) -> dict[str, str]:
    key_value, _, effect = item.rpartition(":")
    if not key_value:
        raise UsageError(f"--k8s-toleration {item!r}: write it as KEY[=VALUE]:EFFECT (e.g. nvidia.com/gpu:NoSchedule)")
    key, has_value, value = key_value.partition("=")
    found = {"key": key, "operator": "Equal" if has_value else "Exists", "effect": effect}
    return {**found, "value": value} if has_value else found


def k8s_runs_root(root: Path, settings: KubernetesSection | None) -> Path:
    """With --k8s, run directories go on the shared volume: the campaign's own place when it is on
    it, else the volume's mount path."""
    if settings is None or settings.volume is None or root.is_relative_to(settings.volume.path):
        return root
    return Path(settings.volume.path)


def check(request: RunRequest) -> None:
    if not request.k8s:
        if request.k8s_flags.given:
            raise UsageError("the --k8s-... options go with --k8s")
        return
    if request.slurm:
        raise UsageError("--k8s and --slurm: choose one")
    if request.gpus or request.jobs_per_gpu != 1 or request.show_output:
        raise UsageError("--k8s gives each pod the GPUs its Job asks for: drop --gpus, --jobs-per-gpu, --show-output")


def submit(request: RunRequest, loaded: LoadedCampaign, plan: Plan, settings: RunSettings) -> int:
    section = k8s_settings(request.k8s_flags, loaded)
    problem = settings_problem(section, (settings.resume or settings.runs_root).absolute())
    if problem:
        raise UsageError(problem)
    require_cluster()
    if settings.weigh:
        print("ncucampaign: note: the timing pass (weigh) is not run in Kubernetes Jobs; findings of this run will "
              "rank by ncu's own estimates", file=sys.stderr)  # fmt: skip
    stop = StopRequest()
    console = out_console()
    with stop_on_signals(stop, lambda _level: None):
        run, array = open_and_submit(loaded, plan, settings, partial(submit_job, settings=section), "--k8s")
        if array is None:
            console.print(f"{plan.campaign}: every target is ok; nothing to submit", highlight=False)
            return EXIT_OK
        root = run.store.run.root
        namespace, _, name = (array.job_id or "/").partition("/")
        console.print(
            f"{plan.campaign}: created Kubernetes Job {array.job_id} ({len(array.tasks)} indexes) for {root}\n"
            f"  follow:  kubectl get job -n {namespace} {name}\n"
            f"  collect: ncucampaign collect {root}\n"
            f"  cancel:  kubectl delete job -n {namespace} {name}   (then: ncucampaign run --resume {root} --k8s)",
            highlight=False,
        )
        return follow(root, stop, console) if request.wait else submitted(stop)
