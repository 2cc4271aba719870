"""The Kubernetes API, through the official `kubernetes` client (extra `k8s`): creating a Job, and asking which of a
run's Jobs still run. Where the API is comes from $KUBECONFIG (or ~/.kube/config), else from the pod's service account
(in-cluster). Every failure is an EnvironmentProblem with the API's own reason, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ncucampaign.errors import EnvironmentProblem, first_line, printable

NO_CLIENT = "--k8s needs the Kubernetes client: pip install 'ncucampaign[k8s]'"
REQUEST_TIMEOUT_S = 30


def _client() -> Any:
    try:
        import kubernetes
    except ImportError:
        raise EnvironmentProblem(NO_CLIENT) from None
    return kubernetes


def require_cluster() -> None:
    """Before a run directory is made for a submission that cannot be sent: the client is installed and
    a cluster is configured (nothing is asked of the cluster yet)."""
    batch_api()


def batch_api() -> Any:
    """A BatchV1Api for the configured cluster."""
    kubernetes = _client()
    try:
        api_client = kubernetes.config.new_client_from_config()
    except Exception as outside:  # no kubeconfig: are we in a pod?
        try:
            kubernetes.config.load_incluster_config()
            api_client = kubernetes.client.ApiClient()
        except Exception:
            raise EnvironmentProblem(
                f"no Kubernetes cluster configured: {first_line(outside) or type(outside).__name__} "
                "(set KUBECONFIG, or run inside a pod with a service account)"
            ) from None
    return kubernetes.client.BatchV1Api(api_client)


def validated_job(manifest: dict[str, Any]) -> Any:
    """The manifest as the client's V1Job model: what the client refuses (a wrong type, a missing
    required field) is refused here, before anything is sent; and a key the model does not know (a
    misspelt field, which the client would drop silently) by comparing the model's own dict with it."""
    kubernetes = _client()
    api = kubernetes.client.ApiClient()
    try:
        model = api.deserialize(json.dumps(manifest), "V1Job", "application/json")
    except Exception as exc:
        said = "; ".join(line.strip() for line in str(exc).splitlines()[:3] if line.strip())
        raise EnvironmentProblem(f"the Job is not valid for the Kubernetes client: {printable(said)}") from None
    lost = _first_difference(manifest, api.sanitize_for_serialization(model), "")
    if lost:
        raise EnvironmentProblem(f"the Job is not valid for the Kubernetes client: {lost}")
    return model


def _first_difference(sent: Any, kept: Any, path: str) -> str | None:
    if isinstance(sent, dict) and isinstance(kept, dict):
        for key, value in sent.items():
            if key not in kept:
                return f"{path}.{key}: not a field of the Kubernetes API"
            found = _first_difference(value, kept[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        for index, (left, right) in enumerate(zip(sent, kept, strict=True)):
            found = _first_difference(left, right, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if sent == kept else f"{path}: {sent!r} reads back as {kept!r}"


def create_job(manifest: dict[str, Any]) -> None:
    validated_job(manifest)
    api = batch_api()
    namespace = manifest["metadata"]["namespace"]
    try:
        api.create_namespaced_job(namespace, manifest, _request_timeout=REQUEST_TIMEOUT_S)
    except Exception as exc:
        raise EnvironmentProblem(f"the Kubernetes API refused the Job: {_reason(exc)}") from None


def active_jobs(job_ids: Iterable[str]) -> set[str] | None:
    """Which of these Jobs ("namespace/name") still run: no Complete or Failed condition yet. None
    when the API cannot say (no cluster configured, or it does not answer)."""
    wanted = sorted({job for job in job_ids if job})
    if not wanted:
        return set()
    try:
        api = batch_api()
    except EnvironmentProblem:
        return None
    active = set()
    for job in wanted:
        namespace, _, name = job.partition("/")
        try:
            found = api.read_namespaced_job(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except Exception as exc:
            if getattr(exc, "status", None) == 404:  # deleted (or its TTL ran out): it runs no more
                continue
            return None
        conditions = (found.status.conditions or []) if found.status else []
        if not any(c.type in ("Complete", "Failed") and c.status == "True" for c in conditions):
            active.add(job)
    return active


def _reason(exc: Exception) -> str:
    status, body = getattr(exc, "status", None), getattr(exc, "body", None)
    if body:
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            message = None
        if message:
            return f"{status}: {message}"
    return f"{status}: {first_line(exc)}" if status else first_line(exc) or type(exc).__name__
