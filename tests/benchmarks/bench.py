"""Benchmarks (not tests: nothing here passes or fails on a number). Prints a table of ratios.

    python tests/benchmarks/bench.py plan                       # CPU: validate + plan 10,000 targets
    python tests/benchmarks/bench.py overhead --reps 3 --only a b c     # GPU: ncucampaign vs a shell loop
    python tests/benchmarks/bench.py gpus --gpus 0,1 --only t1 ... t8   # GPU: --gpus speed-up, same kernels
    python tests/benchmarks/bench.py shared --campaign campaigns/shared.yaml  # GPU: shared runs vs --no-share
    python tests/benchmarks/bench.py read --targets 20000       # CPU: summarize and compare a huge run
    python tests/benchmarks/bench.py zoo --only randn_decode    # GPU: shared runs on the zoo (zoo.py)
    python tests/benchmarks/bench.py scale --sizes 20 200 1000 10000   # CPU: one pool of N targets (scale.py)
    python tests/benchmarks/bench.py slurm --sizes 400 1000 10000      # the test Slurm: that pool --slurm --wait
    python tests/benchmarks/bench.py stops --targets 1000 --stops 50   # that pool stopped at 50 moments, resumed
    python tests/benchmarks/bench.py all ...

overhead: the campaign through `ncucampaign run` against the very commands `ncucampaign plan`
prints, run by bash one after another; interleaved (the order alternates every repetition); the
ratio is of medians. gpus: the same targets sequentially and with --gpus (both --no-share; the --gpus
run orders its work by the sequential run's times), and whether every report holds the same kernels.
shared: the campaign with shared runs (no cached trace) and with --no-share, the same launch identity
per target, and the largest duration difference among targets profiled with cache_control all.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CAMPAIGN = ROOT / "campaigns" / "decode.yaml"
ROWS: list[tuple[str, str, str]] = []  # what, measured, ratio


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "ncucampaign", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def bench_plan(targets: int, code: Path | None = None) -> None:
    from ncucampaign.plan.expand import build_plan
    from ncucampaign.plan.lint import lint_plan
    from ncucampaign.spec.loader import parse_campaign

    lines = [
        "application:\n  command: python3 bench.py --steps 12\ndefaults:\n  sections: [SpeedOfLight]\n"
        "  launch_count: 1\ntargets:\n"
    ]
    for i in range(targets):
        kind = i % 4
        if kind == 0:
            lines.append(f"  - name: k{i}\n    kernel_name: regex:.*kernel_{i}.*\n    launch_skip: {i % 7}\n")
        elif kind == 1:
            lines.append(f"  - name: n{i}\n    nvtx_include: step_{i}/\n    range_filter: '::{i % 9 + 1}'\n")
        elif kind == 2:
            lines.append(f"  - name: p{i}\n    python_include: f.py@fn_{i}\n    lint_ignore: [NCU008]\n")
        else:
            lines.append(f"  - name: g{i}\n    set: full\n    kernel_id: '::k{i}:2'\n    graph_profiling: node\n")
    text = "".join(lines)
    _plan_commands(text, code)
    loaded = None

    def load() -> None:
        nonlocal loaded
        loaded = parse_campaign(text, Path("generated.yaml"))

    load_s = timed(load)
    plan = None

    def planning() -> None:
        nonlocal plan
        plan = build_plan(loaded)

    plan_s = timed(planning)
    from ncucampaign.plan.share.groups import share_plan

    share_s = timed(lambda: share_plan(plan.invocations))
    plan_s += share_s
    lint_s = timed(lambda: lint_plan(loaded, plan))
    from ncucampaign.plan.argv import ncu_argv, shell_command

    argv_s = timed(
        lambda: [shell_command(ncu_argv(i, "ncu", Path("/r"), ".ncu-rep"), i.env, i.cwd) for i in plan.invocations]
    )
    total = load_s + plan_s + lint_s + argv_s
    ROWS.append((f"validate+plan {targets} targets (CPU)", f"{total:.2f} s", f"{total / targets * 1e6:.0f} us/target"))
    print(
        f"load {load_s:.2f} s, expand and share {plan_s:.2f} s (share {share_s:.2f} s), lint {lint_s:.2f} s, "
        f"commands {argv_s:.2f} s"
    )
    partition_s = timed(_exact_partition)
    ROWS.append(("partition of a 10-member trace pool (CPU)", f"{partition_s:.3f} s", "exact: 2^10 groups priced"))
    from tests.plan.test_partition_search import scale_pool

    for size in (1000, 10_000):
        members, costs = scale_pool(size)
        from ncucampaign.plan.share.partition import partition

        seconds = timed(lambda members=members, costs=costs: partition(members, costs))
        ROWS.append((f"partition of a {size:,}-member trace pool (CPU)", f"{seconds:.2f} s", "bench.py scale's pool"))


def _plan_commands(text: str, code: Path | None, reps: int = 5) -> None:
    """`ncucampaign validate` and `ncucampaign plan` on the file as a user runs them, each a new process (start-up
    included): the medians of `reps`, interleaved, with this checkout and `code`'s (--code) back to back."""
    trees = {"this checkout": ROOT, **({f"--code {code}": code.resolve()} if code else {})}
    seconds: dict[tuple[str, str], list[float]] = {(tree, what): [] for tree in trees for what in ("validate", "plan")}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "generated.yaml").write_text(text)
        (work / "bench.py").write_text("")  # the script the campaign runs: validate looks for it
        for _ in range(reps):
            for tree, root in trees.items():
                env = {**os.environ, "PYTHONPATH": str(root)}
                for what in ("validate", "plan"):
                    start = time.perf_counter()
                    done = subprocess.run(
                        [sys.executable, "-m", "ncucampaign", what, "generated.yaml"],
                        cwd=work,
                        env=env,
                        capture_output=True,
                        text=True,
                    )
                    seconds[(tree, what)].append(time.perf_counter() - start)
                    if done.returncode != 0:
                        raise SystemExit(f"{what} with {tree} exited {done.returncode}: {done.stderr[-2000:]}")
    for tree in trees:
        validate, plan = (statistics.median(seconds[(tree, what)]) for what in ("validate", "plan"))
        print(f"{tree}: validate {validate:.2f} s + plan {plan:.2f} s = {validate + plan:.2f} s (medians of {reps})")
        ROWS.append((f"validate + plan commands, {tree}", f"{validate + plan:.2f} s", "each a new process"))


def _exact_partition() -> None:
    """The partition a run makes on its trace (own seconds: planning), at its exact size: 10 members of four
    kernel families over 240 launches, picked windows possible."""
    import random

    from ncucampaign.plan.share.cost import Costs
    from ncucampaign.plan.share.partition import EXACT_MEMBERS, partition
    from ncucampaign.plan.share.pricing import Placed
    from tests.conftest import invocation

    rng = random.Random(1)
    families = {"rms": range(0, 240, 3), "gemm": range(1, 240, 5), "attn": range(2, 240, 7), "elt": range(0, 240, 2)}
    members = []
    for index in range(EXACT_MEMBERS):
        kernel = rng.choice(list(families))
        ids = tuple(families[kernel])
        skip = rng.randrange(len(ids))
        member = invocation(
            f"t{index}", kernel_name=kernel, launch_skip=skip, launch_count=1, sections=("SpeedOfLight",)
        )
        members.append(Placed(member, ids, ids[skip : skip + 1]))
    partition(members, Costs(functions={i: f"f{i % 7}" for i in range(240)}))


def bench_overhead(campaign: Path, only: list[str], reps: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="ncuc-overhead-"))
    selection = ["--only", *only] if only else []
    ours, shell = [], []
    for rep in range(reps):
        out = work / f"rep{rep}"
        plan = cli("plan", str(campaign), *selection, "--report-dir", str(out / "shell-reports"), cwd=ROOT)
        if plan.returncode != 0:
            raise SystemExit(plan.stderr)
        script = out / "plan.sh"
        out.mkdir(parents=True, exist_ok=True)
        script.write_text(plan.stdout)

        def run_ours(out: Path = out) -> None:
            done = cli("run", str(campaign), *selection, "--out", str(out / "runs"), cwd=ROOT)
            if done.returncode not in (0, 1):
                raise SystemExit(done.stdout + done.stderr)

        def run_shell(script: Path = script) -> None:
            subprocess.run(["bash", str(script)], capture_output=True)

        pair = [("ncucampaign", run_ours), ("shell", run_shell)]
        if rep % 2:
            pair.reverse()  # interleave: neither always goes first
        for name, function in pair:
            seconds = timed(function)
            (ours if name == "ncucampaign" else shell).append(seconds)
            print(f"rep {rep}: {name:11} {seconds:7.2f} s", flush=True)
    ratio = statistics.median(ours) / statistics.median(shell)
    ROWS.append(
        (
            f"overhead: ncucampaign / shell loop ({len(only) or 'all'} targets, {reps} reps)",
            f"{statistics.median(ours):.1f} s / {statistics.median(shell):.1f} s",
            f"{ratio:.3f}",
        )
    )
    shutil.rmtree(work, ignore_errors=True)


def manifest_of(runs: Path, campaign: str) -> dict:
    return json.loads(((runs / campaign / "latest").resolve() / "manifest.json").read_text())


def kernels_of(runs: Path, campaign: str) -> dict[str, list[str]]:
    return {t["name"]: [r["kernel"] for r in t["results"]] for t in manifest_of(runs, campaign)["targets"]}


def print_target_seconds(runs: dict[str, Path], campaign: str) -> None:
    """Per target: seconds in each run, and per GPU the busy time (imbalance vs slowdown)."""
    manifests = {label: manifest_of(path, campaign) for label, path in runs.items()}
    names = [t["name"] for t in next(iter(manifests.values()))["targets"]]
    print("target seconds: " + ", ".join(runs))
    for name in names:
        cells = []
        for manifest in manifests.values():
            record = next(t for t in manifest["targets"] if t["name"] == name)
            cells.append(f"{record['seconds']:6.1f}" + (f" [GPU {record['gpus'][0]}]" if record.get("gpus") else ""))
        print(f"  {name[:40]:40} " + "  ".join(cells))
    for label, manifest in manifests.items():
        busy: dict[str, float] = {}
        for record in manifest["targets"]:
            key = (record.get("gpus") or ["-"])[0]
            busy[key] = busy.get(key, 0.0) + record["seconds"]
        print(f"  {label}: busy seconds per GPU {busy}")


def bench_gpus(campaign: Path, only: list[str], gpu_lists: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="ncuc-gpus-"))
    selection = ["--only", *only, "--no-share"] if only else ["--no-share"]
    name = json.loads(cli("plan", str(campaign), "--format", "json", cwd=ROOT).stdout)["campaign"]
    runs = work / "runs"  # one runs root: the --gpus run orders its work by the sequential run's times
    seq_s = timed(lambda: cli("run", str(campaign), *selection, "--out", str(runs), cwd=ROOT))
    reference = kernels_of(runs, name)
    sequential = work / "sequential"
    shutil.copytree((runs / name / "latest").resolve(), sequential / name / "latest")
    print(f"sequential: {seq_s:.1f} s, {len(reference)} targets", flush=True)
    outs = {"sequential": sequential}
    for gpus in gpu_lists:
        seconds = timed(
            lambda gpus=gpus: cli("run", str(campaign), *selection, "--gpus", gpus, "--out", str(runs), cwd=ROOT)
        )
        out = work / f"gpus-{gpus.replace(',', '_')}"
        shutil.copytree((runs / name / "latest").resolve(), out / name / "latest")
        outs[f"--gpus {gpus}"] = out
        same = kernels_of(out, name) == reference and all(reference.values())
        count = len(gpus.split(","))
        print(f"--gpus {gpus}: {seconds:.1f} s, same kernels as sequential: {same}", flush=True)
        ROWS.append(
            (
                f"--gpus {gpus} vs 1 GPU ({len(reference)} targets, longest first)",
                f"{seq_s:.1f} s / {seconds:.1f} s",
                f"{seq_s / seconds:.2f}x (ideal {count}x), same kernels: {same}",
            )
        )
    print_target_seconds(outs, name)
    shutil.rmtree(work, ignore_errors=True)


def identities(manifest: dict) -> dict[str, list[tuple]]:
    """Per target: (ordinal, function, grid, block) of each result, and its NVTX stack."""
    return {
        t["name"]: [
            (r["index"], r["kernel"], tuple(r["grid"] or ()), tuple(r["block"] or ()), tuple(r["nvtx"]))
            for r in t["results"]
        ]
        for t in manifest["targets"]
    }


def same_launches(left: list[tuple], right: list[tuple]) -> bool:
    """NVTX stacks count where both reports recorded them (a run without --nvtx records none)."""
    if len(left) != len(right) or not right:
        return False
    return all(a[:4] == b[:4] and (not a[4] or not b[4] or a[4] == b[4]) for a, b in zip(left, right, strict=True))


def durations(manifest: dict) -> dict[str, float]:
    found = {}
    for t in manifest["targets"]:
        values = [r["metrics"].get("gpu__time_duration.sum", {}).get("value") for r in t["results"]]
        if values and all(isinstance(v, int | float) for v in values):
            found[t["name"]] = float(sum(values))
    return found


def git_copy(campaign: Path, work: Path) -> Path:
    """The campaign's folder as a clean git checkout, so that the discovery trace can be cached."""
    copy = work / "workload"
    shutil.copytree(campaign.parent, copy, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=copy, check=True, capture_output=True)
    return copy / campaign.name


def print_timeline(manifest: dict, total: float) -> None:
    """Where a shared run's seconds went: the manifest's attempts, relative to the run's start."""
    from datetime import datetime

    start = datetime.fromisoformat(manifest["started_at"])

    def at(stamp: str | None) -> float:
        return (datetime.fromisoformat(stamp) - start).total_seconds() if stamp else float("nan")

    for run in manifest.get("shared_runs", []):
        for attempt in run["attempts"]:
            print(f"    {run['name']:10} {at(attempt['started_at']):6.1f} -> {at(attempt['ended_at']):6.1f} s")
    splits = [a for t in manifest["targets"] for a in t["attempts"] if a["message"].startswith("split out of")]
    if splits:
        first = min(at(a["started_at"]) for a in splits)
        print(f"    splits     {first:6.1f} -> {max(at(a['ended_at']) for a in splits):6.1f} s ({len(splits)})")
    print(f"    manifest ended {at(manifest.get('ended_at')):6.1f} s; the command took {total:.1f} s")


def bench_shared(campaign: Path, keep: Path | None, warm: bool = True) -> None:
    work = Path(tempfile.mkdtemp(prefix="ncuc-shared-"))
    campaign = git_copy(campaign.absolute(), work)
    plan = json.loads(cli("plan", str(campaign), "--format", "json", cwd=ROOT).stdout)
    name = plan["campaign"]
    cache_all = {i["name"] for i in plan["invocations"] if "--cache-control" in i["argv"] and "all" in i["argv"]}
    seconds, manifests = {}, {}
    modes = [("shared", [], "shared"), ("shared, cached trace", [], "shared"), ("--no-share", ["--no-share"], "alone")]
    if not warm:
        del modes[1]
    for mode, extra, folder in modes:
        out = work / folder  # the second shared run finds the first one's trace in <out>/.cache
        printed: list[str] = []
        seconds[mode] = timed(
            lambda out=out, extra=extra, printed=printed: printed.append(
                cli("run", str(campaign), *extra, "--out", str(out), cwd=ROOT).stdout
            )
        )
        manifests[mode] = manifest_of(out, name)
        for line in "".join(printed).splitlines():  # run's own breakdown
            if line.startswith(("sharing:", "  alone:")):
                print(f"  {line}")
        statuses = [t["status"] for t in manifests[mode]["targets"]]
        print(f"{mode}: {seconds[mode]:.1f} s, statuses {dict((s, statuses.count(s)) for s in set(statuses))}")
        for run in manifests[mode].get("shared_runs", []):
            print(f"  {run['name']}: {run['status']} {run['seconds']:.1f} s, {len(run['members'])} targets")
        if manifests[mode].get("shared_runs"):
            print_timeline(manifests[mode], seconds[mode])
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            slug = mode.strip("-").replace(", ", "-").replace(" ", "-")
            shutil.copyfile((out / name / "latest").resolve() / "manifest.json", keep / f"{name}-{slug}.json")
    shared, alone = manifests["shared"], manifests["--no-share"]
    how = [(t.get("obtained") or {}).get("how", "alone") for t in shared["targets"]]
    print(f"shared run: {how.count('shared')} targets split out of shared runs, {how.count('alone')} alone")
    for record in shared["targets"]:
        obtained = record.get("obtained") or {}
        if obtained.get("how") != "shared":
            print(f"  alone: {record['name']}: {obtained.get('reason', '')}")
    left, right = identities(shared), identities(alone)
    ok_both = {t["name"] for t in shared["targets"] if t["status"] == "ok"} & {
        t["name"] for t in alone["targets"] if t["status"] == "ok"
    }
    differing = [n for n in right if n in ok_both and not same_launches(left.get(n, []), right[n])]
    for n in differing:
        print(f"  differs: {n}: shared {left.get(n)} / alone {right[n]}")
    a, b = durations(shared), durations(alone)
    diffs = {n: abs(a[n] - b[n]) / b[n] for n in cache_all if n in a and n in b and b[n] > 0}
    worst = max(diffs.items(), key=lambda item: item[1]) if diffs else ("-", 0.0)
    print(
        f"largest relative duration difference (cache_control all, {len(diffs)} targets): {worst[1]:.1%} ({worst[0]})"
    )
    for n in sorted(diffs, key=diffs.get, reverse=True)[:5]:
        print(f"  {n}: shared {a[n]:.0f} ns, alone {b[n]:.0f} ns ({diffs[n]:+.1%})")
    status_a = {t["name"]: t["status"] for t in shared["targets"]}
    status_b = {t["name"]: t["status"] for t in alone["targets"]}
    other_status = sorted(n for n in status_b if status_a.get(n) != status_b[n])
    for n in other_status:
        print(f"  status differs: {n}: shared {status_a.get(n)} / alone {status_b[n]}")
    print(f"same status both ways: {not other_status} ({len(status_b)} targets)")
    same = not differing
    for mode in [m for m in seconds if m != "--no-share"]:
        ratio = seconds["--no-share"] / seconds[mode]
        ROWS.append(
            (
                f"{mode} vs --no-share ({len(right)} targets)",
                f"{seconds[mode]:.1f} s / {seconds['--no-share']:.1f} s",
                f"{ratio:.2f}x, same launches: {same}, worst duration diff {worst[1]:.1%}",
            )
        )
    shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", choices=("plan", "overhead", "gpus", "shared", "read", "zoo", "scale", "slurm", "stops", "all")
    )
    parser.add_argument("--json", type=Path, default=None, help="zoo: write the rows here as they come")
    parser.add_argument("--capture", type=Path, default=None, help="zoo: keep ncu's listings of each workload here")
    parser.add_argument(
        "--tracers", nargs="+", default=[], help="zoo: trace first and cached once per tracer: nsys, off (ncu's)"
    )
    parser.add_argument(
        "--bare-limit", type=float, default=20.0, help="zoo: skip a workload slower than this without ncu (s)"
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        default=None,
        choices=("no-share", "first", "cached"),
        help="zoo: make only these runs; read the others back from --runs",
    )
    parser.add_argument("--runs", type=Path, default=None, help="zoo: run there and keep the run folders")
    parser.add_argument("--no-warm", action="store_true", help="shared: skip the run with the cached trace")
    parser.add_argument("--keep", type=Path, default=None, help="shared, zoo: copy the manifests into this folder")
    parser.add_argument("--campaign", type=Path, default=CAMPAIGN)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--gpu-only", nargs="*", default=None, help="targets for the gpus benchmark (default --only)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--gpus", action="append", default=[], help="a --gpus list to try (repeatable)")
    parser.add_argument("--targets", type=int, default=10_000)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[20, 200, 1000, 10_000], help="scale, slurm: pool sizes"
    )
    parser.add_argument("--code", type=Path, default=None, help="scale, plan: also run this checkout, back to back")
    parser.add_argument("--limit", type=float, default=900.0, help="scale, slurm: stop a run after this many seconds")
    parser.add_argument("--kills", type=int, default=0, help="scale: kill -9 and resume this many runs of each size")
    parser.add_argument("--stops", type=int, default=50, help="stops: how many moments to stop a run at")
    parser.add_argument("--kill", action="store_true", help="stops: SIGKILL instead of SIGINT and SIGTERM")
    parser.add_argument("--hup", action="store_true", help="stops: SIGHUP too")
    args = parser.parse_args()
    if args.what in ("plan", "all"):
        bench_plan(args.targets, args.code)
    if args.what in ("read", "all"):
        from tests.benchmarks.read_scale import bench_read

        bench_read(args.targets, ROWS)
    if args.what in ("overhead", "all"):
        bench_overhead(args.campaign, args.only, args.reps)
    if args.what in ("shared", "all"):
        bench_shared(args.campaign, args.keep, not args.no_warm)
    if args.what == "scale":
        from tests.benchmarks.scale import bench_scale

        if args.kills:
            from tests.benchmarks.scale import kills

            for size in args.sizes:
                kills(size, args.kills)
            return 0
        bench_scale(args.sizes, args.code, args.limit, args.keep)
        return 0
    if args.what == "stops":
        from tests.benchmarks.stops import bench_stops

        bench_stops(args.targets, args.stops, args.kill, args.hup)
        return 0
    if args.what == "slurm":
        from tests.benchmarks.slurm_bench import bench_slurm

        bench_slurm(args.sizes, args.limit)
        return 0
    if args.what == "zoo":
        from tests.benchmarks.zoo import bench_zoo

        bench_zoo(args.only, args.json, args.keep, args.capture, args.tracers, args.bare_limit, args.runs, args.modes)
        return 0
    if args.what in ("gpus", "all"):
        bench_gpus(args.campaign, args.gpu_only if args.gpu_only is not None else args.only, args.gpus or ["0,1"])
    width = max(len(row[0]) for row in ROWS)
    print(f"\n{'benchmark':{width}}  {'measured':>24}  ratio")
    for what, measured, ratio in ROWS:
        print(f"{what:{width}}  {measured:>24}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
