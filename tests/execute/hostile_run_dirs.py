"""Hostile run directories over every reader (round 7, must show 2): a finished run on the fake ncu, copied and
damaged one way or several (paths out of the run, links out of it, programs named for readers to run, older records,
forged and damaged journal lines, truncated and retyped JSON, FIFOs, garbage reports), then read by summarize,
report, findings, compare, history, export and collect in this process. Every Python process of the reading (the
readers' report workers too) reports to an audit log (tests/execute/audit/sitecustomize.py) each file it opens
outside the run and each program it starts that is not this Python or this machine's ncu.

    python -m tests.execute.hostile_run_dirs --dirs 2000 [--seed 7] [--readers 3]

Prints the counts: readings, exit codes, exit 70, programs started, files opened outside, hangs. Run by
tests/execute/test_hostile_run_directories.py on a few dozen directories."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
AUDIT = Path(__file__).resolve().parent / "audit"
READERS: tuple[tuple[str, ...], ...] = (
    ("summarize",),
    ("summarize", "--format", "json"),
    ("report",),
    ("findings",),
    ("compare",),
    ("history",),
    ("export",),
    ("collect",),
)
HANG_S = 60
Mutator = Callable[[Path, random.Random, Path], None]


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data))


def _targets(run: Path) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = _json(run / "manifest.json")["targets"]
    return targets


def _edit(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = _json(run / "manifest.json")
    change(data)
    _write(run / "manifest.json", data)


def _one(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    record: dict[str, Any] = rng.choice(data["targets"])
    return record


def _reports(run: Path) -> list[Path]:
    """The run's reports that are files of its own (never written through a link an earlier mutation made)."""
    return [p for p in (run / "reports").rglob("*") if p.is_file() and not p.is_symlink()]


def report_outside(run: Path, rng: random.Random, outside: Path) -> None:
    depth = len(run.relative_to(outside.parent).parts) if run.is_relative_to(outside.parent) else 8
    forms = [str(outside / "secret.ncu-rep"), "../" * depth + f"{outside.name}/secret.ncu-rep", "/etc/passwd"]
    _edit(run, lambda data: _one(data, rng)["report"].update(path=rng.choice(forms)))


def log_outside(run: Path, rng: random.Random, outside: Path) -> None:
    _edit(run, lambda data: _one(data, rng).update(log=rng.choice([str(outside / "x.log"), "../../../etc/passwd"])))


def copy_outside(run: Path, rng: random.Random, outside: Path) -> None:
    _edit(run, lambda data: data["campaign"].update(copy_path=str(outside / "campaign.yaml")))


def link_out(run: Path, rng: random.Random, outside: Path) -> None:
    reports = _reports(run)
    if reports:
        victim = rng.choice(reports)
        victim.unlink()
        # decoys only, never a file of the machine: an early version of this harness wrote garbage through a link
        # to /etc/passwd (a mutation after this one followed it), and the machine lost its users' names
        victim.symlink_to(rng.choice([outside / "secret.ncu-rep", outside / "passwd", outside]))


def fifo_report(run: Path, rng: random.Random, outside: Path) -> None:
    reports = _reports(run)
    if reports:
        victim = rng.choice(reports)
        victim.unlink()
        os.mkfifo(victim)


def garbage_report(run: Path, rng: random.Random, outside: Path) -> None:
    reports = _reports(run)
    if reports:
        victim = rng.choice(reports)
        raw = victim.read_bytes()
        victim.write_bytes(rng.choice([b"", rng.randbytes(64), raw[: len(raw) // 2], raw[:100] + rng.randbytes(500)]))


def program_named(run: Path, rng: random.Random, outside: Path) -> None:
    evil = str(outside / "evil.sh")

    def change(data: dict[str, Any]) -> None:
        choice = rng.randrange(4)
        if choice == 0:
            data["ncu"]["path"] = evil
        for record in data["targets"]:
            argv = (record.get("obtained") or {}).get("split_argv") or []
            if argv and choice in (1, 3):
                argv[0] = evil
            if argv and choice in (2, 3):
                argv[3:3] = rng.choice([["--section-folder", str(outside / "rules")], ["--config-file", "on"]])

    _edit(run, change)


def older_record(run: Path, rng: random.Random, outside: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        record = _one(data, rng)
        for key in ("collects_sections", "launch_count", "metrics"):
            record.pop(key, None)
        value = rng.choice(["²", "9" * 5000, "-1", "", "٣", " 7", "1e3", "0x10", "7" * 19, "9" * 20])
        record["argv"] = ["ncu", "--launch-count", value, "--metrics", rng.choice(["a,b", "", ",,"]), "app"]

    _edit(run, change)


def journal_lines(run: Path, rng: random.Random, outside: Path) -> None:
    record = _one(_json(run / "manifest.json"), rng)
    forged = {**record, "status": "ok", "report": {**(record["report"] or {}), "path": str(outside / "secret.ncu-rep")}}
    lines = [
        "[" * 100_000 + "]" * 100_000,
        rng.randbytes(40).decode("latin-1"),
        json.dumps({"target": forged}),
        json.dumps({"manifest": {"ncu": {"path": str(outside / "evil.sh"), "version": "2025.3.1.0"}}}),
        json.dumps({"target": {"name": "ghost", "status": "ok"}}),
        json.dumps({"shared_run": {"name": "x"}, "at": 10**30}),
        json.dumps([1, 2, 3]),
        '{"target": ' * 3000,
    ]
    chosen = rng.sample(lines, rng.randint(1, 3))
    with (run / "manifest.journal").open("a", encoding="utf-8", errors="replace") as journal:
        journal.write("\n".join(chosen) + ("\n" if rng.random() < 0.7 else ""))


HOSTILE_VALUES: tuple[Any, ...] = (
    None, -1, 2**70, -(2**70), 1e308, "x" * 100_000, [], {}, "../../etc/passwd", "\x1b]0;pwned\x07", True, 0.5,
    "/etc/passwd", [[[[[]]]]], {"path": "/etc/passwd"},
)  # fmt: skip


def retyped(run: Path, rng: random.Random, outside: Path) -> None:
    data = _json(run / "manifest.json")
    holder: Any = data
    for _ in range(rng.randint(1, 6)):
        keys = (
            list(holder) if isinstance(holder, dict) else list(range(len(holder))) if isinstance(holder, list) else []
        )
        if not keys:
            break
        key = rng.choice(keys)
        if not isinstance(holder[key], dict | list) or rng.random() < 0.3:
            holder[key] = rng.choice(HOSTILE_VALUES)
            break
        holder = holder[key]
    _write(run / "manifest.json", data)


def truncated(run: Path, rng: random.Random, outside: Path) -> None:
    raw = (run / "manifest.json").read_bytes()
    (run / "manifest.json").write_bytes(raw[: rng.randrange(len(raw))])


def removed(run: Path, rng: random.Random, outside: Path) -> None:
    victim = run / rng.choice(["reports", "logs", "campaign.yaml", "plan.json", "reports/shared"])
    if victim.is_dir():
        shutil.rmtree(victim)
    elif victim.exists():
        victim.unlink()


def source_moved(run: Path, rng: random.Random, outside: Path) -> None:
    _edit(run, lambda data: data["campaign"].update(source=str(outside / "camp.yaml")))


MUTATORS: tuple[Mutator, ...] = (
    report_outside, log_outside, copy_outside, link_out, fifo_report, garbage_report, program_named, older_record,
    journal_lines, retyped, truncated, removed, source_moved,
)  # fmt: skip


def base_run(work: Path) -> Path:
    """A finished shared run of 20 launches of one kernel (read out of their union's report) on the fake ncu."""
    from tests.conftest import campaign_text, run_cli

    skips = list(range(20))
    text = campaign_text(
        f"- name: t{{launch_skip}}\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: {skips}\n"
    )
    (work / "camp.yaml").write_text(text)
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=work)
    if done.returncode != 0:
        raise SystemExit(f"the base run failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return (work / "runs" / "camp" / "latest").resolve()


def outside_folder(work: Path, base: Path) -> Path:
    """What a hostile run directory points at: a report, a program that leaves a mark, a folder of rules."""
    outside = work / "outside"
    (outside / "rules").mkdir(parents=True)
    shutil.copyfile(next((base / "reports" / "shared").glob("*.ncu-rep")), outside / "secret.ncu-rep")
    evil = outside / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {outside / 'PWNED'}\n")
    evil.chmod(0o755)
    (outside / "camp.yaml").write_text("application:\n  command: [sh, evil.sh]\ntargets: [{name: t0}]\n")
    (outside / "passwd").write_text("root:x:0:0:a decoy of /etc/passwd:/root:/bin/sh\n")
    return outside


def _mark(log: Path, line: str) -> None:
    """A line after each reading: what the audit lines above it came from."""
    with log.open("a", encoding="utf-8") as out:
        out.write(f"- {line}\n")


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang


def read_once(argv: list[str], cwd: Path) -> int | str:
    """One reader in this process: its exit code, or 'hang'."""
    from ncucampaign.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    except Hang:
        return "hang"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(here)


def argv_for(reader: tuple[str, ...], run: Path, base: Path) -> list[str]:
    if reader[0] in ("compare", "history"):
        return [*reader, str(base), str(run)]
    return [*reader, str(run)]


def fuzz(dirs: int, seed: int, readers: int, work: Path) -> dict[str, Any]:
    from tests.conftest import FAKE_NCU_DIR, fake_env

    env = fake_env()
    env["PYTHONPATH"] = os.pathsep.join([str(AUDIT), env["PYTHONPATH"]])
    os.environ.update(env)
    base = base_run(work)
    outside = outside_folder(work, base)
    log = work / "audit.log"
    os.environ.update(
        HOSTILE_AUDIT_LOG=str(log),
        HOSTILE_OUTSIDE=str(outside.resolve()),
        HOSTILE_PROGRAMS=os.pathsep.join(
            [os.path.realpath(sys.executable), str((FAKE_NCU_DIR / "ncu").resolve()), "ncu", "python3", "python"]
        ),
    )
    audit = _audit_module(AUDIT)
    sys.addaudithook(audit.hook)  # this process reports too (its workers through PYTHONPATH)
    rng = random.Random(seed)
    codes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    started = time.monotonic()
    for number in range(dirs):
        run = work / "runs" / "camp" / f"hostile-{number}"
        shutil.copytree(base, run, symlinks=True)
        applied = []
        audit._inside[0] = True  # the mutations' own reads and writes are not the readers'
        for mutator in rng.sample(MUTATORS, rng.choice([1, 1, 2, 3])):
            try:
                mutator(run, rng, outside)
            except (ValueError, OSError, KeyError, TypeError, IndexError, AttributeError):
                continue  # an earlier mutation left nothing for this one to change
            kinds[mutator.__name__] += 1
            applied.append(mutator.__name__)
        audit._inside[0] = False
        for reader in rng.sample(READERS, min(readers, len(READERS))):
            code = read_once(argv_for(reader, run, base), work)
            codes[f"{reader[0]}:{code}"] += 1
            _mark(log, f"after {' '.join(reader)} of {run.name} ({', '.join(applied)}): {code}")
        shutil.rmtree(run, ignore_errors=True)
    lines = _attributed(log.read_text().splitlines() if log.exists() else [])
    return {
        "dirs": dirs,
        "readings": sum(codes.values()),
        "seconds": round(time.monotonic() - started, 1),
        "exit_70": sum(n for key, n in codes.items() if key.endswith(":70")),
        "hangs": sum(n for key, n in codes.items() if key.endswith(":hang")),
        "programs_started": [line for line in lines if " program " in line],
        "opened_outside": [line for line in lines if " open " in line],
        "marked": (outside / "PWNED").exists(),
        "codes": dict(sorted(codes.items())),
        "mutations": dict(sorted(kinds.items())),
    }


def _attributed(lines: list[str]) -> list[str]:
    """The audit's lines, each with the reading it came from (the marker line after it)."""
    found, waiting = [], []
    for line in lines:
        if line.startswith("- "):
            found.extend(f"{what} [{line[2:]}]" for what in waiting)
            waiting = []
        else:
            waiting.append(line)
    return found + waiting


def _audit_module(folder: Path) -> Any:
    """The audit module, loaded from its file (another sitecustomize may have come first on this Python)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hostile_audit", folder / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dirs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--readers", type=int, default=3, help="readers per directory (of the 8)")
    parser.add_argument("--json", type=Path, default=None, help="write the counts here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-runs-") as folder:
        found = fuzz(args.dirs, args.seed, args.readers, Path(folder))
    text = json.dumps(found, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    bad = found["exit_70"] or found["hangs"] or found["programs_started"] or found["opened_outside"] or found["marked"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
