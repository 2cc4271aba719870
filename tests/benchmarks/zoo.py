"""The zoo benchmark (`python tests/benchmarks/bench.py zoo`): shared runs on workloads of every kind
(tests/gpu/zoo/README.md), each against --no-share, back to back on one GPU. Not a test: it prints.

Per workload: its application without ncu (seconds; it must run in under 20 s, and the first run
fills what the workload caches, Inductor's kernels or the CUDA C++ build: a second run is timed when
the first is slower), then `run --no-share`, `run` with the
discovery trace first, and `run` again with the trace cached. It checks that every target ends with
the same status all three ways and that every target ok both ways holds the same launches (symbol,
grid, block, NVTX stack) shared as alone, and prints one row per workload: seconds and ratios, how the
targets were obtained (shared, regrouped after a refused split, alone, decided on the trace), the
identity, and each run's "x of the limit" (results/limit.py).

    python tests/benchmarks/bench.py zoo                          # every workload
    python tests/benchmarks/bench.py zoo --only randn_decode streams --json out.json --keep kept/
    python tests/benchmarks/bench.py zoo --only decode --tracers nsys off   # both tracers after one --no-share

With --modes, only those runs are made; the others are read back from an earlier call's --runs folder
(each run leaves its seconds there, bench-seconds.json), so that a workload whose three runs outlast one
device call is measured in calls back to back on the same warm machine:

    bench.py zoo --only llama_serve --runs runs/bench --modes no-share
    bench.py zoo --only llama_serve --runs runs/bench --modes first cached

With --tracers, the trace-first and cached runs are made once per tracer (`off`: NCUCAMPAIGN_NSYS=off,
ncu's trace; `nsys`: the environment as it is, where Nsight Systems takes the trace when it can),
after the one --no-share run they are all compared with.

ncucampaign's modules are compiled first, as a pip install leaves them: the GPU machine sets
PYTHONDONTWRITEBYTECODE, and a checkout run from source there compiled every module at every start,
0.1-0.3 s of each run's own seconds (docs/shared-runs.md).
"""

from __future__ import annotations

import compileall
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "gpu" / "zoo"
BARE_LIMIT_S = 20.0
MODES = (("--no-share", ["--no-share"], "alone"), ("trace first", [], "shared"), ("trace cached", [], "shared"))
SHARED_MODES = ("trace first", "trace cached")
KINDS = ("shared", "regrouped", "alone", "trace")  # how targets were obtained, in the row's order


def modes_for(tracers: list[str]) -> list[tuple[str, list[str], str, dict[str, str]]]:
    """(mode, run's extra arguments, its --out folder, its environment) of each run of a workload."""
    if not tracers:
        return [(mode, extra, folder, {}) for mode, extra, folder in MODES]
    runs = [(MODES[0][0], MODES[0][1], MODES[0][2], {})]
    for tracer in tracers:
        env = {"NCUCAMPAIGN_NSYS": "off"} if tracer == "off" else {}
        runs += [(f"{mode} ({tracer})", [], f"shared-{tracer}", env) for mode in SHARED_MODES]
    return runs


def mode_word(mode: str) -> str:
    """What --modes calls a mode: no-share, first, cached."""
    return "no-share" if mode == "--no-share" else mode.split()[1]


@dataclass
class Row:
    workload: str
    targets: int = 0
    bare_s: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    obtained: dict[str, int] = field(default_factory=dict)  # of the trace-first run
    obtained_cached: dict[str, int] = field(default_factory=dict)  # of the cached run (kept misses close targets)
    identity: str = ""
    same_status: bool | None = None
    limits: dict[str, str] = field(default_factory=dict)  # mode -> "2.4x"
    note: str = ""

    def ratio(self, mode: str) -> float | None:
        base, this = self.seconds.get("--no-share"), self.seconds.get(mode)
        return base / this if base and this else None


def zoo_folder() -> Path:
    """The zoo; NCUCAMPAIGN_ZOO names another (the fake ncu's, to try this script without a GPU)."""
    return Path(os.environ.get("NCUCAMPAIGN_ZOO") or ZOO)


def cli(*args: str, cwd: Path, extra_env: dict[str, str] | None = None) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.update(extra_env or {})
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ncucampaign", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - started, done.stdout + done.stderr


def application(campaign: Path) -> tuple[list[str], Path, dict[str, str]]:
    import yaml

    app = yaml.safe_load(campaign.read_text())["application"]
    command = app["command"] if isinstance(app["command"], list) else shlex.split(app["command"])
    env = {**os.environ, **{k: str(v) for k, v in (app.get("env") or {}).items()}}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return command, (campaign.parent / app.get("cwd", ".")).resolve(), env


def bare_run(campaign: Path) -> tuple[float, str]:
    """The application alone, no ncu: (seconds, '' or why it failed)."""
    command, cwd, env = application(campaign)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, "ran past 120 s without ncu"
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return seconds, f"exit {done.returncode} without ncu: {(done.stdout + done.stderr).strip()[-300:]}"
    return seconds, ""


def manifest_path(out: Path) -> Path:
    return next(out.glob("*/latest")).resolve() / "manifest.json"


def manifest_of(out: Path) -> dict:
    return json.loads(manifest_path(out).read_text())


def launches(manifest: dict) -> dict[str, list[tuple]]:
    return {
        t["name"]: [(r.get("mangled") or r["kernel"], r["grid"], r["block"], tuple(r["nvtx"])) for r in t["results"]]
        for t in manifest["targets"]
    }


def same_launches(left: list[tuple], right: list[tuple]) -> bool:
    """Symbol, grid and block; the NVTX stack where both runs recorded one (a run of a target without
    an NVTX filter runs without --nvtx and records none)."""
    if len(left) != len(right):
        return False
    return all(a[:3] == b[:3] and (not a[3] or not b[3] or a[3] == b[3]) for a, b in zip(left, right, strict=True))


def how(record: dict) -> str:
    obtained = record.get("obtained") or {}
    if obtained.get("how") == "shared" and "regrouped into" in obtained.get("reason", ""):
        return "regrouped"
    return obtained.get("how") or "alone"


def compare(row: Row, manifests: dict[str, dict]) -> None:
    alone = manifests["--no-share"]
    statuses = {mode: {t["name"]: t["status"] for t in m["targets"]} for mode, m in manifests.items()}
    row.same_status = all(s == statuses["--no-share"] for s in statuses.values())
    for mode, names in statuses.items():
        for name, status in names.items():
            if status != statuses["--no-share"].get(name):
                print(f"  status differs: {name}: {mode} {status}, --no-share {statuses['--no-share'].get(name)}")
    expected = launches(alone)
    checked = same = 0
    for mode in (m for m in manifests if m != "--no-share"):
        for name, got in launches(manifests[mode]).items():
            if statuses[mode][name] == "ok" and statuses["--no-share"].get(name) == "ok":
                checked += 1
                alike = same_launches(got, expected[name])
                same += alike
                if not alike:
                    print(f"  launch differs: {name} ({mode}): {got} / --no-share {expected[name]}")
    row.identity = f"{same}/{checked}" if checked else "-"
    first = next((m for mode, m in manifests.items() if mode.startswith("trace first")), None)
    cached = next((m for mode, m in manifests.items() if mode.startswith("trace cached")), None)
    if first is not None:
        row.obtained = _tally(first)
    if cached is not None:
        row.obtained_cached = _tally(cached)


def _tally(manifest: dict[str, Any]) -> dict[str, int]:
    counts = [how(t) for t in manifest["targets"]]
    return {kind: counts.count(kind) for kind in KINDS}


def bench_workload(
    name: str,
    work: Path,
    keep: Path | None,
    captured: Path | None = None,
    tracers: list[str] | None = None,
    bare_limit: float = BARE_LIMIT_S,
    only_modes: list[str] | None = None,
) -> Row:
    campaign = zoo_folder() / name / "campaign.yaml"
    row = Row(name)
    bare_file = work / name / "bench-bare.json"
    if only_modes and "no-share" not in only_modes:  # the bare run went with the --no-share call
        seconds, why = json.loads(bare_file.read_text()) if bare_file.is_file() else (0.0, "")
    else:
        seconds, why = bare_run(campaign)
    if not why and seconds > bare_limit:  # a first run fills the workload's caches (Inductor, nvcc)
        print(f"  bare: {seconds:.1f} s the first time, which fills the workload's caches; again:", flush=True)
        seconds, why = bare_run(campaign)
    row.bare_s = seconds
    bare_file.parent.mkdir(parents=True, exist_ok=True)
    bare_file.write_text(json.dumps([seconds, why]))
    if why or seconds > bare_limit:
        row.note = why or f"runs {seconds:.1f} s without ncu (more than {bare_limit:.0f} s)"
        return row
    manifests = {}
    for mode, extra, folder, env in modes_for(tracers or []):
        out = work / name / folder  # the cached run finds the trace-first run's trace in <out>/.cache
        seconds_file = out / "bench-seconds.json"
        # a mode --modes leaves out was made by an earlier call: its manifest and seconds are there
        if only_modes and mode_word(mode) not in only_modes:
            try:
                made = json.loads(seconds_file.read_text())[mode]
                manifests[mode] = json.loads(Path(made["run"]).read_text())  # the cached run's is latest now
            except (OSError, ValueError, KeyError):
                print(f"  [{mode}] not run by this call (--modes), nor by an earlier one into {out}", flush=True)
                continue
            row.seconds[mode], row.limits[mode] = made["seconds"], made["limit"]
            print(f"  [{mode}] read back from an earlier call: {made['seconds']:.1f} s", flush=True)
            continue
        took, printed = cli("run", str(campaign), *extra, "--out", str(out), cwd=ROOT, extra_env=env)
        row.seconds[mode] = took
        try:
            manifests[mode] = manifest_of(out)
        except (StopIteration, OSError, ValueError):
            row.note = f"{mode}: no manifest: {printed.strip()[-300:]}"
            return row
        limit = re.search(
            r"(?:limit|floor): .*?, ([0-9.]+x|less than) its (?:estimated )?(?:limit|floor) of ([0-9.]+) s", printed
        )
        row.limits[mode] = f"{limit.group(1).replace('less than', 'under')} of {limit.group(2)} s" if limit else "-"
        made = json.loads(seconds_file.read_text()) if seconds_file.is_file() else {}
        made[mode] = {"seconds": took, "limit": row.limits[mode], "run": str(manifest_path(out))}
        seconds_file.write_text(json.dumps(made, indent=1))
        for line in printed.splitlines():
            if line.startswith(("sharing:", "  alone:", "limit:", "floor:")):
                print(f"  [{mode}] {line}")
        own = manifests[mode].get("own_seconds") or {}
        print(f"  [{mode}] own_seconds {sum(own.values()):.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in own.items()))
        if captured is not None and mode.startswith("trace first"):
            capture(out, captured / name)
        if keep is not None:
            (keep / name).mkdir(parents=True, exist_ok=True)
            (keep / name / f"{folder}-{mode.replace(' ', '-')}.json").write_text(json.dumps(manifests[mode]))
    if "--no-share" not in manifests:
        row.note = "no --no-share run to compare with"
        return row
    row.targets = len(manifests["--no-share"]["targets"])
    compare(row, manifests)
    return row


def print_table(rows: list[Row], tracers: list[str] | None = None) -> None:
    for tracer in tracers or [""]:
        print_rows(rows, f" ({tracer})" if tracer else "")


def print_rows(rows: list[Row], suffix: str) -> None:
    print(
        f"\n{suffix.strip() or 'workload':15} targets  bare s  --no-share  trace first      cached           "
        "shared/regrouped/alone/trace  identity  statuses  x of the limit (first, cached)"
    )
    for r in rows:
        first, cached = f"trace first{suffix}", f"trace cached{suffix}"
        if r.note and not r.seconds.get(cached):
            print(f"{r.workload:15} {r.targets:7}  {r.bare_s or 0:6.1f}  not measured: {r.note}")
            continue

        def cell(mode: str, r: Row = r) -> str:
            ratio = r.ratio(mode)
            return f"{r.seconds[mode]:6.1f} s {ratio:5.2f}x" if ratio else "-"

        counts = "/".join(str(r.obtained.get(k, 0)) for k in KINDS)
        if r.obtained_cached and r.obtained_cached != r.obtained:  # a target closed on a kept miss, say
            counts += f" ({'/'.join(str(r.obtained_cached.get(k, 0)) for k in KINDS)} cached)"
        print(
            f"{r.workload:15} {r.targets:7}  {r.bare_s or 0:6.1f}  {r.seconds['--no-share']:8.1f} s  "
            f"{cell(first):15}  {cell(cached):15}  {counts:28}  {r.identity:8}  "
            f"{'same' if r.same_status else 'DIFFER':8}  {r.limits.get(first)}, {r.limits.get(cached)}"
        )


def bench_zoo(
    only: list[str],
    json_path: Path | None,
    keep: Path | None,
    captured: Path | None = None,
    tracers: list[str] | None = None,
    bare_limit: float = BARE_LIMIT_S,
    runs: Path | None = None,
    only_modes: list[str] | None = None,
) -> list[Row]:
    """`runs`: run there and keep the runs (for findings and report afterwards); else in a folder removed after."""
    names = only or sorted(p.name for p in zoo_folder().iterdir() if (p / "campaign.yaml").is_file())
    compileall.compile_dir(Path(__file__).resolve().parents[2] / "ncucampaign", quiet=1)
    work = runs.resolve() if runs is not None else Path(tempfile.mkdtemp(prefix="ncuc-zoo-"))
    rows = []
    for name in names:
        print(f"== {name}", flush=True)
        rows.append(bench_workload(name, work, keep, captured, tracers, bare_limit, only_modes))
        row = rows[-1]
        print(f"   {json.dumps(asdict(row))}", flush=True)
        if json_path is not None:
            json_path.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    print_table(rows, tracers)
    if runs is None:
        shutil.rmtree(work, ignore_errors=True)
    return rows


# --- fixtures: what ncu lists of a workload's reports, kept for the CPU tests --------------------------

LISTINGS = {
    "mangled": ["--print-kernel-base", "mangled"],
    "function": ["--print-kernel-base", "function"],
    "demangled": [],
    "demangled-renames-off": ["--rename-kernels", "off"],
}
KEPT_COLUMNS = ("ID", "Kernel Name", "Block Size", "Grid Size", "gpu__time_duration.sum")


def trimmed(listing: str) -> str:
    """ncu's raw CSV page with only the columns a launch's identity needs (its device attributes and
    metrics dropped): what parse_raw_csv reads."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO("\n".join(x for x in listing.splitlines() if not x.startswith("==")))))
    if not rows:
        return ""
    keep = [i for i, name in enumerate(rows[0]) if name in KEPT_COLUMNS or name.startswith("thread Domain")]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for row in rows:
        writer.writerow([row[i] for i in keep if i < len(row)])
    return out.getvalue()


def capture(out: Path, dest: Path) -> None:
    """List the trace, every shared run and every target's report of the run in `out` four ways
    (symbol, function, demangled, demangled without ncu's renaming) into `dest`, with the logs, and say
    for how many symbols the demangled text in a shared run's report differs from the trace's."""
    run_dir = next(out.glob("*/latest")).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    lists: dict[str, dict[str, str]] = {}
    reports = [
        *sorted((run_dir / "reports" / "shared").glob("*.ncu-rep")),
        *sorted((run_dir / "reports").glob("*.ncu-rep")),
    ]
    for report in reports:
        prefix = ("shared-" if report.parent.name == "shared" else "") + report.name.removesuffix(".ncu-rep")
        for label, words in LISTINGS.items():
            done = subprocess.run(
                ["ncu", "--import", str(report), *words, "--page", "raw", "--csv"], capture_output=True, text=True
            )
            text = trimmed(done.stdout)
            (dest / f"{prefix}.{label}.csv").write_text(text)
            lists.setdefault(prefix, {})[label] = text
    for log in [*sorted((run_dir / "logs" / "shared").glob("*.log")), *sorted((run_dir / "logs").glob("*.log"))[:4]]:
        shutil.copyfile(log, dest / f"{'shared-' if log.parent.name == 'shared' else ''}{log.name}")
    shutil.copyfile(run_dir / "manifest.json", dest / "manifest.json")
    print_text_differences(lists)


def print_text_differences(lists: dict[str, dict[str, str]]) -> None:
    """Per report against the trace: symbols whose demangled text differs, with ncu's renaming and without."""
    import csv
    import io

    def by_symbol(listing: dict[str, str], label: str) -> dict[str, str]:
        symbols = [row[0] for row in _column(listing["mangled"], "Kernel Name")]
        texts = [row[0] for row in _column(listing[label], "Kernel Name")]
        return dict(zip(symbols, texts, strict=False))

    def _column(text: str, name: str) -> list[list[str]]:
        rows = list(csv.reader(io.StringIO(text)))
        if not rows or name not in rows[0]:
            return []
        index = rows[0].index(name)
        return [[row[index]] for row in rows[2:] if len(row) > index]

    trace = next((k for k in lists if k.startswith("shared-trace-")), None)
    if trace is None:
        return
    for name, listing in lists.items():
        if name == trace:
            continue
        for label in ("demangled", "demangled-renames-off"):
            mine, theirs = by_symbol(listing, label), by_symbol(lists[trace], label)
            common = [s for s in mine if s in theirs]
            differ = [s for s in common if mine[s] != theirs[s]]
            print(f"  text: {name} vs {trace} ({label}): {len(differ)} of {len(common)} symbols differ")
            for symbol in differ[:2]:
                print(f"    {symbol[:80]}\n      here:  {mine[symbol][:160]}\n      trace: {theirs[symbol][:160]}")
