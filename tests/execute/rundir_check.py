"""Whether a run directory and its manifest agree, and whether every target ended ok exactly once: what a killed and
resumed run must show (tests/execute/test_nothing_lost_at_scale.py, bench.py scale --kills)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ncucampaign.execute.rundir.reading import read_manifest


def problems(run_dir: Path) -> list[str]:
    """What is wrong: a target not ok, ok more than once (an attempt that ended ok after one that already had), a
    report the manifest names that is missing or other than recorded, a report in reports/ no record names."""
    manifest: dict[str, Any] = read_manifest(run_dir).model_dump(mode="json")
    found = []
    named: set[str] = set()
    digests: dict[Path, str] = {}  # a union's report is named by each of its hundreds of members: hashed once
    for record in [*manifest["targets"], *manifest["shared_runs"]]:
        for attempt in record["attempts"]:
            if attempt.get("report"):
                named.add(attempt["report"])
        report = record.get("report")
        if report is None:
            continue
        named.add(report["path"])
        path = run_dir / report["path"]
        if not path.is_file():
            found.append(f"{record['name']}: its report {report['path']} is missing")
        elif path.stat().st_size != report["bytes"] or _digest(path, digests) != report["sha256"]:
            found.append(f"{record['name']}: its report {report['path']} is not the one recorded")
    for record in manifest["targets"]:
        oks = [a for a in record["attempts"] if a["status"] == "ok"]
        if record["status"] != "ok":
            found.append(f"{record['name']}: {record['status']} ({record['message']})")
        elif len(oks) != 1:
            found.append(f"{record['name']}: ok {len(oks)} times")
    on_disk = {str(p.relative_to(run_dir)) for p in (run_dir / "reports").rglob("*.ncu-rep*") if p.is_file()}
    found += [f"{path}: in the run directory, named by no record" for path in sorted(on_disk - named)]
    return found


def _digest(path: Path, digests: dict[Path, str]) -> str:
    if path not in digests:
        digests[path] = _sha256(path)
    return digests[path]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
