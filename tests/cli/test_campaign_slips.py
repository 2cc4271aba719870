"""Campaign slips a newcomer makes, each shown failing before its fix:
a list written as a string, loose whole numbers, lint in one pass and at the line that holds the value,
what ncu is sure to refuse as an error, an application that cannot start retried, samples that fall
short said by run, and the small leftovers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.errors import CampaignError
from ncucampaign.plan.expand import build_plan
from ncucampaign.plan.lint import lint_plan
from ncucampaign.spec.loader import parse_campaign
from ncucampaign.spec.ncu_catalog import InstalledNcu
from tests.conftest import FAKE_APP, FAKE_NCU_DIR, campaign_text, fake_env, load_manifest, run_cli

APP = "application:\n  command: python3 bench.py\n"
INSTALLED = InstalledNcu("2025.3.1.0", frozenset({"SpeedOfLight", "MemoryWorkloadAnalysis"}), frozenset({"full"}))


def problems(text: str) -> list[str]:
    with pytest.raises(CampaignError) as caught:
        parse_campaign(text, Path("camp.yaml"))
    return [f"{p.line}:{p.key_path()}: {p.message}" for p in caught.value.problems]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('sections: "SpeedOfLight, MemoryWorkloadAnalysis"', "[SpeedOfLight, MemoryWorkloadAnalysis]"),
        ('sections: "[SpeedOfLight]"', "[SpeedOfLight]"),
        ('nvtx_include: "[decode_step/, mlp/]"', "[decode_step/, mlp/]"),
        ('metrics: "[gpu__time_duration.sum, dram__bytes.sum]"', "[gpu__time_duration.sum, dram__bytes.sum]"),
        ('lint_ignore: "NCU001, NCU004"', "[NCU001, NCU004]"),
    ],
)
def test_a_list_written_as_a_string_is_an_error_at_the_defaults_line(value: str, written: str) -> None:
    """N1: each passed validate (warnings at each target's line at most) and every target failed at run time."""
    found = problems(APP + f"defaults:\n  {value}\ntargets:\n  - name: a\n  - name: b\n")
    (only,) = found
    assert only.startswith(f"4:defaults.{value.split(':')[0]}: ") and only.endswith(written), found


def test_an_nvtx_expression_with_brackets_or_commas_of_its_own_is_kept() -> None:
    loaded = parse_campaign(
        APP + "targets:\n  - name: a\n    nvtx_include: ['[decode_step/layer]', 'A,B', 'mlp]']\n", Path("c.yaml")
    )
    assert loaded.campaign.targets[0].nvtx_include == ("[decode_step/layer]", "A,B", "mlp]")


@pytest.mark.parametrize(
    ("value", "said"),
    [("true", "not true"), ("'3'", "not the text '3'"), ("3.0", "not 3.0")],
)
@pytest.mark.parametrize("key", ["samples", "launch_count"])
def test_counts_take_whole_numbers_only(key: str, value: str, said: str) -> None:
    (only,) = problems(APP + f"targets:\n  - name: a\n    {key}: {value}\n")
    assert only == f"5:targets[0].{key}: expected a whole number, {said}" + (
        " (write it without quotes)" if value.startswith("'") else ""
    )


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_section_typo_is_linted_in_the_same_pass_as_a_key_error_of_its_target(tmp_path: Path) -> None:
    """Lint: NCU009 waited behind the key error until the next round."""
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(APP + "targets:\n  - name: a\n    kernal_name: k\n    sections: [SpeedOfLigt]\n")
    done = run_cli("validate", str(campaign), cwd=tmp_path, env=fake_env())
    assert done.returncode == 2
    assert "targets[0].kernal_name: unknown key" in done.stderr
    assert "error NCU009 targets[0].sections[0]: section 'SpeedOfLigt'" in done.stdout, done.stdout


def test_a_defaults_typo_is_reported_once_at_the_defaults_line() -> None:
    loaded = parse_campaign(
        APP + "defaults:\n  sections: [SpeedOfLigt]\ntargets:\n  - name: a\n  - name: b\n  - name: c\n"
        "    sections: [SpeedOfLite]\n",
        Path("camp.yaml"),
    )
    found = [(w.code, w.line, w.path) for w in lint_plan(loaded, build_plan(loaded), INSTALLED)]
    assert found == [("NCU009", 4, ("defaults", "sections", 0)), ("NCU009", 9, ("targets", 2, "sections", 0))]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_what_the_installed_ncu_refuses_fails_validate_without_strict(tmp_path: Path) -> None:
    """validate exited 0 on "ncu will refuse it"; plan and run say it as an error too (run runs the
    other targets: one broken target never stops a campaign)."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n  set: ful\n"))
    done = run_cli("validate", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "error NCU009 targets[0].set: set 'ful' is not listed" in done.stdout and "did you mean 'full'?" in done.stdout
    )
    assert "not ok (1 target, 1 ncu invocation, 1 error (the installed ncu refuses them))" in done.stdout
    planned = run_cli("plan", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert planned.returncode == 0 and "error NCU009 targets[0].set" in planned.stderr


@pytest.mark.parametrize(
    ("value", "said"),
    [("cache_control: false", "e.g. 'none'"), ("share: off", "e.g. 'off'"), ("clock_control: false", "e.g. 'none'")],
)
def test_a_bare_word_yaml_read_as_false_is_hinted_with_the_keys_own_values(value: str, said: str) -> None:
    (only,) = problems(APP + f"defaults:\n  {value}\ntargets:\n  - name: a\n")
    assert said in only, only


def test_an_unknown_extra_arg_suggests_only_a_close_option() -> None:
    (far,) = problems(APP + "targets:\n  - name: a\n    extra_args: [--no-such-option]\n")
    assert "did you mean" not in far  # it was '--section'
    (near,) = problems(APP + "targets:\n  - name: a\n    extra_args: [--print-sumary, per-kernel]\n")
    assert "did you mean '--print-summary'?" in near


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_discover_names_a_target_that_is_not_there_before_looking_for_ncu(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    env = fake_env()
    env["PATH"] = env["PATH"].replace(str(FAKE_NCU_DIR), str(tmp_path / "no-ncu"))
    done = run_cli("discover", "camp.yaml", "--target", "nope", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "no target named 'nope'" in done.stderr, done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_plan_slurm_says_how_to_cancel_pending_tasks_too(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    done = run_cli("plan", "camp.yaml", "--slurm", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0 and "scancel -t PENDING <job id>; scancel -b -s INT <job id>" in done.stdout


@pytest.mark.slow
def test_an_application_that_cannot_start_is_not_retried(tmp_path: Path) -> None:
    """N4: `python3 nosuch_app.py` ("can't open file", exit 2) was retried after 10 s."""
    text = campaign_text("- name: a\n  kernel_name: k\n").replace(json.dumps(str(FAKE_APP)), '"nosuch_app.py"')
    text = text.replace("  retries: 0\n", "  retries: 2\n").replace("  retry_delay: 0\n", "  retry_delay: 10\n")
    (tmp_path / "camp.yaml").write_text(text)
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout + done.stderr
    (record,) = load_manifest(tmp_path / "runs")[1]["targets"]
    assert record["status"] == "app_failed" and len(record["attempts"]) == 1, record["attempts"]
    assert "can't open file" in record["message"] and "not retried: the application cannot start" in record["message"]


@pytest.mark.slow
def test_run_says_when_samples_fall_short_and_how_to_pin_them(tmp_path: Path) -> None:
    """N5: `run --samples 5` gave 3 samples in one launch state; only summarize said so."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: rms\n  kernel_name: rmsnorm_kernel\n"))
    done = run_cli("run", "camp.yaml", "--samples", "5", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("samples: ")]
    assert line.startswith("samples: rms: 3 of 5 samples in one launch state"), line
    assert 'pin them to that state (nvtx_include: "[decode_step/layer]")' in line and "(samples: 9)" in line
