"""compare's verdicts on real samples: nothing here passes or fails, it counts.

    python tests/benchmarks/gate.py --baseline 8 --changed 4        # on a GPU machine

Runs `tests/gpu/gate.yaml` (five kernel families, 24 samples each a run) `--baseline` times with the
knob at 0 and `--changed` times at each of 5% and 10%, interleaved (base, 5%, base, 10%, ...), back
to back on one GPU. Then, with `compare`'s own rule (results/gate/compare.py): every pair of baseline runs
(self-comparisons: any SLOWER or FASTER is false) and every knob run against every baseline run (the
knob's target should be SLOWER, the others SAME). Pairs share runs, so they are not independent; the
disjoint pairs are counted apart.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncucampaign.execute.rundir.manifest import Manifest  # noqa: E402
from ncucampaign.results.gate.compare import compare_runs  # noqa: E402
from ncucampaign.results.metrics import DURATION  # noqa: E402
from ncucampaign.results.reading.runs import load_run  # noqa: E402

CAMPAIGN = ROOT / "tests" / "gpu" / "gate.yaml"


def one_run(campaign: Path, out: Path, knob: str, value: float) -> tuple[Manifest, float]:
    env = {
        **os.environ,
        knob: str(value),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
    runs = sorted(p for p in (out / load_name(campaign)).iterdir() if p.is_dir() and not p.is_symlink())
    return load_run(runs[-1]).manifest, seconds


def load_name(campaign: Path) -> str:
    import yaml

    return str(yaml.safe_load(campaign.read_text())["name"])


def durations(a: Manifest, b: Manifest) -> dict[str, str]:
    comparison = compare_runs(a, b)
    return {v.target: v.verdict.value for v in comparison.verdicts if v.metric in (DURATION, "launch")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", type=Path, default=CAMPAIGN)
    parser.add_argument("--knob", default="DECODE_FFN_EXTRA")
    parser.add_argument("--target", default="mlp_down_gemm", help="the target the knob slows down")
    parser.add_argument("--baseline", type=int, default=8)
    parser.add_argument("--changed", type=int, default=4, help="runs at each of 5%% and 10%%")
    parser.add_argument("--out", type=Path, default=Path("gate-runs"))
    args = parser.parse_args()
    order = [0.0] * args.baseline
    for index, value in enumerate([0.05, 0.10] * args.changed):
        order.insert(2 * index + 1, value)
    runs: dict[float, list[Manifest]] = {0.0: [], 0.05: [], 0.10: []}
    seconds = 0.0
    for number, value in enumerate(order):
        manifest, took = one_run(args.campaign, args.out / f"{number:02d}-{value:g}", args.knob, value)
        seconds += took
        statuses = Counter(t.status.value for t in manifest.targets)
        samples = {t.name: len(t.results) for t in manifest.targets}
        print(f"run {number + 1}/{len(order)} knob {value:g}: {took:.1f} s, {dict(statuses)}, samples {samples}")
        runs[value].append(manifest)
    print(f"{len(order)} runs, {seconds:.0f} s in all")
    base = runs[0.0]
    for label, pairs in (
        ("every pair", list(itertools.combinations(range(len(base)), 2))),
        ("disjoint pairs", [(i, i + 1) for i in range(0, len(base) - 1, 2)]),
    ):
        verdicts = Counter(v for i, j in pairs for v in durations(base[i], base[j]).values())
        false = verdicts["SLOWER"] + verdicts["FASTER"]
        print(f"self-comparison, {label}: {sum(verdicts.values())} target comparisons, {dict(verdicts)}; "
              f"false SLOWER/FASTER: {false}")  # fmt: skip
    for value in (0.05, 0.10):
        knob_verdicts, others = Counter(), Counter()
        for changed in runs[value]:
            for baseline in base:
                for target, verdict in durations(baseline, changed).items():
                    (knob_verdicts if target == args.target else others)[verdict] += 1
        total = sum(knob_verdicts.values())
        rate = knob_verdicts["SLOWER"] / total if total else 0.0
        print(f"knob {value:.0%}: {args.target} {dict(knob_verdicts)} (SLOWER in {rate:.0%} of {total}); "
              f"the other targets {dict(others)}")  # fmt: skip
    samples = sum(len(t.results) for runs_ in runs.values() for m in runs_ for t in m.targets)
    print(f"samples taken: {samples} in {len(order)} runs, {seconds:.0f} s of GPU machine time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
