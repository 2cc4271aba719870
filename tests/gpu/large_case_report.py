"""What tests/gpu/large_case.sh prints of a run: statuses, how targets were obtained, own seconds by phase and per
member, ncu processes by kind; with --same, whether targets run alone hold the launches the shared runs found; with
--exported, whether `export` wrote each member's report holding its one launch."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.benchmarks.zoo import how, launches, same_launches


def manifest(run: str) -> dict:
    return json.loads((Path(run) / "manifest.json").read_text())


def report(run: str, calls: str) -> None:
    data = manifest(run)
    targets = data["targets"]
    print("  statuses:", dict(Counter(t["status"] for t in targets)))
    print("  obtained:", dict(Counter(how(t) for t in targets)))
    read_out = sum(1 for t in targets if "read out of" in (t.get("message") or ""))
    own = data.get("own_seconds") or {}
    print(f"  own seconds {sum(own.values()):.2f}:", ", ".join(f"{k} {v:.2f}" for k, v in own.items()))
    members = sum(1 for t in targets if how(t) in ("shared", "regrouped"))
    split = sum(own.get(k, 0.0) for k in ("splits", "reports", "verification"))
    if members:
        print(
            f"  {members} members ({read_out} read out): splits+reports+verification {split:.2f} s, "
            f"{1000 * split / members:.1f} ms a member"
        )
    kinds: Counter[str] = Counter()
    for line in Path(calls).read_text().splitlines():
        argv = json.loads(line)
        kinds[
            "import"
            if "--import" in argv
            else "version/query"
            if {"--version", "--help", "--query-metrics", "--list-sets", "--list-sections"} & set(argv)
            else "profile"
        ] += 1
    print("  ncu processes:", dict(kinds))


def same(alone: str, *shared: str) -> None:
    expected = launches(manifest(alone))
    for run in shared:
        got = launches(manifest(run))
        checked = [n for n in expected if n in got]
        alike = [n for n in checked if same_launches(got[n], expected[n])]
        for name in set(checked) - set(alike):
            print(f"  differs: {name}: {got[name]} / alone {expected[name]}")
        print(f"== identity {Path(run).name}: {len(alike)}/{len(checked)} targets hold the launches they hold alone")


def exported(run: str, *names: str) -> None:
    data = {t["name"]: t for t in manifest(run)["targets"]}
    for name in names:
        path = Path(run) / "reports" / f"{name}.ncu-rep"
        if not path.is_file():
            print(f"  {name}: no report at {path}")
            continue
        listing = subprocess.run(
            ["ncu", "--import", str(path), "--page", "raw", "--csv", "--metrics", "gpu__time_duration.sum"],
            capture_output=True,
            text=True,
        ).stdout
        rows = [line for line in listing.splitlines() if line.startswith('"') and not line.startswith('"ID"')][1:]
        kernel = data[name]["results"][0]["kernel"] if data[name]["results"] else None
        print(
            f"  {name}: {path.stat().st_size} bytes, {len(rows)} launch(es); the manifest's kernel "
            f"{'is' if kernel and any(kernel[:40] in r for r in rows) else 'is NOT'} in its listing"
        )


if __name__ == "__main__":
    if sys.argv[1] == "--same":
        same(*sys.argv[2:])
    elif sys.argv[1] == "--exported":
        exported(*sys.argv[2:])
    else:
        report(*sys.argv[1:])
