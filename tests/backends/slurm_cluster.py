"""A real one-node Slurm for the tests: munged, slurmctld and slurmd from the distribution's packages,
brought up as root without systemd, with 4 fake GPUs (device nodes, so that Slurm sets
CUDA_VISIBLE_DEVICES per task), and torn down with every process it started (README.md, "Tests").

Each test session has a cluster of its own: its own folder (state, logs, pid files, a munged of its
own on its own socket), its own two free ports, and SLURM_CONF pointing there, so that two sessions
on one machine (two checkouts' `.ci/run` at once) never touch each other's daemons or jobs, and a real
Slurm on the machine is never touched. A session that ended without tearing its cluster down (killed)
leaves an owner that is no longer alive: the next session tears that cluster down first."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

GPUS = 4
PREFIX = "ncucampaign-test-slurm-"
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
WAIT_S = 300.0  # upper bounds of waits on Slurm's states: they hold on a machine at load 15
PID_NAMES = ("slurmctld.pid", "slurmd.pid", "munge/munged.pid")


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


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for one in sockets:
            one.bind(("127.0.0.1", 0))
        return [one.getsockname()[1] for one in sockets]
    finally:
        for one in sockets:
            one.close()


def _conf(base: Path, host: str, memory: int, ports: list[int]) -> str:
    return "\n".join(
        [
            f"ClusterName=ncucampaign-test\nSlurmctldHost={host}",
            f"SlurmctldPort={ports[0]}\nSlurmdPort={ports[1]}",
            f"SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nAuthInfo=socket={base / 'munge' / 'munge.socket'}",
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides\nGresTypes=gpu\nReturnToService=2\nMpiDefault=none",
            "SchedulerParameters=bf_interval=1,sched_min_interval=100000\nKillWait=5",
            f"StateSaveLocation={base / 'ctld'}\nSlurmdSpoolDir={base / 'd'}",
            f"SlurmctldPidFile={base / PID_NAMES[0]}\nSlurmdPidFile={base / PID_NAMES[1]}",
            f"SlurmctldLogFile={base / 'slurmctld.log'}\nSlurmdLogFile={base / 'slurmd.log'}",
            f"NodeName={host} NodeAddr=127.0.0.1 CPUs={GPUS} RealMemory={memory} Gres=gpu:{GPUS} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _memory() -> int:
    out = subprocess.run(["/usr/sbin/slurmd", "-C"], capture_output=True, text=True, timeout=60).stdout
    for word in out.split():
        if word.startswith("RealMemory="):
            return max(1, int(word.split("=", 1)[1]) - 256)
    return 1000


def _wait_for(check: Callable[[], bool], what: str, seconds: float = WAIT_S) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"Slurm test cluster: {what} did not happen within {seconds:g} s")


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _started_for(base: Path) -> list[int]:
    """Every process whose environment names this cluster's configuration: its daemons' job steps
    (slurmstepd) and the jobs' processes, which inherit SLURM_CONF."""
    marker = f"SLURM_CONF={base / 'slurm.conf'}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def stop(base: Path) -> None:
    """Tear the cluster in `base` down: its jobs cancelled, its daemons stopped, and whatever it
    started (job steps, jobs) killed; its folder removed."""
    if _alive(_pid(base / PID_NAMES[0])):
        env = {**os.environ, "SLURM_CONF": str(base / "slurm.conf")}
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, timeout=60)
    for name in PID_NAMES:  # slurmctld, slurmd, then munged: the daemons stop first
        pid = _pid(base / name)
        if _alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)  # type: ignore[arg-type]
            _wait_for(lambda p=pid: not _alive(p), f"{name} to stop", 60)
    for pid in _started_for(base):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(base, ignore_errors=True)


def _tear_down_orphans() -> None:
    """Clusters of sessions that ended without tearing them down (their owner is gone)."""
    for base in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if base.is_dir() and not _alive(_pid(base / "owner")):
            stop(base)


def _munged(base: Path) -> None:
    """A munged of this cluster's own, on its own socket (the system's key)."""
    folder = base / "munge"
    folder.mkdir()
    shutil.chown(folder, "munge", "munge")
    subprocess.run(
        ["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force", f"--socket={folder / 'munge.socket'}",
         f"--pid-file={base / PID_NAMES[2]}", f"--log-file={folder / 'munged.log'}",
         f"--seed-file={folder / 'munged.seed'}"],
        check=True, timeout=60,
    )  # fmt: skip


def start() -> Path:
    """Bring a cluster of this session's own up, with an empty job state; its folder."""
    _tear_down_orphans()
    base = Path(tempfile.mkdtemp(prefix=PREFIX))
    base.chmod(0o755)  # munged runs as its own user, in base/munge
    (base / "owner").write_text(f"{os.getpid()}\n")
    os.environ["SLURM_CONF"] = str(base / "slurm.conf")  # the daemons, and every client the tests start
    host = socket.gethostname().split(".")[0]
    for folder in (base / "ctld", base / "d", base / "gpus"):
        folder.mkdir()
    for index in range(GPUS):
        os.mknod(base / "gpus" / f"nvidia{index}", 0o666 | stat.S_IFCHR, os.makedev(195, index))
    (base / "slurm.conf").write_text(_conf(base, host, _memory(), _free_ports(2)))
    (base / "gres.conf").write_text(f"NodeName={host} Name=gpu File={base / 'gpus'}/nvidia[0-{GPUS - 1}]\n")
    _munged(base)
    subprocess.run(["/usr/sbin/slurmctld", "-c"], check=True, timeout=60)  # -c: no saved state
    subprocess.run(["/usr/sbin/slurmd"], check=True, timeout=60)
    _wait_for(_node_idle, "the node to become idle")
    return base


def _node_idle() -> bool:
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, timeout=60)
    return done.returncode == 0 and done.stdout.strip() == "idle"


@contextlib.contextmanager
def cluster() -> Iterator[Path]:
    before = os.environ.get("SLURM_CONF")
    base = start()
    try:
        yield base
    finally:
        stop(base)
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before


def _config(name: str) -> str | None:
    done = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60)
    for line in done.stdout.splitlines():
        key, _, value = (part.strip() for part in line.partition("="))
        if key == name:
            return value
    return None


@contextlib.contextmanager
def max_array_size(size: int) -> Iterator[None]:
    """The cluster with MaxArraySize=`size` (slurm.conf, `scontrol reconfigure`) while this lasts, then as it was."""
    conf = Path(os.environ["SLURM_CONF"])
    before = conf.read_text()
    conf.write_text(before + f"MaxArraySize={size}\n")
    try:
        subprocess.run(["scontrol", "reconfigure"], check=True, timeout=60)
        _wait_for(lambda: _config("MaxArraySize") == str(size), f"MaxArraySize {size}")
        yield
    finally:
        conf.write_text(before)
        subprocess.run(["scontrol", "reconfigure"], check=True, timeout=60)
        _wait_for(lambda: _config("MaxArraySize") not in (None, str(size)), "MaxArraySize as it was")
