"""Reliability figures, against the fake ncu: nothing here passes or fails, it counts.

    python tests/benchmarks/reliability.py --kills 20 --floods 10 --storms 20 --early-kills 20
    python tests/benchmarks/reliability.py --kills 0 --floods 0 --nsys --aimed-kills 30 --hostile-exports

kills: a shared-run campaign is run once with --no-share (the reference); then, again and again, a
shared run is killed with SIGKILL at a random moment (the runner only, as a crash would) and
resumed. Counted: resumes that ended with exit 0 and every target ok, targets whose report holds a
launch other than the reference's, processes of the run left alive after the resume.
floods: a run receives SIGINT as fast as it can be sent for a random time; counted: runs that did not
end within 30 s of the flood, exit codes, and processes left alive.
storms: 10 SIGINTs at random moments from 0 to 3 s after the command starts, with SIGINT
inherited as ignored (a background job of a script, `nohup`) and as Python's default, half each;
counted: exit codes (a run that exits 0 lost its Ctrl-C).
aimed kills: kill -9 within 0.4 s of the run directory's appearing, where the discovery trace runs;
counted as kills are, and where the kill landed. --nsys: every run takes its discovery trace by the
fake Nsight Systems (tests/fake_nsys), not by the fake ncu.
early kills: kill -9 at a random moment from 0.05 to 2 s, the probes and the run's set-up
included; counted: runs --resume finished (exit 0, every target ok) and runs that left nothing started.
hostile exports: a run whose trace by the fake Nsight Systems has an export damaged or strange in one
way of the fake's (tests/fake_nsys: every FAKE_NSYS_EXPORT mode, 3,000,000 more launches), each
against the --no-share run; counted: exit 70s, targets ok with another launch than --no-share's,
targets closed no_kernels on a trace, work folders left; and for the reads that would not end soon
(an endless table, 3,000,000 launches) the seconds from a Ctrl-C to the run's end.
The hostile suite's generated inputs are counted by pytest itself:
`HOSTILE_EXAMPLES=1000 pytest tests/hostile/test_generated.py` ends with "hostile inputs: N cases".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import campaign_text, fake_env  # noqa: E402
from tests.execute.shared_campaigns import TRACE_TARGETS, profiled_launch  # noqa: E402

TARGETS = TRACE_TARGETS + (
    "- name: rms_sections_{sections}\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n"
    "  matrix:\n    sections: [[SpeedOfLight, LaunchStats], [SpeedOfLight, Occupancy]]\n"
)
MARKER = "NCUCAMPAIGN_RUN_DIR="


NSYS = ROOT / "tests" / "fake_nsys" / "host" / "target-linux-x64" / "nsys"
TRACER = {"name": "ncu"}  # --nsys: the discovery trace by the fake Nsight Systems


def run_env() -> dict[str, str]:
    extra = {"NCUCAMPAIGN_NSYS": str(NSYS)} if TRACER["name"] == "nsys" else {}
    return fake_env(FAKE_NCU_SECONDS_PER_KERNEL="0.05", **extra)


def cli(campaign: Path, out: Path, *extra: str, sigint_ignored: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", str(out), *extra],
        cwd=campaign.parent,
        env=run_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
    )


def latest(out: Path) -> Path:
    return (out / "camp" / "latest").resolve()


def left_alive(run_dir: Path) -> int:
    """Processes whose environment carries this run's marker (ncu, imports, the application)."""
    marker = f"{MARKER}{run_dir}".encode()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += marker in (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
    return count


def work_folders(run_dir: Path) -> int:
    return sum(1 for p in (run_dir / "reports").glob(".*") if p.is_dir() and p.name.startswith((".trace-", ".nsys-")))


def launches(run_dir: Path) -> dict[str, list[tuple[str, ...]]]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {t["name"]: profiled_launch(run_dir, t["name"]) for t in manifest["targets"] if t["status"] == "ok"}


@dataclass
class Tally:
    """What resuming killed runs gave: outcomes, launches other than --no-share's, processes left."""

    outcomes: Counter[str] = field(default_factory=Counter)
    wrong: int = 0
    compared: int = 0
    alive: int = 0
    work_left: int = 0

    def resume(self, work: Path, out: Path, expected: dict[str, list[tuple[str, ...]]]) -> None:
        if not (out / "camp" / "latest").exists():
            self.outcomes["killed before the run directory existed"] += 1
            return
        resumed = subprocess.run(
            [sys.executable, "-m", "ncucampaign", "run", "--resume", str(latest(out))],
            cwd=work,
            env=run_env(),
            capture_output=True,
            text=True,
        )
        statuses = {t["status"] for t in json.loads((latest(out) / "manifest.json").read_text())["targets"]}
        self.outcomes[f"resume exit {resumed.returncode}, statuses {sorted(statuses)}"] += 1
        got = launches(latest(out))
        self.compared += len(got)
        self.wrong += sum(1 for name, launch in got.items() if launch != expected.get(name))
        self.alive += left_alive(latest(out))
        self.work_left += work_folders(latest(out))

    def show(self, title: str) -> None:
        print(title)
        for outcome, times in self.outcomes.most_common():
            print(f"  {times:3d}  {outcome}")
        print(f"  targets whose report holds another launch than --no-share's: {self.wrong} of {self.compared}")
        print(f"  processes of the run left alive after the resume: {self.alive}")
        print(f"  work folders of a trace left in the run directory after the resume: {self.work_left}")


def kills(work: Path, count: int, rng: random.Random) -> None:
    campaign = work / "camp.yaml"
    campaign.write_text(campaign_text(TARGETS))
    reference = work / "reference"
    started = time.monotonic()
    assert cli(campaign, reference, "--no-share").wait() == 0
    print(f"reference (--no-share): {time.monotonic() - started:.1f} s")
    expected = launches(latest(reference))
    started = time.monotonic()
    assert cli(campaign, work / "timing").wait() == 0
    shared_s = time.monotonic() - started
    print(f"one shared run: {shared_s:.1f} s; kills land at random within it")
    tally = Tally()
    for number in range(count):
        out = work / f"kill-{number}"
        runner = cli(campaign, out)
        time.sleep(rng.uniform(1.0, shared_s))  # a random moment of the run: the point of the exercise
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        tally.resume(work, out, expected)
    tally.show(f"kill -9 at a random moment, then run --resume: {count} times")


def aimed_kills(work: Path, count: int, rng: random.Random) -> None:
    """kill -9 within 0.4 s of the run directory's appearing, where the discovery trace runs (with
    --nsys, the fake Nsight Systems' profile, import and export), then run --resume."""
    campaign = work / "aimed" / "camp.yaml"
    campaign.parent.mkdir()
    campaign.write_text(campaign_text(TARGETS))
    assert cli(campaign, work / "aimed" / "reference", "--no-share").wait() == 0
    expected = launches(latest(work / "aimed" / "reference"))
    tally, at_kill = Tally(), Counter[str]()
    for number in range(count):
        out = work / "aimed" / f"kill-{number}"
        runner = cli(campaign, out)
        while not (out / "camp" / "latest").exists() and runner.poll() is None:
            time.sleep(0.005)  # the moment the run directory appears is what the kill is aimed from
        time.sleep(rng.uniform(0.0, 0.4))
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        if (out / "camp" / "latest").exists():
            shared = json.loads((latest(out) / "manifest.json").read_text())["shared_runs"]
            trace = any(r["status"] == "running" and r["kind"] == "trace" for r in shared)
            at_kill["the trace running" if trace else "elsewhere"] += 1
        tally.resume(work, out, expected)
    tally.show(f"kill -9 within 0.4 s of the run directory, then run --resume: {count} times ({dict(at_kill)})")


def floods(work: Path, count: int, rng: random.Random) -> None:
    campaign = work / "flood.yaml"
    campaign.write_text(campaign_text(TARGETS))
    codes: Counter[int] = Counter()
    hung = alive = sent_total = before = 0
    for number in range(count):
        out = work / f"flood-{number}"
        runner = cli(campaign, out)
        time.sleep(rng.uniform(0.2, 2.0))
        end, sent = time.monotonic() + rng.uniform(0.1, 1.0), 0
        while time.monotonic() < end and runner.poll() is None:
            runner.send_signal(signal.SIGINT)
            sent += 1
        sent_total += sent
        if not sent:  # it ended before its flood began (a fast run): nothing to count
            runner.communicate()
            before += 1
            continue
        try:
            _, err = runner.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            hung += 1
            runner.kill()
            _, err = runner.communicate()
        created = (out / "flood" / "latest").exists()  # the campaign is named by its file
        codes[runner.returncode] += 1
        if runner.returncode != 130:
            last = (err.strip().splitlines() or ["(nothing on stderr)"])[-1]
            state = json.loads((out / "flood" / "latest" / "manifest.json").read_text())["state"] if created else "-"
            print(
                f"  exit {runner.returncode}, run directory {'created' if created else 'not created'} ({state}): {last}"
            )
        if created:
            alive += left_alive((out / "flood" / "latest").resolve())
    print(f"SIGINT floods: {count} runs, {sent_total:,} signals; exit codes {dict(codes)}", end="")
    print(f"; {before} ended before their flood began" if before else "")
    print(f"  runs not ended 30 s after their flood: {hung}; processes of the runs left alive: {alive}")


def storms(work: Path, count: int, rng: random.Random) -> None:
    campaign = work / "storm.yaml"
    campaign.write_text(campaign_text(TARGETS))
    codes: Counter[tuple[str, int]] = Counter()
    for number in range(count):
        ignored = number % 2 == 1
        runner = cli(campaign, work / f"storm-{number}", sigint_ignored=ignored)
        started = time.monotonic()
        for moment in sorted(rng.uniform(0.0, 3.0) for _ in range(10)):
            time.sleep(max(0.0, started + moment - time.monotonic()))  # random moments: the point
            if runner.poll() is not None:
                break
            runner.send_signal(signal.SIGINT)
        try:
            _, err = runner.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            runner.kill()
            _, err = runner.communicate()
        inherited = "SIGINT inherited ignored" if ignored else "SIGINT inherited default"
        codes[(inherited, runner.returncode)] += 1
        if runner.returncode == 0 or "Traceback" in err:
            print(f"  storm {number} ({inherited}): exit {runner.returncode}: {err.strip()[-300:]}")
    print(f"SIGINT storms (10 at random moments in 0-3 s): {count} runs")
    for (inherited, code), times in sorted(codes.items()):
        print(f"  {times:3d}  exit {code} ({inherited})")
    print(f"  runs that exited 0 (a lost Ctrl-C): {sum(t for (_, c), t in codes.items() if c == 0)}")


def early_kills(work: Path, count: int, rng: random.Random) -> None:
    (work / "early").mkdir()
    campaign = work / "early" / "camp.yaml"  # the campaign's name is camp, as latest() reads it
    campaign.write_text(campaign_text(TARGETS))
    outcomes: Counter[str] = Counter()
    for number in range(count):
        out = work / f"early-{number}"
        runner = cli(campaign, out)
        moment = rng.uniform(0.05, 2.0)
        time.sleep(moment)  # a random moment of start-up or the run: the point of the exercise
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        if not (out / "camp" / "latest").exists():  # a run is latest once its manifest is written, before ncu runs
            made = (out / "camp").is_dir() and any(not p.is_symlink() for p in (out / "camp").iterdir())
            outcomes[f"nothing was started ({'a run folder without a manifest' if made else 'no run directory'})"] += 1
            continue
        resumed = subprocess.run(
            [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", str(out), "--resume"],
            cwd=campaign.parent,
            env=run_env(),
            capture_output=True,
            text=True,
        )
        try:
            manifest = json.loads((latest(out) / "manifest.json").read_text())
            statuses = sorted({t["status"] for t in manifest["targets"]})
        except (OSError, ValueError) as exc:
            statuses = [f"no manifest ({exc})"]
        outcome = f"resume exit {resumed.returncode}, statuses {statuses}"
        outcomes[outcome] += 1
        if resumed.returncode != 0:
            print(f"  kill at {moment:.2f} s: {outcome}: {resumed.stderr.strip()[-300:]}")
    print(f"kill -9 at a random moment in 0.05-2 s, then run --resume: {count} times")
    for outcome, times in outcomes.most_common():
        print(f"  {times:3d}  {outcome}")


def hostile_exports(work: Path) -> None:
    """Every way the fake Nsight Systems can damage its export, one run each, against --no-share."""
    from importlib.machinery import SourceFileLoader

    fake = SourceFileLoader("fake_nsys", str(NSYS)).load_module()
    (work / "hostile").mkdir()
    campaign = work / "hostile" / "camp.yaml"
    campaign.write_text(campaign_text(TARGETS))
    assert cli(campaign, work / "hostile" / "reference", "--no-share").wait() == 0
    expected = launches(latest(work / "hostile" / "reference"))
    modes = [{"FAKE_NSYS_EXPORT": m} for m in (*fake.DAMAGES, *sorted(fake.FILE_DAMAGES)) if m != "endless"]
    modes.append({"FAKE_NSYS_LAUNCHES": "3000000"})
    codes: Counter[int] = Counter()
    wrong = closed = left = 0
    for number, knobs in enumerate(modes):
        out = work / "hostile" / f"mode-{number}"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", str(out)],
            cwd=campaign.parent, env={**run_env(), "NCUCAMPAIGN_NSYS": str(NSYS), **knobs}, capture_output=True,
            text=True,
        )  # fmt: skip
        took = time.monotonic() - started
        codes[done.returncode] += 1
        manifest = json.loads((latest(out) / "manifest.json").read_text())
        got = launches(latest(out))
        bad = sorted(name for name, launch in got.items() if launch != expected.get(name))
        decided = sorted(t["name"] for t in manifest["targets"] if (t.get("obtained") or {}).get("how") == "trace")
        wrong, closed, left = wrong + len(bad), closed + len(decided), left + work_folders(latest(out))
        traces = [f"{r['tracer']} {r['status']}" for r in manifest["shared_runs"] if r["kind"] == "trace"]
        why = next((r["message"] for r in manifest["shared_runs"] if r["kind"] == "trace" and r["status"] != "ok"), "")
        mode = ",".join(f"{k.removeprefix('FAKE_NSYS_')}={v}" for k, v in knobs.items())
        print(f"  {mode:32} exit {done.returncode} {took:5.1f} s; traces {traces}; ok {len(got)}; {why[:90]}")
        if bad or decided:
            print(f"    another launch: {bad}; closed on a trace: {decided}")
    print(f"hostile exports: {len(modes)} modes; exit codes {dict(codes)}")
    print(f"  targets ok with another launch than --no-share's: {wrong}; closed no_kernels on a trace: {closed}")
    print(f"  work folders left: {left}")
    for knobs in ({"FAKE_NSYS_EXPORT": "endless"}, {"FAKE_NSYS_LAUNCHES": "3000000"}):
        out = work / "hostile" / f"stop-{len(knobs)}-{next(iter(knobs.values()))}"
        runner = subprocess.Popen(
            [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", str(out)], cwd=campaign.parent,
            env={**run_env(), "NCUCAMPAIGN_NSYS": str(NSYS), **knobs}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        logs = out / "camp" / "latest" / "logs" / "shared"
        while runner.poll() is None and not any("nsys export" in p.read_text() for p in logs.glob("trace-*.log")):
            time.sleep(0.01)  # the export written: its read begins
        time.sleep(0.3)  # within the read
        sent = time.monotonic()
        runner.send_signal(signal.SIGINT)
        runner.communicate(timeout=120)
        print(f"  Ctrl-C in the read of {knobs}: exit {runner.returncode}, {time.monotonic() - sent:.2f} s after it")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--floods", type=int, default=10)
    parser.add_argument("--storms", type=int, default=0)
    parser.add_argument("--early-kills", type=int, default=0)
    parser.add_argument("--aimed-kills", type=int, default=0)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--nsys", action="store_true", help="the discovery trace by the fake Nsight Systems")
    parser.add_argument("--hostile-exports", action="store_true", help="every damaged export of the fake nsys")
    args = parser.parse_args()
    TRACER["name"] = "nsys" if args.nsys else "ncu"
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="ncuc-reliability-") as folder:
        os.chdir(folder)
        if args.kills:
            kills(Path(folder), args.kills, rng)
        if args.aimed_kills:
            aimed_kills(Path(folder), args.aimed_kills, rng)
        if args.floods:
            floods(Path(folder), args.floods, rng)
        if args.storms:
            storms(Path(folder), args.storms, rng)
        if args.early_kills:
            early_kills(Path(folder), args.early_kills, rng)
        if args.hostile_exports:
            hostile_exports(Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
