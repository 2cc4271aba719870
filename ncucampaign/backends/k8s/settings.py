"""The Kubernetes backend's settings: the campaign's kubernetes: section with run's --k8s-... flags
over it, validated as the section is, and where its run directories go (the shared volume)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ncucampaign.backends.contract import Flag
from ncucampaign.backends.k8s.job import with_flags
from ncucampaign.errors import UsageError, printable
from ncucampaign.execute.rundir.request import BackendRequest
from ncucampaign.spec.kubernetes import SECTION, KubernetesSection
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.messages import message_for

KUBERNETES_BACKEND = "kubernetes"  # the manifest's `backend` of a Job and of a pod's placement
FLAGS = (
    Flag("--k8s-image", "the pods' image (over kubernetes.image)", "IMAGE"),
    Flag("--k8s-namespace", "over kubernetes.namespace (default: default)", "NS"),
    Flag("--k8s-service-account", "over kubernetes.service_account", "NAME"),
    Flag("--k8s-volume", "the ReadWriteMany claim holding the run directory, and its path", "CLAIM:PATH"),
    Flag("--k8s-node-selector", "(repeatable)", "KEY=VALUE", repeat=True),
    Flag("--k8s-toleration", "(repeatable)", "KEY[=VALUE]:EFFECT", repeat=True),
    Flag("--k8s-queue", "a Kueue LocalQueue (over kubernetes.queue)", "QUEUE"),
    Flag("--k8s-parallelism", "pods at once (over kubernetes.parallelism)", "N", number=True),
)


def k8s_settings(given: BackendRequest, loaded: LoadedCampaign) -> KubernetesSection:
    """The campaign's kubernetes: section with the flags over it, validated as the section is."""
    parallelism = given.value("--k8s-parallelism")
    flags: dict[str, Any] = {
        "image": given.value("--k8s-image"),
        "namespace": given.value("--k8s-namespace"),
        "service_account": given.value("--k8s-service-account"),
        "queue": given.value("--k8s-queue"),
        "parallelism": int(parallelism) if parallelism is not None else None,
        "node_selector": dict(
            _pair(item, "=", "--k8s-node-selector", "KEY=VALUE") for item in given.values("--k8s-node-selector")
        ),
        "tolerations": [_toleration(item) for item in given.values("--k8s-toleration")],
    }
    volume = given.value("--k8s-volume")
    if volume:
        claim, path = _pair(volume, ":", "--k8s-volume", "CLAIM:PATH")
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


def k8s_runs_root(root: Path, settings: KubernetesSection) -> Path:
    """Run directories go on the shared volume: the campaign's own place when it is on it, else the
    volume's mount path."""
    if settings.volume is None or root.is_relative_to(settings.volume.path):
        return root
    return Path(settings.volume.path)
