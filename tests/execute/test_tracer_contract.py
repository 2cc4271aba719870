"""The contract every tracer of a shared run's discovery trace keeps (execute/trace/contract.py), each
case run against every tracer of the table (execute/trace/tracers.py) on the fakes: Nsight Systems'
(tests/fake_nsys) and ncu's (tests/fake_ncu). What a tracer reads may be damaged or strange, empty,
kept and then forged, endless, or cut short by a kill; whatever it is, the run ends with what a run
without that trace ends with (the same statuses and the same launches), never an internal error,
closes no target on a trace that could not have seen its launches, and leaves no work folder.

Each tracer is provoked through its own fake (the tables below, one entry a tracer); a tracer added
to the table without its entries fails test_every_tracer_of_the_table_is_provoked."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ncucampaign.execute.trace.listings import decode, encode
from ncucampaign.execute.trace.tracers import TRACERS, label_of
from tests.conftest import FAKE_APP, FIXTURES, REPORT, campaign_text, fake_env, load_manifest, run_cli
from tests.execute.shared_campaigns import NSYS, TRACE_TARGETS, obtained, profiled_launch

pytestmark = pytest.mark.slow  # each case runs the CLI end to end
NAMES = [tracer.name for tracer in TRACERS]
TARGETS = ["rms-0", "rms-5", "gemm-1", "gemm-2", "mlp_rms"]

# How each tracer becomes the first of the table that can take the trace here.
TAKES: dict[str, dict[str, str]] = {"nsys": {"NCUCAMPAIGN_NSYS": str(NSYS)}, "ncu": {"NCUCAMPAIGN_NSYS": "off"}}
# What its fake hands back that is damaged or strange where the tracer reads (the reproductions of
# exit 70: a NULL or text grid, a NULL NVTX start, a text NVTX end, scrambled pages).
_EXPORTS = ("null-grid", "text-grid", "infinite-grid", "null-nvtx-start", "text-nvtx-end", "scrambled", "bad-utf8")
STRANGE: dict[str, list[dict[str, str]]] = {
    "nsys": [{"FAKE_NSYS_EXPORT": mode} for mode in (*_EXPORTS, "missing-string", "calls-out-of-order")],
    "ncu": [
        {"FAKE_NCU_TRACE_LISTING": "renumbered"},
        {"FAKE_NCU_TRACE_LISTING": "odd-grid"},
        {"FAKE_NCU_GARBLE_LISTING": "3"},
    ],
}
# What its fake hands back when the application launched kernels but the trace lists none.
EMPTY: dict[str, list[dict[str, str]]] = {
    "nsys": [{"FAKE_NSYS_EXPORT": "empty-kernels"}, {"FAKE_NSYS_EXPORT": "zero-bytes"}],
    "ncu": [{"FAKE_NCU_TRACE_LISTING": "empty"}],
}


def _renamed_launches(kept: Path) -> None:
    listed = decode(json.loads(kept.read_text()), [])
    renamed = {words: [dataclasses.replace(x, symbol=f"forged_{x.symbol}") for x in xs] for words, xs in listed.items()}
    kept.write_text(encode(renamed, []).model_dump_json())  # the right format and digest, names no kernel has


def _infinite_grid(kept: Path) -> None:
    data = json.loads(kept.read_text())
    data["listings"][0][1][0][0] = float("inf")
    kept.write_text(json.dumps(data))  # json writes it Infinity


def _other_report(kept: Path) -> None:
    shutil.copyfile(FIXTURES / "reports" / f"full_decode2{REPORT}", kept)  # a real report of other launches


def _garbage(kept: Path) -> None:
    kept.write_bytes(b"\x00not a trace" * 100)


# How a trace the tracer kept in the cache is forged or damaged between two runs.
FORGED: dict[str, list[Callable[[Path], None]]] = {
    "nsys": [_renamed_launches, _infinite_grid, _garbage],
    "ncu": [_other_report, _garbage],
}


def _export_started(run_dir: Path, hang: Path) -> bool:
    return "nsys export" in _logs(run_dir)


def _import_started(run_dir: Path, hang: Path) -> bool:
    return Path(f"{hang}.pids").is_file()


# How each tracer's read is made endless, and how a test sees that it has begun.
ENDLESS: dict[str, tuple[Callable[[Path], dict[str, str]], Callable[[Path, Path], bool]]] = {
    "nsys": (lambda hang: {"FAKE_NSYS_EXPORT": "endless"}, _export_started),
    "ncu": (lambda hang: {"FAKE_NCU_IMPORT_HANG": str(hang)}, _import_started),
}
TABLES: list[dict[str, Any]] = [TAKES, STRANGE, EMPTY, FORGED, ENDLESS]


def cases(table: dict[str, list[Any]]) -> list[Any]:
    return [
        pytest.param(name, case, id=f"{name}-{number}") for name in NAMES for number, case in enumerate(table[name])
    ]


def then(name: str) -> str:
    """How the targets are obtained when the trace of tracer `name` is not taken: on the next tracer's
    trace, or (the last) each alone."""
    return "shared" if NAMES.index(name) < len(NAMES) - 1 else "alone"


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, ...]]]:
    """What each target profiles in its own run (--no-share): what every case must end with."""
    folder = tmp_path_factory.mktemp("no-share")
    campaign = write(folder)
    done = run_cli("run", str(campaign), "--out", "runs", "--no-share", cwd=folder, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, _ = load_manifest(folder / "runs")
    return {name: profiled_launch(run_dir, name) for name in TARGETS}


def write(folder: Path, extra: str = "", defaults: str = "") -> Path:
    campaign = folder / "camp.yaml"
    campaign.write_text(campaign_text(TRACE_TARGETS + extra, defaults))
    return campaign


def run(folder: Path, name: str, **knobs: str) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, Any]]:
    done = run_cli("run", str(folder / "camp.yaml"), "--out", "runs", cwd=folder, env=fake_env(**TAKES[name], **knobs))
    run_dir, manifest = load_manifest(folder / "runs")
    return done, run_dir, manifest


def _logs(run_dir: Path) -> str:
    folder = run_dir / "logs" / "shared"
    return "".join(p.read_text(errors="replace") for p in sorted(folder.glob("trace-*.log"))) if folder.is_dir() else ""


def held_as_alone(run_dir: Path, manifest: dict[str, Any], expected: dict[str, list[tuple[str, ...]]]) -> None:
    """Every target ok with the launches its own run profiles, and no work folder left."""
    assert {t["name"]: t["status"] for t in manifest["targets"]} == dict.fromkeys(TARGETS, "ok")
    assert {name: profiled_launch(run_dir, name) for name in TARGETS} == expected
    assert not list((run_dir / "reports").glob(".trace-*"))


def test_every_tracer_of_the_table_is_provoked() -> None:
    assert [sorted(table) for table in TABLES] == [sorted(NAMES)] * len(TABLES)
    assert len(set(NAMES)) == len(NAMES) and all(label_of(name) for name in NAMES)


@pytest.mark.parametrize(("name", "knobs"), cases(STRANGE))
def test_a_damaged_or_strange_value_where_the_tracer_reads_is_refused_and_the_run_goes_on(
    tmp_path: Path, name: str, knobs: dict[str, str], expected: dict[str, list[tuple[str, ...]]]
) -> None:
    write(tmp_path)
    done, run_dir, manifest = run(tmp_path, name, **knobs)
    assert done.returncode == 0, done.stdout + done.stderr  # never 70 (an internal error)
    held_as_alone(run_dir, manifest, expected)
    assert set(obtained(manifest).values()) == {then(name)}
    refused = f"not by {label_of(name)}: " in _logs(run_dir) or all(
        "discovery trace" in (t["obtained"] or {}).get("reason", "") for t in manifest["targets"]
    )
    assert refused, _logs(run_dir)


@pytest.mark.parametrize(("name", "knobs"), cases(EMPTY))
def test_a_trace_that_lists_no_launch_at_all_is_not_taken(
    tmp_path: Path, name: str, knobs: dict[str, str], expected: dict[str, list[tuple[str, ...]]]
) -> None:
    """The application launched 98 kernels; a trace holding none closes no target no_kernels."""
    write(tmp_path)
    done, run_dir, manifest = run(tmp_path, name, **knobs)
    assert done.returncode == 0, done.stdout + done.stderr
    held_as_alone(run_dir, manifest, expected)
    assert set(obtained(manifest).values()) == {then(name)}
    assert "it lists no launch at all" in _logs(run_dir) + json.dumps(manifest)


LATE = "- name: late\n  kernel_name: rmsnorm_kernel\n  launch_skip: 55\n"  # past the application's end


@pytest.mark.parametrize("name", NAMES)
def test_a_miss_is_closed_on_a_trace_ncu_listed_or_confirmed_and_says_which_tracer_decided(
    tmp_path: Path, name: str
) -> None:
    write(tmp_path, LATE)
    done, _, manifest = run(tmp_path, name)
    assert done.returncode == 1, done.stdout + done.stderr  # `late` profiles nothing, whoever says so
    late = next(t for t in manifest["targets"] if t["name"] == "late")
    tracer = next(t for t in TRACERS if t.name == name)
    assert late["status"] == "no_kernels" and late["obtained"]["how"] == "trace" and late["attempts"] == []
    assert f"by {tracer.label}" in late["obtained"]["reason"]
    confirmed = "splits of its own filters verified against it confirmed it" in late["obtained"]["reason"]
    assert confirmed == tracer.needs_confirming
    assert {t["obtained"]["how"] for t in manifest["targets"] if t["name"] != "late"} == {"shared"}


# How a trace whose listing needs confirming is made to list launches ncu's own runs do not confirm.
UNCONFIRMED = {"nsys": {"FAKE_NSYS_EXPORT": "renamed"}}  # every kernel: nothing shares, nothing verifies


@pytest.mark.parametrize("name", [t.name for t in TRACERS if t.needs_confirming])
def test_a_miss_on_a_trace_no_verified_split_confirmed_is_decided_by_its_own_run_once(
    tmp_path: Path, name: str
) -> None:
    write(tmp_path, LATE)
    done, _, manifest = run(tmp_path, name, **UNCONFIRMED[name])
    assert done.returncode == 1, done.stdout + done.stderr
    late = next(t for t in manifest["targets"] if t["name"] == "late")
    assert late["status"] == "no_kernels" and late["obtained"]["how"] == "alone" and len(late["attempts"]) == 1
    assert "which no verified split of its filters confirmed: its own run decides" in late["obtained"]["reason"]
    # its own run went to the application's end with nothing matched: kept beside the trace, the next run on the
    # kept trace closes it on that miss, with no start (execute/trace/cache/kept_misses.py)
    done, _, again = run(tmp_path, name, **UNCONFIRMED[name])
    assert done.returncode == 1, done.stdout + done.stderr
    late = next(t for t in again["targets"] if t["name"] == "late")
    assert late["status"] == "no_kernels" and late["obtained"]["how"] == "trace" and late["attempts"] == [], late
    assert late["obtained"]["miss_run"] == manifest["run_id"], late


@pytest.mark.parametrize(("name", "forge"), cases(FORGED))
def test_a_kept_trace_that_is_forged_or_damaged_is_traced_again(
    tmp_path: Path, name: str, forge: Callable[[Path], None], expected: dict[str, list[tuple[str, ...]]]
) -> None:
    write(tmp_path)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    assert run(tmp_path, name)[0].returncode == 0
    cache = tmp_path / "runs" / ".cache" / "traces"
    (kept,) = [p for p in cache.iterdir() if p.is_file() and (p.suffix != ".json" or p.name.endswith("-launches.json"))]
    forge(kept)
    done, run_dir, manifest = run(tmp_path, name)
    assert done.returncode == 0, done.stdout + done.stderr
    held_as_alone(run_dir, manifest, expected)
    assert set(obtained(manifest).values()) == {"shared"}
    trace = next(r for r in manifest["shared_runs"] if r["kind"] == "trace")  # taken again, by the same tracer
    assert trace["tracer"] == name and trace["status"] == "ok"
    assert f"the cached trace {kept} is not the file that was kept" in _logs(run_dir)


@pytest.mark.parametrize("name", NAMES)
def test_a_ctrl_c_stops_a_read_that_would_not_end(tmp_path: Path, name: str) -> None:
    hang = tmp_path.parent / f"{tmp_path.name}-hang"
    hang.touch()
    knobs, started = ENDLESS[name][0](hang), ENDLESS[name][1]
    write(tmp_path)
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(tmp_path / "camp.yaml"), "--out", "runs"],
        cwd=tmp_path, env=fake_env(**TAKES[name], **knobs), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    latest = tmp_path / "runs" / "camp" / "latest"
    deadline = time.monotonic() + 60
    while not (latest.is_dir() and started(latest, hang)):
        assert time.monotonic() < deadline and runner.poll() is None, "the read never began"
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=60)
    hang.unlink()
    assert runner.returncode == 130, out + err
    assert "Traceback" not in err
    _, manifest = load_manifest(tmp_path / "runs")
    assert {t["status"] for t in manifest["targets"]} == {"interrupted"}


@pytest.mark.parametrize("name", NAMES)
def test_a_runner_killed_during_a_take_leaves_no_work_folder_after_the_resume(
    tmp_path: Path, name: str, expected: dict[str, list[tuple[str, ...]]]
) -> None:
    hang = tmp_path.parent / f"{tmp_path.name}-hang"
    hang.touch()
    write(tmp_path, defaults=f"args: [--hang-at-step, '2', --hang-file, {json.dumps(str(hang))}]")
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(tmp_path / "camp.yaml"), "--out", "runs"],
        cwd=tmp_path, env=fake_env(**TAKES[name]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    latest = tmp_path / "runs" / "camp" / "latest"
    deadline = time.monotonic() + 60
    while not (latest.is_dir() and "hanging at step 2" in _logs(latest)):
        assert time.monotonic() < deadline and runner.poll() is None, "the trace never reached the hang"
        time.sleep(0.05)
    assert list((latest / "reports").glob(".trace-*"))  # the take's work folder
    runner.kill()
    runner.wait()
    hang.unlink()
    done = run_cli("run", "--resume", str(latest.resolve()), cwd=tmp_path, env=fake_env(**TAKES[name]))
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    held_as_alone(run_dir, manifest, expected)


@pytest.mark.parametrize("name", NAMES)
def test_nvtx_names_holding_colons_compare_the_same_way_under_every_tracer(tmp_path: Path, name: str) -> None:
    """A range named like PyTorch's (`aten::linear`): ncu lists it DOMAIN:RANGE:... and the union's
    listing cut it at its first colon, so that under Nsight Systems every split was refused."""
    write(tmp_path, defaults="args: [--mlp-range, 'aten::linear']")
    done, run_dir, manifest = run(tmp_path, name)
    assert done.returncode == 1, done.stdout + done.stderr  # mlp_rms names `mlp`, which no range is now
    assert {t: h for t, h in obtained(manifest).items() if t != "mlp_rms"} == dict.fromkeys(TARGETS[:4], "shared")
    stacks = {entry for target in TARGETS[:4] for launch in profiled_launch(run_dir, target) for entry in launch[1:]}
    assert any("aten::linear" in entry for entry in stacks), stacks


@pytest.mark.parametrize("name", NAMES)
def test_an_application_that_outlasts_the_trace_closes_nothing_on_what_was_not_traced(
    tmp_path: Path, name: str, expected: dict[str, list[tuple[str, ...]]]
) -> None:
    """The application hangs after every launch the targets want; the trace (which would run to its end) is stopped
    by its timeout. A tracer keeps what it traced as a trace cut there, or refuses it; either way the targets end as
    their own runs do, and `late`, whose launch would come after the cut, is never closed on it."""
    campaign = write(tmp_path, LATE, defaults="timeout: 4")
    hangs = f"{json.dumps(str(FAKE_APP))}, --hang-at-step, '3']"
    text = campaign.read_text().replace(f"{json.dumps(str(FAKE_APP))}]", hangs).replace("  timeout: 30\n", "")
    campaign.write_text(text)
    done, run_dir, manifest = run(tmp_path, name)
    assert done.returncode == 1, done.stdout + done.stderr  # `late` timed out, as its own run does; never 70
    late = next(t for t in manifest["targets"] if t["name"] == "late")
    assert late["status"] == "timed_out" and late["obtained"]["how"] == "alone", late
    # why it ran alone says the trace was cut, and what would let it reach the target
    assert (
        "the discovery trace held when it was cut short (by its timeout, which a longer one"
        in late["obtained"]["reason"]
    ), late
    manifest["targets"] = [t for t in manifest["targets"] if t["name"] != "late"]
    held_as_alone(run_dir, manifest, expected)
    assert set(obtained(manifest).values()) == {"shared"}  # what the cut trace holds is used
