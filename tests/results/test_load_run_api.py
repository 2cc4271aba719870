"""The Python API for notebooks: ncucampaign.load_run(path), its records and its tidy DataFrame."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import ncucampaign
from tests.conftest import load_manifest, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end


def same_cell(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


@pytest.fixture
def run_dir(tmp_path: Path, write_campaign) -> Path:
    campaign = write_campaign(
        "- name: rms\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n"
        "- name: typo\n  kernel_name: no_such_kernel\n"  # profiles nothing: a status row only
    )
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 1
    return load_manifest(tmp_path / "runs")[0]


def test_to_dataframe_equals_summarize_csv(run_dir: Path, tmp_path: Path) -> None:
    pandas = pytest.importorskip("pandas")
    frame = ncucampaign.load_run(run_dir).to_dataframe()
    done = run_cli("summarize", str(run_dir), "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from_csv = pandas.read_csv(io.StringIO(done.stdout), dtype=str, keep_default_na=False)
    assert list(frame.columns) == list(from_csv.columns) and len(frame) == len(from_csv)
    cells = frame.astype(object).where(frame.notna(), "").astype(str)
    for column in frame.columns:  # numbers compare as numbers: the CSV writes the integer 25 as "25"
        assert [same_cell(a, b) for a, b in zip(cells[column], from_csv[column], strict=True)] == [True] * len(frame)
    statuses = frame.groupby("target")["status"].first().to_dict()
    assert statuses == {"rms": "ok", "typo": "no_kernels"}
    assert frame[frame.target == "typo"]["metric"].isna().all()  # no results: one status row


def test_load_run_gives_the_records_and_status_rows_in_json(run_dir: Path, tmp_path: Path) -> None:
    run = ncucampaign.load_run(run_dir)
    assert [t.name for t in run.targets] == ["rms", "typo"] and run.manifest.campaign.name == "camp"
    rows = json.loads(run_cli("summarize", str(run_dir), "--format", "json", cwd=tmp_path).stdout)
    assert rows == run.rows()
    assert [r for r in rows if r["target"] == "typo"] == [
        {**dict.fromkeys(rows[0]), "run_id": run.manifest.run_id, "target": "typo", "status": "no_kernels"}
    ]


def test_without_pandas_to_dataframe_says_what_to_install(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without pandas looks like
    from ncucampaign.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match=r"pip install 'ncucampaign\[dataframe\]'"):
        ncucampaign.load_run(run_dir).to_dataframe()


def test_the_package_names_no_other_attribute() -> None:
    with pytest.raises(AttributeError):
        ncucampaign.no_such_thing  # noqa: B018
