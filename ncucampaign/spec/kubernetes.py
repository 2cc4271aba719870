"""The campaign's `kubernetes:` section (issue 34): where a campaign's Indexed Job runs. Every key can
also come from a flag of `plan --k8s` / `run --k8s`, which wins. Pure models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Kubernetes object names: RFC 1123 labels (namespaces, claims, accounts) and label values (a queue).
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KubernetesVolume(_Frozen):
    """A PersistentVolumeClaim every pod mounts (ReadWriteMany): the run directory must be on it, at
    the same path as on the machine that submits."""

    claim: str = Field(pattern=DNS_SUBDOMAIN, description="the PersistentVolumeClaim's name")
    path: str = Field(pattern=r"^/", description="where it is mounted, in the pods and on this machine")


class Toleration(_Frozen):
    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class KubernetesSection(_Frozen):
    """Where the campaign's Indexed Job runs (plan --k8s, run --k8s)."""

    image: str | None = Field(None, min_length=1, description="the container image: ncucampaign, ncu and the workload")
    namespace: str = Field("default", pattern=DNS_LABEL)
    service_account: str | None = Field(None, pattern=DNS_SUBDOMAIN)
    volume: KubernetesVolume | None = Field(None, description="the ReadWriteMany claim that holds the run directory")
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    queue: str | None = Field(None, pattern=LABEL_VALUE, description="a Kueue LocalQueue: the Job is queued by Kueue")
    parallelism: int | None = Field(None, ge=1, le=10_000, description="pods at once (default 1)")
    python: str = Field("python3", min_length=1, description="the image's Python that has ncucampaign")
