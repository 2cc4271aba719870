"""`ncucampaign doctor`'s checks, each with its fix in one line. Every check returns a value; reading ncu's
output and the numbers is pure (`counters_check`, `disk_check`, `stray_files`), the rest asks the machine once.
The counters probe profiles one empty kernel (execute/probe_app.py) with one metric; permission problems show
only there (ERR_NVGPUCTRPERM, exit 1 after the application ended: ../shared/ncu/reference.md 8.3)."""

from __future__ import annotations

import errno
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.attempt.refusals import machine_refusal
from ncucampaign.execute.doctor_check import Check
from ncucampaign.execute.process.provenance import asked_gpus, asked_version
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.trace.contract import Readiness
from ncucampaign.execute.trace.tracers import TRACERS
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.plan.share.union import NO_CONFIG
from ncucampaign.spec.ncu_catalog import DURATION

PROBE_TIMEOUT_S = 60.0
PROBE_KERNEL = "ncucampaign_probe"
PROBE_METRIC = DURATION
FAIL_BELOW_BYTES = 1 << 30  # a set: full report of one kernel is a few MB; a campaign's, hundreds
WARN_BELOW_BYTES = 10 << 30
STRAY_FILES = ("config.ncu-cfg", "ncu-kernel-renames.yaml")  # what ncu reads unasked (its --help)


def ncu_check(ncu: str) -> tuple[Check, str | None, str | None]:
    """ncu found and its version; with its absolute path and version for the later checks."""
    found = shutil.which(ncu)
    if not found:
        return (
            Check("ncu", "fail", f"{ncu!r} is not an executable on PATH",
                  "install Nsight Compute, or name it: --ncu PATH, NCUCAMPAIGN_NCU or the campaign's ncu: key"),
            None, None,
        )  # fmt: skip
    path = str(Path(found).absolute())
    version, why = asked_version(path)  # cached per ncu binary, as every run asks it
    if version is None:
        said = f"{path}: {why}" if why and why.startswith("--version") else f"{path} --version: {why}"
        return Check("ncu", "fail", said, "reinstall Nsight Compute"), path, None
    return Check("ncu", "ok", f"{path}, version {version}"), path, version


def gpus_check(environ: Mapping[str, str]) -> Check:
    gpus, why = asked_gpus()
    fix = (
        "run on a machine with an NVIDIA GPU and driver (a container: the NVIDIA Container Toolkit, "
        "--gpus all; Kubernetes: a nvidia.com/gpu limit)"
    )
    if gpus is None and why and "could not start" in why:
        return Check("GPUs", "fail", f"no NVIDIA driver here ({why})", fix)
    if gpus is None:  # there is a driver's tool, and it hangs or fails: the driver is not well
        return Check("GPUs", "fail", f"{why}", "see the driver's messages (dmesg, nvidia-bug-report.sh); "
                     "a reboot or a driver reload mends a hung driver")  # fmt: skip
    if not gpus:
        return Check("GPUs", "fail", "nvidia-smi lists no GPU", fix)
    visible = environ.get(VISIBLE)
    if visible is not None and visible.strip() in ("", "-1"):  # CUDA sees no device then
        return Check("GPUs", "fail", f"{VISIBLE}={visible!r} hides every GPU", f"unset {VISIBLE} or name a GPU")
    names = sorted({g.name for g in gpus})
    return Check("GPUs", "ok", f"{len(gpus)}: {', '.join(names)} (driver {gpus[0].driver_version})")


def probe_argv(ncu_path: str) -> list[str]:
    return [
        ncu_path, *NO_CONFIG, "--metrics", PROBE_METRIC, "--kernel-name", PROBE_KERNEL, "--launch-count", "1",
        sys.executable, "-m", "ncucampaign.execute.probe_app",
    ]  # fmt: skip


def counters_probe(ncu_path: str) -> Check:
    """Profile one kernel: the check that ncu can read the GPU's performance counters here."""
    started = time.perf_counter()
    code, output = run_captured(probe_argv(ncu_path), PROBE_TIMEOUT_S, env_additions={"PYTHONPATH": _package_path()})
    return counters_check(code, output, time.perf_counter() - started, _admin_only())


def counters_check(code: int | None, output: str, seconds: float, admin_only: bool | None = None) -> Check:
    """What the probe's ncu said. Pure. `admin_only`: the driver's RmProfilingAdminOnly, where readable."""
    name = "counters"
    refusal = machine_refusal([output], admin_only)
    if refusal is not None:
        return Check(name, "fail", refusal.detail, refusal.fix)
    by_hand = "run it by hand: ncu --metrics gpu__time_duration.sum python3 -m ncucampaign.execute.probe_app"
    if code is None:
        return Check(name, "fail", f"the probe did not finish in {PROBE_TIMEOUT_S:g} s", by_hand, certain=False)
    if code == 0 and f'==PROF== Profiling "{PROBE_KERNEL}"' in output:
        return Check(name, "ok", f"one kernel profiled in {seconds:.1f} s")
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if line.startswith(("==ERROR==", "probe:"))), None)
    said = said or (lines[-1] if lines else f"exit code {code}")
    return Check(name, "fail", f"ncu profiled nothing: {said[:300]}", by_hand, certain=False)


def stray_files(folders: Sequence[Path]) -> Check:
    """ncu's own configuration lying about. ncucampaign turns both off unless a campaign names them
    (--config-file off, --rename-kernels off), so they change no run of it; ncu run by hand reads them."""
    found = [folder / name for folder in folders for name in STRAY_FILES if (folder / name).is_file()]
    if not found:
        return Check("config files", "ok", "no config.ncu-cfg or ncu-kernel-renames.yaml where ncu looks")
    return Check(
        "config files", "warn",
        f"{', '.join(map(str, found))}: ncu reads it unasked; ncucampaign turns it off unless a campaign names it",
        "move it away, or name it in the campaign (config_file:) so that it is recorded",
    )  # fmt: skip


def ncu_config_folders(cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """Where ncu looks: the working directory and $HOME/.config/NVIDIA Corporation (its --help)."""
    home = environ.get("HOME")
    return [cwd, *([Path(home) / ".config" / "NVIDIA Corporation"] if home else [])]


def disk_check(runs_root: Path) -> Check:
    existing = next((p for p in (runs_root, *runs_root.parents) if p.exists()), Path("/"))
    try:
        stat = os.statvfs(existing)
    except OSError as exc:
        return Check("disk", "fail", f"{existing}: {exc.strerror or exc}", "choose another --out")
    read_only = bool(stat.f_flag & os.ST_RDONLY)
    unwritable = os.strerror(errno.EROFS) if read_only else None
    if unwritable is None and not os.access(existing, os.W_OK | os.X_OK):
        unwritable = "cannot be written by this user"
    return disk_outcome(runs_root, existing, stat.f_bavail * stat.f_frsize, unwritable)


def disk_outcome(runs_root: Path, existing: Path, free: int, unwritable: str | None) -> Check:
    """Pure: the run directories' folder, the nearest one that exists, its free bytes, and why it
    cannot be written (None: it can)."""
    where = f"{runs_root}" + ("" if existing == runs_root else f" (in {existing})")
    if unwritable:
        return Check("disk", "fail", f"{where}: {unwritable}", "choose another --out, or mend its permissions")
    gib = free / (1 << 30)
    if free < FAIL_BELOW_BYTES:
        # uncertain: a campaign of a few metrics needs a few MB (run notes it and goes on)
        return Check("disk", "fail", f"{where}: {gib:.2f} GiB free", "free some space, or choose another --out", False)
    if free < WARN_BELOW_BYTES:
        return Check("disk", "warn", f"{where}: {gib:.1f} GiB free: a set: full campaign may fill it", "")
    return Check("disk", "ok", f"{where}: {gib:.0f} GiB free")


def _admin_only() -> bool | None:
    try:
        text = Path("/proc/driver/nvidia/params").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("RmProfilingAdminOnly:"):
            return line.split(":", 1)[1].strip() == "1"
    return None


def _package_path() -> str:
    """The folder holding this ncucampaign, first on the probe's PYTHONPATH (a checkout not installed)."""
    here = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))


SHARED_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "ceph", "cephfs", "lustre", "glusterfs", "fuse", "gpfs", "beegfs")


def volume_check(runs_root: Path, mountinfo: str | None = None) -> Check:
    """Inside Kubernetes: the run directory must be on a volume every pod of the Job mounts (a
    ReadWriteMany one), or the pods' records never meet. From one pod this can only be seen from its
    side: the folder is writable here, and on a network filesystem rather than the container's own."""
    existing = next((p for p in (runs_root, *runs_root.parents) if p.exists()), Path("/"))
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            mountinfo = ""
    mount, fstype = mount_of(existing.resolve(), mountinfo)
    return volume_outcome(existing, mount, fstype, os.access(existing, os.W_OK | os.X_OK))


def volume_outcome(existing: Path, mount: str, fstype: str, writable: bool) -> Check:
    """Pure: the run directories' nearest existing folder, the mount it is on, that mount's type."""
    fix = "mount a ReadWriteMany volume (NFS, a CSI driver with RWX) at the run directory in every pod"
    if not writable:
        return Check("volume", "fail", f"{existing} cannot be written by this pod", fix)
    if fstype in ("overlay", "tmpfs", "") or mount == "/":
        shown = fstype or "unknown"
        return Check("volume", "fail", f"{existing} is on the container's own filesystem ({shown} at {mount}): "
                     "other pods cannot see it", fix)  # fmt: skip
    if fstype.split(".")[0] not in SHARED_FILESYSTEMS:
        return Check("volume", "warn", f"{existing} is on {fstype} at {mount}: shared between pods only if the "
                     "volume is ReadWriteMany", "check the PersistentVolumeClaim's accessModes")  # fmt: skip
    return Check("volume", "ok", f"{existing} is on {fstype} at {mount}")


def mount_of(path: Path, mountinfo: str) -> tuple[str, str]:
    """The mount point holding `path` and its filesystem type, from /proc/self/mountinfo. Pure."""
    best, fstype = "", ""
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if len(fields) < 5 or not after:
            continue
        point = fields[4].replace("\\040", " ")
        inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, fstype = point, after[0]
    return best, fstype


def machine_checks(ncu_path: str | None, runs_root: Path, cwd: Path, environ: Mapping[str, str]) -> list[Check]:
    """The checks after ncu's own (ncu_check) and the report reader's (results/reading/reader.py), in order;
    the probe is skipped when there is no ncu or no GPU to probe."""
    gpus = gpus_check(environ)
    checks = [gpus]
    if ncu_path is None or gpus.state == "fail":
        checks.append(Check("counters", "skip", "needs ncu and a GPU"))
    else:
        checks.append(counters_probe(ncu_path))
    if ncu_path is not None:
        checks.append(trace_check(ncu_path, environ))
    checks.append(stray_files(ncu_config_folders(cwd, environ)))
    checks.append(disk_check(runs_root))
    if environ.get("KUBERNETES_SERVICE_HOST"):
        checks.append(volume_check(runs_root))
    return checks


def trace_check(ncu_path: str, environ: Mapping[str, str]) -> Check:
    """Which tracer takes a shared run's discovery trace (docs/shared-runs.md): the first of the table
    (execute/trace/tracers.py) that can here; a warning when one before it cannot and can be mended
    (Nsight Systems, about an application start, where ncu's trace costs a start and ~10 ms a launch)."""
    passed: list[Readiness] = []
    for tracer in TRACERS:
        ready = tracer.readiness(ncu_path, environ)
        if ready.ready:
            said = passed[0] if passed else ready
            return Check("trace", "warn" if said.fix else "ok", f"by {tracer.label}: {said.said}", said.fix)
        passed.append(ready)
    return Check("trace", "warn", "no tracer can take a discovery trace: " + "; ".join(r.said for r in passed))


def run_checks(runs_root: Path) -> list[Check]:
    """What `run` asks before its first target: the disk. No counters probe: the run's first ncu process meets what the
    probe would, and the attempt that sees it stops the run (execute/attempt/refusals.py) with the same fix."""
    return [disk_check(runs_root)]


def before_run(checks: Sequence[Check]) -> list[str]:
    """What `run` does with run_checks' answers: the notes to print (warnings, uncertain failures);
    EnvironmentProblem (exit 3, each fix) for a failure every target would meet too. Pure."""
    refused = [c for c in checks if c.state == "fail" and c.certain]
    if refused:
        lines = [f"{c.name}: {c.detail}\n  fix: {c.fix}" for c in refused]
        raise EnvironmentProblem(
            "this machine cannot run the campaign; nothing was run:\n"
            + "\n".join(lines)
            + "\n(`ncucampaign doctor` shows every check)"
        )
    return [f"{c.name}: {c.detail}" for c in checks if c.state in ("warn", "fail")]
