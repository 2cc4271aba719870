"""A real one-node Slurm for the tests: munged, slurmctld and slurmd from the distribution's packages,
brought up as root without systemd, with 4 fake GPUs (device nodes, so that Slurm sets
CUDA_VISIBLE_DEVICES per task), and torn down by their pid files (README.md, "Tests").

Everything it writes is private (BASE, its own ports, SLURM_CONF pointing there), so a real Slurm on
the same machine is never touched; the clients the tests run find it through SLURM_CONF."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

GPUS = 4
BASE = Path("/tmp/ncucampaign-test-slurm")
CONF = BASE / "slurm.conf"
FAKE_GPU_DIR = BASE / "gpus"
PID_FILES = (BASE / "slurmctld.pid", BASE / "slurmd.pid")
MUNGE_PID = Path("/run/munge/munged.pid")
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
PORTS = (16817, 16818)  # not Slurm's defaults: a real Slurm here keeps its own


def why_not() -> str | None:
    """None when a cluster can be brought up here; else why not (the tests print it when skipping)."""
    if os.geteuid() != 0:
        return "the Slurm tests bring up slurmctld/slurmd, which needs root"
    missing = [d for d in (*DAEMONS, "/usr/bin/sbatch") if not os.access(d, os.X_OK)]
    if missing:
        return (
            f"Slurm packages not installed ({', '.join(missing)}): apt-get install slurmctld slurmd slurm-client munge"
        )
    return None


def _conf(host: str, memory: int) -> str:
    return "\n".join(
        [
            f"ClusterName=ncucampaign-test\nSlurmctldHost={host}",
            f"SlurmctldPort={PORTS[0]}\nSlurmdPort={PORTS[1]}",
            "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge",
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides\nGresTypes=gpu\nReturnToService=2\nMpiDefault=none",
            "SchedulerParameters=bf_interval=1,sched_min_interval=100000\nKillWait=5",
            f"StateSaveLocation={BASE / 'ctld'}\nSlurmdSpoolDir={BASE / 'd'}",
            f"SlurmctldPidFile={PID_FILES[0]}\nSlurmdPidFile={PID_FILES[1]}",
            f"SlurmctldLogFile={BASE / 'slurmctld.log'}\nSlurmdLogFile={BASE / 'slurmd.log'}",
            f"NodeName={host} NodeAddr=127.0.0.1 CPUs={GPUS} RealMemory={memory} Gres=gpu:{GPUS} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _memory() -> int:
    out = subprocess.run(["/usr/sbin/slurmd", "-C"], capture_output=True, text=True, timeout=30).stdout
    for word in out.split():
        if word.startswith("RealMemory="):
            return max(1, int(word.split("=", 1)[1]) - 256)
    return 1000


def _wait_for(check: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"Slurm test cluster: {what} did not happen within {seconds:g} s")


def _node_idle() -> bool:
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, timeout=30)
    return done.returncode == 0 and done.stdout.strip() == "idle"


def stop() -> None:
    for pid_file in PID_FILES:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
    for pid_file in PID_FILES:
        _wait_for(lambda p=pid_file: not _alive(p), f"{pid_file.name} to stop", 30)


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (OSError, ValueError):
        return False
    return True


def start() -> None:
    """Bring the cluster up (after stopping one a crashed test run left), with an empty job state."""
    os.environ["SLURM_CONF"] = str(CONF)  # the daemons, and every client the tests start
    stop()
    host = socket.gethostname().split(".")[0]
    for folder in (BASE / "ctld", BASE / "d"):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    FAKE_GPU_DIR.mkdir(parents=True, exist_ok=True)
    for index in range(GPUS):
        node = FAKE_GPU_DIR / f"nvidia{index}"
        if not node.exists():
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(195, index))
    CONF.write_text(_conf(host, _memory()))
    (BASE / "gres.conf").write_text(f"NodeName={host} Name=gpu File={FAKE_GPU_DIR}/nvidia[0-{GPUS - 1}]\n")
    if not _alive(MUNGE_PID):  # munged may serve a real Slurm here too: then it is used as it is
        munge = MUNGE_PID.parent
        munge.mkdir(exist_ok=True)
        shutil.chown(munge, "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force"], check=True, timeout=30)
    subprocess.run(["/usr/sbin/slurmctld", "-c"], check=True, timeout=30)  # -c: no saved state
    subprocess.run(["/usr/sbin/slurmd"], check=True, timeout=30)
    _wait_for(_node_idle, "the node to become idle")


@contextlib.contextmanager
def cluster() -> Iterator[None]:
    before = os.environ.get("SLURM_CONF")
    start()
    try:
        yield
    finally:
        stop()
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before
