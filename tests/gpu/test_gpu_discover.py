"""On a GPU machine: `discover` agrees with a plain ncu run, and the target YAML it emits profiles
exactly the launch it claims (checked with ncu's own filters through `discover --target`)."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.gpu.gpu import ROOT, latest, needs_gpu, out_dir, run

pytestmark = needs_gpu
LIMIT = "1000"


def test_discover_agrees_with_ncu_and_its_suggestions_profile_what_they_claim(tmp_path: Path) -> None:
    import ncu_report

    runs = out_dir(tmp_path)
    done = run(
        "discover",
        "campaigns/decode.yaml",
        "--launch-limit",
        LIMIT,
        "--top",
        "4",
        "--out",
        str(runs),
        cwd=ROOT,
        timeout=300,
    )
    print(done.stdout[-8000:], done.stderr[-2000:], sep="\n")
    assert done.returncode == 0
    discovery = latest(runs, "decode-discover")
    listing = json.loads((discovery / "kernels.json").read_text())

    # A plain ncu run of the same workload, same metric, no ncucampaign.
    plain = tmp_path / "plain"
    reference = subprocess.run(
        [
            "ncu",
            "--metrics",
            "gpu__time_duration.sum",
            "--launch-count",
            LIMIT,
            "--clock-control",
            "none",
            "-f",
            "-o",
            str(plain),
            "python3",
            "decode_workload.py",
            "--steps",
            "12",
        ],
        cwd=ROOT / "campaigns",
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = (reference.stdout + reference.stderr)[-6000:]
    assert reference.returncode == 0, f"the plain ncu run exited {reference.returncode}:\n{said}"
    context = ncu_report.load_report(str(plain) + ".ncu-rep")
    actions = [
        context.range_by_idx(r).action_by_idx(a)
        for r in range(context.num_ranges())
        for a in range(context.range_by_idx(r).num_actions())
    ]
    plain_counts = Counter(a.name() for a in actions)
    plain_time = Counter()
    for a in actions:
        plain_time[a.name()] += a.metric_by_name("gpu__time_duration.sum").as_double()
    ours_counts = Counter(launch["function"] for launch in listing["launches"])
    ours_time = Counter()
    for launch in listing["launches"]:
        ours_time[launch["function"]] += launch["duration_ns"]
    print("kernel, launches discover/plain, total us discover/plain")
    for name in sorted(plain_counts, key=lambda n: -plain_time[n]):
        print(
            f"{name[:60]:60} {ours_counts[name]:4}/{plain_counts[name]:<4} "
            f"{ours_time[name] / 1000:9.1f}/{plain_time[name] / 1000:<9.1f}"
        )
    assert ours_counts == plain_counts
    for name in plain_counts:  # two runs of the same workload: same kernels, similar durations
        assert ours_time[name] == pytest.approx(plain_time[name], rel=0.5), name

    # Paste the suggestions into a campaign and run them.
    suggestions = yaml.safe_load((discovery / "targets.yaml").read_text())
    claims = listing["suggestions"]
    assert [c["name"] for c in claims] == [s["name"] for s in suggestions]
    base = yaml.safe_load((ROOT / "campaigns" / "decode.yaml").read_text())
    pasted = {
        "name": "pasted",
        "application": {**base["application"], "cwd": str(ROOT / "campaigns")},
        "defaults": base["defaults"],
        "targets": suggestions,
    }
    campaign = runs / "pasted.yaml"
    campaign.write_text(yaml.safe_dump(pasted, sort_keys=False))
    done = run("run", str(campaign), "--out", str(runs), cwd=tmp_path, timeout=400)
    print(done.stdout[-6000:], done.stderr[-2000:], sep="\n")
    assert done.returncode == 0
    manifest = json.loads((latest(runs, "pasted") / "manifest.json").read_text())
    for position, (suggestion, record) in enumerate(zip(suggestions, manifest["targets"], strict=True)):
        report = ncu_report.load_report(str(latest(runs, "pasted") / record["report"]["path"]))
        profiled = report.range_by_idx(0).action_by_idx(0)
        expected_name = suggestion["kernel_name"]
        if suggestion.get("kernel_name_base") == "demangled":
            assert re.search(expected_name.removeprefix("regex:"), profiled.name(ncu_report.IAction.NameBase_DEMANGLED))
        else:
            assert profiled.name() == expected_name
        # ncu's own filters (discover --target) must number the launches as the claim says.
        listed = run(
            "discover", str(campaign), "--target", suggestion["name"], "--out", str(runs), cwd=tmp_path, timeout=300
        )
        print(listed.stdout[-3000:])
        assert listed.returncode == 0
        target_listing = json.loads((latest(runs, "pasted-discover") / "kernels.json").read_text())
        picked = [item["ordinal"] for item in target_listing["listed"] if item["profiled"]]
        assert picked == [suggestion["launch_skip"]]
        assert len(target_listing["listed"]) == claims[position]["matching"]
        assert target_listing["launches"][picked[0]]["function"] == profiled.name()
