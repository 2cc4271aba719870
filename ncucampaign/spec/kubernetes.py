"""The campaign's `kubernetes:` section: where a campaign's Indexed Job runs. Every key can
also come from a flag of `plan --k8s` / `run --k8s`, which wins. Pure models."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

# Kubernetes' own rules for names and labels (k8s.io/apimachinery's validation: IsDNS1123Label,
# IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue), so that what the API server would refuse
# at submission (exit 3) is a validation error (exit 2) naming the key.
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"  # one RFC 1123 label
DNS_LABEL = rf"^{_LABEL}$"
DNS_SUBDOMAIN = rf"^{_LABEL}(\.{_LABEL})*$"  # with at most 253 characters
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
LABEL_KEY = rf"^({_LABEL}(\.{_LABEL})*/)?{_NAME}$"  # an optional DNS subdomain prefix, then a name
LABEL_VALUE = rf"^({_NAME})?$"
IMAGE = r"^[!-~]+$"  # an image reference: printable ASCII, no blank (registry/name:tag@digest)

LabelKey = Annotated[str, StringConstraints(pattern=LABEL_KEY, max_length=253 + 1 + 63)]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE)]


SECTION = "kubernetes"  # the campaign's key of this section


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KubernetesVolume(_Frozen):
    """A PersistentVolumeClaim every pod mounts (ReadWriteMany): the run directory must be on it, at
    the same path as on the machine that submits."""

    claim: str = Field(pattern=DNS_SUBDOMAIN, max_length=253, description="the PersistentVolumeClaim's name")
    path: str = Field(
        pattern=r"^/[^\x00-\x1f\x7f]*$", description="where it is mounted, in the pods and on this machine"
    )


class Toleration(_Frozen):
    key: LabelKey | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _as_kubernetes_reads_it(self) -> Toleration:
        if self.operator == "Exists" and self.value:
            raise ValueError("a toleration with operator 'Exists' has no value (Kubernetes refuses one)")
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration without a key must have operator 'Exists' (it then tolerates every taint)")
        return self


class KubernetesSection(_Frozen):
    """Where the campaign's Indexed Job runs (plan --k8s, run --k8s)."""

    image: str | None = Field(None, pattern=IMAGE, description="the container image: ncucampaign, ncu and the workload")
    namespace: str = Field("default", pattern=DNS_LABEL)
    service_account: str | None = Field(None, pattern=DNS_SUBDOMAIN, max_length=253)
    volume: KubernetesVolume | None = Field(None, description="the ReadWriteMany claim that holds the run directory")
    node_selector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    queue: str | None = Field(None, pattern=LABEL_VALUE, description="a Kueue LocalQueue: the Job is queued by Kueue")
    parallelism: int | None = Field(None, ge=1, le=10_000, description="pods at once (default 1)")
    python: str = Field("python3", pattern=IMAGE, description="the image's Python that has ncucampaign")
