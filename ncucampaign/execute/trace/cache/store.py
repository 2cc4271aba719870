"""The cache of discovery traces: reused only when it is the file kept (stamp and digest) and describes the same
launches (command, environment, folder, workload: workload.py, ncu, GPU model). A stale trace cannot give a wrong
result (every split is verified); the timing pass, cached alike, is not, so the key changes whenever launches may."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.execute.rundir.cache_files import read_cache_text, sha256_of, stamp_of, write_cache_text
from ncucampaign.execute.trace.cache.kept_misses import KEPT_MISSES, MAX_MISSES_FILE, KeptMiss, KeptMisses
from ncucampaign.execute.trace.cache.side_file import KeptGroups, Seal, TraceSide
from ncucampaign.execute.trace.listings import MAX_LISTINGS_FILE, Listings, decode, encode
from ncucampaign.plan.share.partition import KeptPartition
from ncucampaign.spec.ncu_versions import REPORT_SUFFIXES

CACHE_FOLDER = Path(".cache") / "traces"
KEPT_RUNS = 6  # union runs kept per trace, to calibrate the partition's costs
NSYS_SUFFIX = ".nsys-launches.json"  # an Nsight Systems trace's launches (execute/trace/nsys_export.py)
_SUFFIXES = (*REPORT_SUFFIXES, NSYS_SUFFIX)
_LISTINGS, _MISSES = "listings", "misses"  # files kept beside a trace (_beside)


@dataclass(frozen=True)
class Cached:
    path: Path
    reused: bool  # True: kept by an earlier run


@dataclass(frozen=True)
class TraceKey:
    digest: str
    reusable: bool  # False: the workload cannot be identified, so only this run may use it
    changed: tuple[str, ...] = ()  # what changed in the workload since its command's last trace (changes.py)

    @property
    def short(self) -> str:
        return self.digest[:12]


def trace_key(
    argv: list[str], env: dict[str, str], cwd: str, workload: str | None, ncu_version: str | None, gpu: str | None
) -> TraceKey:
    """`workload`: workload_digest's (None: the workload cannot be identified; only this run uses it)."""
    data = {"argv": argv, "env": env, "cwd": cwd, "ncu": ncu_version, "gpu": gpu, "workload": workload}
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return TraceKey(digest, reusable=workload is not None)


class TraceCache:
    """Traces by key: in memory for this run, on disk under <runs root>/.cache/traces for later runs."""

    def __init__(self, runs_root: Path | None) -> None:
        self.runs_root = runs_root
        self.folder = runs_root / CACHE_FOLDER if runs_root is not None else None
        if self.folder is not None and any(p.is_symlink() for p in (self.folder, self.folder.parent)):
            self.folder = None  # a planted link would send traces (and reads) elsewhere: no cache
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._this_run: dict[str, Path] = {}
        self._seconds: dict[str, float] = {}
        self._cut_at: dict[str, int] = {}
        self._decoded: dict[tuple[str, tuple[int, ...], tuple[int, ...]], Listings] = {}

    def key_lock(self, key: TraceKey) -> threading.Lock:
        """Held while a trace is found or made, so that two lanes never run the same trace at once."""
        with self._lock:
            return self._locks.setdefault(key.digest, threading.Lock())

    def seconds(self, key: TraceKey) -> float | None:
        """How long the trace took when it ran (its application start calibrates the partition's
        costs, plan/share/partition.py); None when not recorded."""
        if key.digest in self._seconds:
            return self._seconds[key.digest]
        return self._side(key.digest).seconds

    def find(self, key: TraceKey) -> Cached | str | None:
        """The kept trace of `key`: this run's, or an earlier one's still the file it kept (stamp and digest
        hold); a string: why a kept file is not believed (damaged, replaced, kept unsealed); None: none kept."""
        if key.digest in self._this_run and self._this_run[key.digest].is_file():
            return Cached(self._this_run[key.digest], reused=False)
        cached = self._path(key)
        if not key.reusable or cached is None or not cached.is_file() or cached.is_symlink():
            return None
        seal = self._side(key.digest).kept
        if seal is None:
            return f"the cached trace {cached} was kept without a stamp and digest (by an older ncucampaign)"
        try:
            if seal.stamp != stamp_of(cached):
                return f"the cached trace {cached} is not the file that was kept (its stamp differs)"
            if seal.sha256 != sha256_of(cached):
                return f"the cached trace {cached} is not the file that was kept (its digest differs)"
        except OSError as exc:
            return f"the cached trace {cached} cannot be read: {exc.strerror or exc}"
        return Cached(cached, reused=True)

    def adopt(self, digest: str, report: Path, launches: int, seconds: float | None) -> None:
        """A trace this run took in another process (a pool's first task): its launches (cut: fewer) and seconds."""
        self._this_run[digest], self._cut_at[digest] = report, launches
        self._seconds.update({digest: seconds} if seconds is not None else {})

    def remember(self, key: TraceKey, report: Path, seconds: float | None = None) -> Path:
        """Keep a trace just made (and how long it took), sealed with its stamp and digest; the cached
        copy when the cache can hold it, else the report itself."""
        self._this_run[key.digest] = report
        self._forget_beside(key.digest, _MISSES)  # kept of the trace this one replaces
        if seconds is not None:
            self._seconds[key.digest] = seconds
        self._cut_at.pop(key.digest, None)
        cached = self._path(key, NSYS_SUFFIX if report.name.endswith(NSYS_SUFFIX) else report.suffix)
        if not key.reusable or cached is None:
            return report
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=cached.parent, suffix=".partial")
            os.close(handle)
            os.unlink(temporary)
            try:
                os.link(report, temporary)  # the same file, no second copy of a large trace
            except OSError:
                shutil.copyfile(report, temporary)  # another filesystem
            os.replace(temporary, cached)
            seal = Seal(stamp=stamp_of(cached), sha256=sha256_of(cached))
        except OSError:
            return report  # a cache that cannot be written only costs a later run its trace
        with self._lock:
            side = self._side(key.digest)
            side.kept = seal
            side.seconds = seconds if seconds is not None else side.seconds
            side.cut_at = None  # until note_cut says otherwise
            self._write_side(key.digest, side)
        return report

    def note_cut(self, key: TraceKey, launches: int) -> None:
        """The trace just kept was cut by its timeout holding `launches` launches: later runs know it for that."""
        self._cut_at[key.digest] = launches
        if self.folder is None or not key.reusable:
            return
        with self._lock:
            side = self._side(key.digest)
            side.cut_at = launches
            self._write_side(key.digest, side)

    def cut_at(self, key: TraceKey) -> int | None:
        """How many launches the kept trace holds when its timeout cut it short (None: it was not cut)."""
        if key.digest in self._cut_at:
            return self._cut_at[key.digest]
        return self._side(key.digest).cut_at

    def runs(self, digest: str) -> list[tuple[float, float]]:
        """What earlier shared runs on this trace took (newest last): (seconds, the replay seconds the
        cost model priced their launches at); [] when none were kept."""
        return list(self._side(digest).runs)

    def note_run(self, digest: str, seconds: float, priced: float) -> None:
        """Keep a union run's seconds and priced replay for later runs' partitions (the last few)."""
        if self.folder is None:
            return
        with self._lock:
            side = self._side(digest)
            side.runs = [*side.runs, (round(seconds, 3), round(priced, 3))][-KEPT_RUNS:]
            self._write_side(digest, side)

    def misses(self, digest: str) -> dict[str, KeptMiss]:
        """Members' own runs that profiled nothing past this trace (cache/kept_misses.py), by member key."""
        text = read_cache_text(self._beside(digest, _MISSES), MAX_MISSES_FILE) if self.folder is not None else None
        try:
            return KeptMisses.model_validate_json(text).misses if text is not None else {}
        except (ValueError, RecursionError):  # not JSON, or not an object: nothing kept
            return {}

    def note_miss(self, digest: str, member: str, miss: KeptMiss) -> None:
        if self.folder is not None:
            with self._lock:
                kept = {k: v for k, v in self.misses(digest).items() if k != member} | {member: miss}
                kept = dict(list(kept.items())[-KEPT_MISSES:])
                write_cache_text(self._beside(digest, _MISSES), KeptMisses(misses=kept).model_dump_json())

    def kept_partition(self, digest: str) -> KeptPartition | None:
        """The cheapest groups an earlier run on this trace measured (None: none kept, or unreadable)."""
        kept = self._side(digest).partition
        if kept is None:
            return None
        return KeptPartition(tuple(tuple(group) for group in kept.groups), kept.measured_s)

    def keep_partition(self, digest: str, kept: KeptPartition) -> None:
        """Keep the groups a run measured when they are the first kept, cheaper than those kept, or of
        other members (the campaign changed)."""
        if self.folder is None:
            return
        with self._lock:
            earlier = self.kept_partition(digest)
            names = sorted(name for group in kept.groups for name in group)
            same = earlier is not None and sorted(n for g in earlier.groups for n in g) == names
            if same and earlier is not None and earlier.measured_s <= kept.measured_s:
                return
            side = self._side(digest)
            side.partition = KeptGroups(groups=[list(g) for g in kept.groups], measured_s=round(kept.measured_s, 3))
            self._write_side(digest, side)

    def _side(self, digest: str) -> TraceSide:
        """What is kept beside a trace (its seconds, its union runs); nothing when nothing readable is."""
        text = read_cache_text(self.folder / f"{digest}.json") if self.folder is not None else None
        try:
            return TraceSide.model_validate_json(text) if text is not None else TraceSide()
        except (ValueError, RecursionError):  # not JSON, or not an object: nothing kept
            return TraceSide()

    def _write_side(self, digest: str, side: TraceSide) -> None:
        if self.folder is not None:
            write_cache_text(self.folder / f"{digest}.json", side.model_dump_json(exclude_defaults=True))

    def listings(self, digest: str, report: Path) -> Listings:
        """What ncu listed of the cached trace `report` in earlier runs ({}: none kept); decoded once a process."""
        if self.folder is None:
            return {}
        path = self._beside(digest, _LISTINGS)
        try:
            held = (digest, tuple(stamp_of(report)), tuple(stamp_of(path)))
            if held not in self._decoded:  # the latest only: a run lists one pool's trace at a time
                text = read_cache_text(path, MAX_LISTINGS_FILE)
                self._decoded = {held: decode(json.loads(text), stamp_of(report)) if text else {}}
            return self._decoded[held]
        except (OSError, ValueError, RecursionError):
            return {}

    def keep_listings(self, digest: str, report: Path, listed: Listings) -> None:
        """Keep what ncu listed of a trace the cache holds (`report`, or the cache's link to it), or of this run's own
        (a batch run's other tasks: stamped with this run's file, which no other file's stamp matches)."""
        cached = self._path(TraceKey(digest, reusable=True))
        held = cached if cached is not None and cached.is_file() and not cached.is_symlink() else None
        held = held or self._this_run.get(digest)
        if self.folder is None or held is None:
            return
        try:
            stamp = stamp_of(report)
            if stamp_of(held) != stamp:
                return  # not the file the cache (or this run) holds
        except OSError:
            return
        write_cache_text(self._beside(digest, _LISTINGS), encode(listed, stamp).model_dump_json())

    def forget_listings(self, digest: str) -> None:
        self._forget_beside(digest, _LISTINGS)

    def _forget_beside(self, digest: str, kind: str) -> None:
        if self.folder is not None:
            with contextlib.suppress(OSError):
                self._beside(digest, kind).unlink()

    def _beside(self, digest: str, kind: str) -> Path:
        """What is kept beside a trace: <digest>.<kind>.json (its listings, the misses past it)."""
        assert self.folder is not None
        return self.folder / f"{digest}.{kind}.json"

    def forget(self, digest: str) -> None:
        """Drop a cached trace that cannot be used (damaged); the next run traces again."""
        self._this_run.pop(digest, None)
        self.forget_listings(digest)
        self._forget_beside(digest, _MISSES)
        for suffix in _SUFFIXES:
            if self.folder is not None:
                with contextlib.suppress(OSError):
                    (self.folder / f"{digest}{suffix}").unlink()

    def _path(self, key: TraceKey, suffix: str | None = None) -> Path | None:
        """Where the trace of `key` is kept: with `suffix`, or (None) with the suffix it was kept with."""
        if self.folder is None:
            return None
        if suffix is None:
            found = [self.folder / f"{key.digest}{s}" for s in _SUFFIXES]
            return next((path for path in found if path.is_file()), found[0])
        return self.folder / f"{key.digest}{suffix}"
