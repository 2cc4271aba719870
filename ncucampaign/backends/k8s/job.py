"""A campaign as one Kubernetes Indexed Job, one index per unit as a Slurm array has a task per unit. Pure.
Each pod runs `ncucampaign k8s-task RUN_DIR --array N` for its JOB_COMPLETION_INDEX on a ReadWriteMany volume
at the submitting machine's path, and claims and records as Slurm tasks do. podFailurePolicy: exit 1 (failed
after its retries) and 2 (usage) fail the index, as a new pod would repeat them; anything else (killed,
evicted, out of memory) retries in a new pod up to the retries (backoffLimitPerIndex); a disruption is free."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ncucampaign.plan.units import UNIONS, ArrayTask, gpus_per_task, signal_grace
from ncucampaign.spec.kubernetes import KubernetesSection

CONTAINER = "ncucampaign"
FAIL_INDEX_CODES = (1, 2)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MAX_JOB_NAME = 52  # pods of an Indexed Job are named <job>-<index>-<suffix>; a label value holds 63


@dataclass(frozen=True)
class JobRequest:
    """Everything the Job is made of."""

    campaign: str
    run_dir: Path
    array: int
    run_id: str
    tasks: tuple[ArrayTask, ...]
    settings: KubernetesSection


def job_name(campaign: str, run_id: str, array: int, run_dir: Path) -> str:
    """ncucampaign-<campaign>-<run id>-<6 hex of the run directory>-<n>, a DNS label (lower case, [-a-z0-9],
    at most 52): two runs of one campaign started in one second elsewhere on the volume make two Jobs."""
    where = hashlib.sha256(str(run_dir).encode()).hexdigest()[:6]
    tail = f"-{re.sub(r'[^a-z0-9]+', '-', run_id.lower()).strip('-')}-{where}-{array}"
    head = re.sub(r"[^a-z0-9]+", "-", f"ncucampaign-{campaign.lower()}").strip("-")
    return (head[: MAX_JOB_NAME - len(tail)].rstrip("-") + tail).strip("-")


def label_value(text: str) -> str:
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:63]
    return value.strip("-_.") or "campaign"


def settings_problem(settings: KubernetesSection, run_dir: Path | None = None) -> str | None:
    """What the Job cannot do without (None: nothing)."""
    if settings.image is None:
        return "--k8s needs the container image: the campaign's kubernetes.image or --k8s-image"
    if settings.volume is None:
        return (
            "--k8s needs a ReadWriteMany volume for the run directory, mounted at the same path in every pod and "
            "here: the campaign's kubernetes.volume (claim, path) or --k8s-volume CLAIM:PATH"
        )
    if run_dir is not None and not run_dir.is_relative_to(settings.volume.path):
        return f"the run directory {run_dir} is not on the volume mounted at {settings.volume.path}"
    return None


def indexed_job(request: JobRequest) -> dict[str, Any]:
    """The Job, as `kubectl apply -f -` takes it."""
    settings = request.settings
    everything = [inv for task in request.tasks for inv in task.invocations]
    labels = {"app.kubernetes.io/name": "ncucampaign", "ncucampaign/campaign": label_value(request.campaign)}
    if settings.queue:
        labels[QUEUE_LABEL] = settings.queue
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": len(request.tasks),
        "parallelism": min(settings.parallelism or 1, len(request.tasks)),
        "backoffLimitPerIndex": max((inv.retries for inv in everything), default=0),
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailIndex",
                    "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": list(FAIL_INDEX_CODES)},
                },
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            ]
        },
        "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec(request)},
    }
    if settings.queue:
        spec["suspend"] = True  # Kueue admits it (and unsuspends it) when its queue has room
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(request.campaign, request.run_id, request.array, request.run_dir),
            "namespace": settings.namespace,
            "labels": labels,
            "annotations": {
                "ncucampaign/run-dir": str(request.run_dir),
                "ncucampaign/array": str(request.array),
                "ncucampaign/what": (
                    "the unions of its trace pool(s): each pod waits for the pool's plan, then takes them one at a time"
                    if all(task.stage == UNIONS for task in request.tasks)
                    else "one per target or shared group"
                ),
            },
        },
        "spec": spec,
    }


def pod_spec(request: JobRequest) -> dict[str, Any]:
    """Every pod: the task command, one GPU (or the targets' devices), the volume, where it may run."""
    settings = request.settings
    everything = [inv for task in request.tasks for inv in task.invocations]
    command = [settings.python, "-m", "ncucampaign", "k8s-task", str(request.run_dir), "--array", str(request.array)]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "command": command,
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "resources": {"limits": {"nvidia.com/gpu": str(gpus_per_task(everything))}},
    }
    pod: dict[str, Any] = {
        "restartPolicy": "Never",  # a podFailurePolicy needs it; a retry is a new pod
        # room for the runner to stop ncu (SIGINT, its report) and save its record after SIGTERM
        "terminationGracePeriodSeconds": signal_grace(everything),
        "containers": [container],
    }
    if settings.volume is not None:
        container["volumeMounts"] = [{"name": "runs", "mountPath": settings.volume.path}]
        pod["volumes"] = [{"name": "runs", "persistentVolumeClaim": {"claimName": settings.volume.claim}}]
    if settings.service_account:
        pod["serviceAccountName"] = settings.service_account
    if settings.node_selector:
        pod["nodeSelector"] = dict(settings.node_selector)
    if settings.tolerations:
        pod["tolerations"] = [t.model_dump(exclude_none=True) for t in settings.tolerations]
    return pod


def with_flags(section: KubernetesSection | None, flags: dict[str, Any]) -> KubernetesSection:
    """The campaign's section with the flags given on the command line over it."""
    base = (section or KubernetesSection()).model_dump()
    given = {key: value for key, value in flags.items() if value not in (None, [], {}, ())}
    if "node_selector" in given:  # a flag's label adds to the section's (or replaces one of the same key)
        given["node_selector"] = {**base["node_selector"], **given["node_selector"]}
    if "tolerations" in given:
        given["tolerations"] = [*base["tolerations"], *given["tolerations"]]
    return KubernetesSection.model_validate({**base, **given})


def task_names(tasks: Sequence[ArrayTask]) -> list[list[str]]:
    return [list(task.names) for task in tasks]


def job_yaml(job: dict[str, Any]) -> str:
    """The Job as YAML, with a comment saying how to follow it."""
    meta = job["metadata"]
    head = (
        f"# ncucampaign: campaign {job['metadata']['labels']['ncucampaign/campaign']}, "
        f"{job['spec']['completions']} index(es), {job['metadata']['annotations']['ncucampaign/what']}\n"
        f"# follow: kubectl get job -n {meta['namespace']} {meta['name']}; "
        f"collect: ncucampaign collect {meta['annotations']['ncucampaign/run-dir']}\n"
    )
    return head + yaml.safe_dump(job, sort_keys=False, width=1000)
