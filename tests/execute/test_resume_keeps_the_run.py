"""A resume finishes the run that was started, as it was started: with the ncu that made its results (another
version is refused, never mixed in), under the seal of its campaign (text and source), keeping the request it began
with and recording each resume's own beside it; a recorded request is read strictly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKE_NCU_DIR, campaign_text, fake_env, run_cli

pytestmark = pytest.mark.slow  # the CLI end to end, resumed several times

THREE = campaign_text(
    "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: regex:nvjet\n"
    "- name: missing\n  kernel_name: no_such_kernel\n"
)


def started(tmp_path: Path, *extra: str, **env: str) -> Path:
    (tmp_path / "camp.yaml").write_text(THREE)
    done = run_cli("run", "camp.yaml", "--out", "runs", *extra, cwd=tmp_path, env=fake_env(**env))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # `missing` profiles nothing
    return (tmp_path / "runs" / "camp" / "latest").resolve()


def manifest(run: Path) -> dict[str, Any]:
    return json.loads((run / "manifest.json").read_text())


def resume(run: Path, *extra: str, **env: str) -> Any:
    return run_cli("run", "--resume", str(run), *extra, cwd=run.parent.parent.parent, env=fake_env(**env))


def newer_ncu(tmp_path: Path) -> Path:
    """An ncu of another version (2026.3.1: it writes .ncu-repz reports) beside the one on PATH (2025.3.1)."""
    wrapper = tmp_path / "ncu-2026" / "ncu"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nFAKE_NCU_VERSION=2026.3.1.0 exec {FAKE_NCU_DIR / "ncu"} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def test_a_resume_takes_ncu_from_this_machine_never_from_the_manifest_and_refuses_another_version(
    tmp_path: Path,
) -> None:
    """Before: resumed without --ncu, the run re-ran its ok targets with the ncu on PATH (2025.3.1), its manifest
    still claiming 2026.3.1, reports of both versions side by side. Then the resume ran the manifest's `ncu.path`,
    which anyone who can edit the run directory may point at a program of theirs (round 7, item 5): now it finds
    ncu as a run does (--ncu, $NCUCAMPAIGN_NCU, the campaign's, PATH) and checks its version against the record."""
    ncu = newer_ncu(tmp_path)
    run = started(tmp_path, "--ncu", str(ncu))
    assert manifest(run)["ncu"]["version"] == "2026.3.1.0"
    on_path = resume(run)  # the fake ncu on PATH is 2025.3.1: refused, though the manifest names the newer one
    assert on_path.returncode == 2, on_path.stdout[-2000:] + on_path.stderr[-2000:]
    assert "made with ncu 2026.3.1.0" in on_path.stderr and "2025.3.1.0" in on_path.stderr
    assert "resumed" not in manifest(run) or not manifest(run)["resumed"]  # nothing ran
    again = resume(run, "--ncu", str(ncu))
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr[-2000:]
    after = {t["name"]: t for t in manifest(run)["targets"]}
    assert [len(after[n]["attempts"]) for n in ("a", "b")] == [1, 1]  # ok: never run again
    assert len(manifest(run)["resumed"]) == 1 and manifest(run)["ncu"]["version"] == "2026.3.1.0"
    started_ncu = {r["argv"][0] for r in [*manifest(run)["shared_runs"], *after.values()] if r["argv"]}
    assert started_ncu == {str(ncu)}  # every ncu process of the run and of its resume: one version
    assert sorted(p.name for p in (run / "reports").iterdir() if p.is_file()) == ["a.ncu-repz", "b.ncu-repz"]


def test_the_seal_and_the_first_request_survive_three_resumes(tmp_path: Path) -> None:
    """Before: the first resume blanked campaign.sha256 (an edited copy was then used silently) and replaced the
    recorded request by its own (`file: null, out: null`)."""
    run = started(tmp_path, "--no-share", "--samples", "2")
    first = manifest(run)
    for _ in range(3):
        assert resume(run).returncode == 1
    after = manifest(run)
    assert after["campaign"]["sha256"] == first["campaign"]["sha256"] != ""
    assert after["campaign"]["seal"] == first["campaign"]["seal"] != ""
    assert after["request"] == first["request"] and after["request"]["file"] == "camp.yaml"
    assert len(after["resumed_with"]) == len(after["resumed"]) == 3
    assert all(r["resume"] == str(run) and r["no_share"] for r in after["resumed_with"])
    copy = run / "campaign.yaml"
    copy.write_text(copy.read_text().replace("no_such_kernel", "rmsnorm_kernel"))
    edited = resume(run)
    assert edited.returncode == 2 and "its sha256 differs" in edited.stderr, edited.stderr


def test_a_forged_campaign_source_is_refused(tmp_path: Path) -> None:
    """Before: pointed at another folder, the resume ran that folder's script and re-ran the ok targets."""
    run = started(tmp_path)
    before = [len(t["attempts"]) for t in manifest(run)["targets"]]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = manifest(run)
    data["campaign"]["source"] = str(elsewhere / "camp.yaml")
    (run / "manifest.json").write_text(json.dumps(data))
    done = resume(run)
    assert done.returncode == 2 and "not sealed by you" in done.stderr, done.stderr
    assert [len(t["attempts"]) for t in manifest(run)["targets"]] == before and not manifest(run)["resumed"]


def test_a_source_forged_with_its_seal_recomputed_is_refused_and_the_key_is_the_users_alone(
    tmp_path: Path,
) -> None:
    """Round 7, item 5: the seal was a plain sha256 of source and digest: anyone who could write the run directory
    recomputed it, and the forged source ran. Keyed by this user's key, a recomputed seal does not hold."""
    import hashlib

    run = started(tmp_path)
    data = manifest(run)
    assert data["campaign"]["seal"].startswith("hmac-sha256:")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "camp.yaml").write_text((run / "campaign.yaml").read_text())
    forged = str(elsewhere / "camp.yaml")
    data["campaign"]["source"] = forged
    data["campaign"]["seal"] = hashlib.sha256(f"{forged}\0{data['campaign']['sha256']}".encode()).hexdigest()
    (run / "manifest.json").write_text(json.dumps(data))
    assert resume(run).returncode == 2 and not manifest(run)["resumed"]
    key = Path(os.environ["XDG_CONFIG_HOME"]) / "ncucampaign" / "seal.key"
    assert key.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [("samples", -1, "request.samples"), ("samples", True, "request.samples"), ("no_share", "yes", "request.no_share")],
)
def test_a_recorded_request_is_read_strictly(tmp_path: Path, field: str, value: object, said: str) -> None:
    """Before: `samples: -1` answered with a message about --samples, which nobody gave; `samples: true` was read
    as 1 and `no_share: "yes"` as true."""
    run = started(tmp_path)
    data = manifest(run)
    data["request"][field] = value
    (run / "manifest.json").write_text(json.dumps(data))
    done = resume(run)
    assert done.returncode == 2 and said in done.stderr and "--samples" not in done.stderr, done.stderr
    assert os.path.exists(run / "manifest.json")
