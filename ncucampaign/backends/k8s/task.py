"""A pod's side of a Kubernetes Indexed Job: where it runs, from the Job and the downward API (JOB_COMPLETION_INDEX;
NODE_NAME, POD_NAME from the pod template). It claims and records as every batch task does (batch/task.py)."""

from __future__ import annotations

import socket
from collections.abc import Mapping

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.k8s.settings import KUBERNETES_BACKEND
from ncucampaign.errors import UsageError
from ncucampaign.execute.process.provenance import gpu_info
from ncucampaign.execute.rundir.manifest import TaskPlacement
from ncucampaign.plan.gpus import VISIBLE

INDEX = "JOB_COMPLETION_INDEX"


def pod_index(environ: Mapping[str, str]) -> int:
    index = environ.get(INDEX, "")
    if not index.isdigit():
        raise UsageError(f"k8s-task runs in a pod of an Indexed Job ({INDEX} is not set)")
    return int(index)


def pod_placement(files: BatchFiles, job: str, environ: Mapping[str, str]) -> TaskPlacement:
    """This pod: its Job ("namespace/name"), its index, its node, the GPUs the device plugin gave it."""
    index = pod_index(environ)
    host = socket.gethostname()
    visible = environ.get(VISIBLE)
    return TaskPlacement(
        backend=KUBERNETES_BACKEND,
        job_id=environ.get("POD_NAME") or host,
        array_job_id=job,
        array_task_id=index,
        node=environ.get("NODE_NAME") or host,
        cuda_visible_devices=visible,
        gpu_uuids=[gpu.uuid for gpu in gpu_info() or ()],
        record=files.record_path(job, index),
    )
