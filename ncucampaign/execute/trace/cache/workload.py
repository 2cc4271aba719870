"""What identifies a workload for the trace cache, and so a trace's key: tracked files by content (git's commit
and diff) and the files the command names; other files of its folder that could change what it runs, by name,
size and mtime (over MAX_FILES, nothing is reused); the packages a Python command runs with (packages.py); the
exported environment but for what only says where and how a shell runs (VOLATILE) and the run directories."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ncucampaign.execute.process.short import probe, probed
from ncucampaign.execute.rundir.manifest import GitInfo, Manifest
from ncucampaign.execute.trace.cache.changes import changed_since, earlier_outputs, label_of
from ncucampaign.execute.trace.cache.packages import packages_digest
from ncucampaign.execute.trace.cache.store import TraceKey, trace_key
from ncucampaign.plan.argv import ncu_options
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import VISIBLE

MAX_HASHED_BYTES = 64 << 20  # a file the command names is hashed only up to this size
MAX_FILES = 10_000  # beyond this many files in the working directory, no stamp is taken
MAX_DIFF_BYTES = 256 << 20  # a checkout whose uncommitted changes are larger is not identified (no cached trace)
SKIPPED_FOLDERS = frozenset({".git", "__pycache__", ".cache", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
# What only says where and how a shell or terminal runs, or which job of a scheduler: not the workload. The tasks of
# one batch run must find one trace: a Slurm task is also given GPU_DEVICE_ORDINAL, ROCR_VISIBLE_DEVICES and
# ZE_AFFINITY_MASK (its GPUs, as CUDA_VISIBLE_DEVICES), SLURMD_NODENAME, ENVIRONMENT=BATCH and a TMPDIR (seen on the
# test Slurm, 22.05; many sites make TMPDIR a folder of the job's own); a pod
# its HOSTNAME, JOB_COMPLETION_INDEX and the Kubernetes service variables (and our Job's POD_NAME and NODE_NAME).
VOLATILE = frozenset(
    {"PWD", "OLDPWD", "SHLVL", "_", "TERM", "COLORTERM", "COLUMNS", "LINES", "PS1", "PS2", "PS4", "PROMPT_COMMAND",
     "LS_COLORS", "MAIL", "DISPLAY", "WINDOWID", "STY", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "CUDA_VISIBLE_DEVICES",
     "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ENVIRONMENT", "HOSTNAME",
     "JOB_COMPLETION_INDEX", "POD_NAME", "NODE_NAME", "TMPDIR"}
)  # fmt: skip
VOLATILE_PREFIXES = ("SSH_", "XDG_", "TMUX", "VTE_", "KITTY_", "WT_", "ITERM", "HIST", "GPG_", "DBUS_", "SLURM_",
                     "SLURMD_", "NCUCAMPAIGN_", "KUBERNETES_")  # fmt: skip


def key_of(
    trace: Invocation,
    manifest: Manifest,
    gpus: tuple[str, ...] | None,
    runs_root: Path | None = None,
    kept_in: Path | None = None,
) -> TraceKey:
    """What a trace (or the timing pass) depends on: its command, environment (the campaign's over the
    exported one), the workload, ncu and the GPU model. `runs_root`: where run directories go; `kept_in`: the
    cache's folder, where the workload is kept to say what changed since the command's last trace (changes.py)."""
    env = {**exported_environment(os.environ), **dict(trace.env)}
    env.pop(VISIBLE, None)  # the GPU model counts, not which one
    known = {str(g.index): g.name for g in manifest.gpus or ()}
    gpu = known.get(gpus[0]) if gpus else (manifest.gpus[0].name if manifest.gpus else None)
    argv = [*ncu_options(trace), *trace.app_argv]
    label = label_of(trace.cwd, trace.app_argv)
    written = earlier_outputs(kept_in, label) | own_outputs(trace.cwd)
    data = workload_data(trace.cwd, trace.app_argv, manifest.workload_git, runs_root, written)
    workload = _digest(data) if data is not None else None
    packages = packages_digest(trace.app_argv, {**os.environ, **dict(trace.env)}, trace.cwd, manifest.run_id)
    if workload is not None and packages is not None:  # the environment the application runs with, as a run's
        workload = hashlib.sha256(f"{workload} {packages}".encode()).hexdigest()
    key = trace_key(argv, env, str(trace.cwd), workload, manifest.ncu.version, gpu)
    if data is None or kept_in is None:
        return key
    changed = changed_since(kept_in, label, data, written)
    return dataclasses.replace(key, changed=changed)


def exported_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a command inherits, less what only says where and how the shell runs."""
    return {
        name: value
        for name, value in environ.items()
        if name not in VOLATILE and not name.startswith(VOLATILE_PREFIXES)
    }


def workload_digest(
    cwd: Path, app_argv: tuple[str, ...], git: GitInfo | None, runs_root: Path | None = None
) -> str | None:
    """The workload by content and stamps (module docstring); None when it cannot be identified.
    `runs_root`: where run directories go, left out (they change with every run)."""
    data = workload_data(cwd, app_argv, git, runs_root)
    return _digest(data) if data is not None else None


def _digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def workload_data(
    cwd: Path,
    app_argv: tuple[str, ...],
    git: GitInfo | None,
    runs_root: Path | None = None,
    written: set[str] | frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """What workload_digest hashes: the commit, the uncommitted changes' digest, the named files' digests and the
    other files' stamps, but those of `written` (names under `cwd` runs wrote their own output to); None when the
    workload cannot be identified."""
    files = {}
    for word in app_argv:
        path = Path(word) if Path(word).is_absolute() else cwd / word
        with contextlib.suppress(OSError, ValueError):
            if path.is_file() and path.stat().st_size <= MAX_HASHED_BYTES:
                files[word] = hashlib.sha256(path.read_bytes()).hexdigest()
    changes = None
    if git is not None:
        diff = probed(["git", "-C", str(cwd), "diff", "HEAD", "--no-ext-diff", "--binary"], 60, limit=MAX_DIFF_BYTES)
        if not diff.ok:
            return None  # a checkout whose changes cannot be read cannot be identified
        changes = hashlib.sha256(diff.data).hexdigest()  # bytes: a diff need not be UTF-8
    others = _untracked(cwd) if git is not None else _walked(cwd)
    stamps = _stamps(cwd, others, runs_root, written) if others is not None else None
    if stamps is None:
        return None
    return {"commit": git.commit if git else None, "changes": changes, "files": files, "stamps": stamps}


def _untracked(cwd: Path) -> list[Path] | None:
    listed = probe(["git", "-C", str(cwd), "ls-files", "--others", "--exclude-standard", "-z"], timeout=60)
    if listed is None:
        return None
    names = [name for name in listed.split("\0") if name]
    return [cwd / name for name in names] if len(names) <= MAX_FILES else None


def _walked(cwd: Path) -> list[Path] | None:
    found: list[Path] = []
    for folder, subfolders, names in os.walk(cwd):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
        found.extend(Path(folder) / name for name in names)
        if len(found) > MAX_FILES:
            return None
    return found


def _stamps(
    cwd: Path, paths: Iterable[Path], runs_root: Path | None, written: set[str] | frozenset[str]
) -> dict[str, list[int]] | None:
    """Name -> [size, modification time] of each file (a link's own), run directories and `written` left out."""
    skip = _resolved(runs_root) if runs_root is not None else None
    stamps = {}
    for path in paths:
        with contextlib.suppress(OSError, ValueError):
            where = _resolved(path)
            if skip is not None and where is not None and (where == skip or skip in where.parents):
                continue
            name = str(path.relative_to(cwd))
            if name in written:
                continue
            info = path.lstat()
            stamps[name] = [info.st_size, info.st_mtime_ns]
    return stamps


def own_outputs(cwd: Path) -> set[str]:
    """The files under `cwd` this process's output goes to (`run big.yaml > run3.log` in the workload's folder),
    by name: the run writes them as it goes, the application never reads them, and stamped they made every next
    run trace again (changes.py keeps them for later runs too)."""
    found = set()
    root = _resolved(cwd)
    for fd in (1, 2):
        with contextlib.suppress(OSError, ValueError):
            if stat.S_ISREG(os.fstat(fd).st_mode):
                where = Path(os.readlink(f"/proc/self/fd/{fd}")).resolve()
                if root is not None and root in where.parents:
                    found.add(str(where.relative_to(root)))
    return found


def _resolved(path: Path) -> Path | None:
    """Where a path leads; None for a symlink loop (Python 3.11 raises RuntimeError, later ones OSError), which
    leads nowhere, so into no run directory: it is stamped as the link it is."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None
