"""A Kubernetes API server and a fake kubelet for the k8s tests (../shared/k8s/notes.md).

`ApiServer`: kmock's in-memory API server (create, read, patch Jobs and their status), served over
HTTP from a thread of its own, with a kubeconfig that points at it. It has no scheduler, no Job
controller and no kubelet: `FakeKubelet` plays them. For each Job it finds, it starts every index's
command here, as the pod would (JOB_COMPLETION_INDEX, NODE_NAME, POD_NAME set), up to `parallelism`
at once; applies the Job's podFailurePolicy (FailIndex exit codes) and backoffLimitPerIndex (a new
pod for an index whose pod failed otherwise); then patches the Job's status as the Job controller
would (completedIndexes, failedIndexes, a Complete or Failed condition).

A test can have a pod killed: `kill[(index, attempt)]` is a predicate on the run directory, polled
while that pod runs; when it holds, every process of the pod (all that carry its POD_NAME, as a
container's end takes them all) gets SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

POLL_S = 0.05  # how often the kubelet looks for Jobs, and a pod for its kill condition


class ApiServer:
    def __init__(self, folder: Path, refuse: str | None = None) -> None:
        self.folder, self.refuse = folder, refuse
        self.url = ""
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        import kmock

        self._stop = asyncio.Event()
        emulator = kmock.KubernetesEmulator()
        emulator.resources["batch/v1/jobs"] = kmock.ResourceInfo(kind="Job", namespaced=True)
        if self.refuse is not None:  # every Job creation refused, as an API server says no (RBAC, quota, admission)
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": self.refuse,
                      "reason": "Forbidden", "code": 403}  # fmt: skip
            emulator["post /apis/batch/v1/namespaces/default/jobs"] << kmock.Response(status=403, payload=status)
        async with kmock.Server(emulator) as server:
            self.url = str(server.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> ApiServer:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("kmock's server did not start")
        return self

    def __exit__(self, *_: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def kubeconfig(self) -> Path:
        path = self.folder / "kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kmock", "cluster": {"server": self.url}}],
            "users": [{"name": "kmock", "user": {}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "kmock"}}],
            "current-context": "kmock",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def batch(self) -> Any:
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        return client.BatchV1Api(client.ApiClient(configuration))


class FakeKubelet:
    def __init__(self, server: ApiServer, env: dict[str, str], namespace: str = "default") -> None:
        self.api, self.env, self.namespace = server.batch(), env, namespace
        self.kill: dict[tuple[int, int], Callable[[], bool]] = {}
        self.pods: list[tuple[str, int, int, int]] = []  # job, index, attempt, exit code
        self.statuses: dict[str, dict[str, Any]] = {}
        self.logs: dict[str, str] = {}  # pod -> what it printed
        self._seen: set[str] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> FakeKubelet:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(120)

    def _watch(self) -> None:
        while not self._done.is_set():
            for job in self.api.list_namespaced_job(self.namespace).items:
                finished = any(c.type in ("Complete", "Failed") for c in (job.status and job.status.conditions) or [])
                if job.metadata.name not in self._seen and not finished:  # an earlier kubelet's Job stays done
                    self._seen.add(job.metadata.name)
                    self._run_job(job)
            self._done.wait(POLL_S)

    def _run_job(self, job: Any) -> None:
        spec = job.spec
        container = spec.template.spec.containers[0]
        fail_index: set[int] = set()
        for rule in spec.pod_failure_policy.rules if spec.pod_failure_policy else []:
            if rule.action == "FailIndex" and rule.on_exit_codes is not None:
                fail_index.update(rule.on_exit_codes.values)
        limit = spec.backoff_limit_per_index or 0
        name = job.metadata.name

        def one_index(index: int) -> bool:
            for attempt in range(limit + 1):
                pod = f"{name}-{index}-{attempt}"
                env = {**self.env, "JOB_COMPLETION_INDEX": str(index), "NODE_NAME": "fake-node", "POD_NAME": pod}
                process = subprocess.Popen(
                    container.command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
                condition = self.kill.get((index, attempt))
                while condition is not None and process.poll() is None:
                    if condition():
                        kill_pod(pod, env["KUBECONFIG"])
                        break
                    time.sleep(POLL_S)
                output = process.communicate()[0].decode(errors="replace")
                self.pods.append((name, index, attempt, process.returncode))
                self.logs[pod] = output
                if process.returncode == 0:
                    return True
                if process.returncode in fail_index:
                    return False
            return False

        with ThreadPoolExecutor(max(1, spec.parallelism or 1)) as pool:
            outcome = list(pool.map(one_index, range(spec.completions)))
        completed = [i for i, ok in enumerate(outcome) if ok]
        failed = [i for i, ok in enumerate(outcome) if not ok]
        status = {
            "completedIndexes": ",".join(map(str, completed)),
            "failedIndexes": ",".join(map(str, failed)),
            "succeeded": len(completed),
            "failed": len(failed),
            "conditions": [{"type": "Failed" if failed else "Complete", "status": "True"}],
        }
        self.statuses[name] = status
        self.api.patch_namespaced_job_status(name, job.metadata.namespace, {"status": status})


def kill_pod(pod: str, kubeconfig: str) -> None:
    """SIGKILL every process that carries POD_NAME=<pod> (and this test's KUBECONFIG: tests run side by
    side): the pod's whole container ends at once."""
    markers = {f"POD_NAME={pod}".encode(), f"KUBECONFIG={kubeconfig}".encode()}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if markers <= set((entry / "environ").read_bytes().split(b"\0")):
                os.kill(int(entry.name), signal.SIGKILL)
