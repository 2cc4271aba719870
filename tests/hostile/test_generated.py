"""Hostile inputs, generated: campaign files (valid, broken, mutated), manifests and report
files (truncated, bit-flipped). Every case must end with exit 0, 1, 2 or 3 (never 70, never a
traceback), name file:line where a problem has a line, and stay within bounds of time and memory.

Campaign and manifest cases run the CLI in this process (fast) under an address-space limit;
report cases run in a worker process, since NVIDIA's reader is native code. CI (CI=true) uses a
fixed seed so that every run checks the same cases; `HOSTILE_EXAMPLES=N` asks for more.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncucampaign.cli import main
from ncucampaign.spec.keys import OPTION_KEYS
from tests.conftest import FAKE_APP, FIXTURES, ROOT, fake_env, run_cli, signal_handlers_restored

pytestmark = pytest.mark.slow  # runs the CLI end to end

CASES: Counter[str] = Counter()  # reported at the end of the run (conftest.py)
EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "150"))
CASE_SECONDS = 20.0  # a guard against runaway cases, far above what any case takes
MEMORY_HEADROOM = 1 << 30  # 1 GiB above what the test process already uses
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
EXAMPLE = (ROOT / "campaigns" / "decode.yaml").read_text()
LOCATED = re.compile(r"^(?P<file>.+?):(?:(?P<line>\d+):)? (?P<path>\S+): ")


@contextlib.contextmanager
def bounded_memory() -> Iterator[None]:
    """An address-space limit 1 GiB above the current size: a runaway case fails with MemoryError."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (size + MEMORY_HEADROOM, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), bounded_memory(), signal_handlers_restored():
        code = main(list(args))
    assert time.monotonic() - started < CASE_SECONDS, f"{args} took {time.monotonic() - started:.1f} s"
    return code, out.getvalue(), err.getvalue()


def check(code: int, err: str, file: Path, kind: str) -> None:
    CASES[kind] += 1
    assert code in (0, 1, 2, 3), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert "\x1b" not in err
    for line in err.splitlines():
        located = LOCATED.match(line)
        if located and located["file"] == str(file) and located["path"] != "(top" and kind == "campaign":
            # a problem under a key path always names its line
            assert located["line"], line


# --- campaign files -------------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["regex:.*(", "decode_step/", "::8", "yes:2:3", "10m", "-1", "SpeedOfLight", "a,b", "'q'"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from([*OPTION_KEYS, "name", "command", "matrix", "description", "lunch_count", "nvtx-include", ""])
targets = st.dictionaries(keys, values, max_size=6)
documents = st.fixed_dictionaries(
    {
        "application": st.one_of(st.fixed_dictionaries({"command": values}), values),
        "targets": st.lists(targets, max_size=4),
    },
    optional={
        "defaults": st.dictionaries(keys, values, max_size=4),
        "name": values,
        "runs_dir": values,
        "bogus": values,
    },
)


@SETTINGS
@given(document=documents)
def test_generated_campaigns(tmp_path_factory: pytest.TempPathFactory, document: dict) -> None:
    path = tmp_path_factory.mktemp("c") / "camp.yaml"
    try:
        path.write_text(yaml.safe_dump(document, allow_unicode=True))
    except (yaml.YAMLError, UnicodeEncodeError):
        return  # not representable in YAML
    for command in ("validate", "plan"):
        code, _, err = cli(command, str(path))
        check(code, err, path, "campaign")


TOKENS = [
    "&a ",
    "*a",
    "[",
    "]",
    "{",
    "}",
    "\t",
    ": ",
    "- ",
    "!!python/object:os.system ",
    "\\e",
    "\x00",
    "\x07",
    "'",
    '"',
    "\n",
    "9" * 5000,
]


@SETTINGS
@given(seed=st.integers(min_value=0, max_value=2**32), edits=st.integers(min_value=1, max_value=12))
def test_mutated_example_campaigns(tmp_path_factory: pytest.TempPathFactory, seed: int, edits: int) -> None:
    chance = random.Random(seed)
    text = EXAMPLE
    for _ in range(edits):
        at = chance.randrange(len(text) + 1)
        action = chance.randrange(4)
        if action == 0:
            text = text[:at] + chance.choice(TOKENS) + text[at:]
        elif action == 1:
            text = text[:at] + text[at + chance.randrange(1, 40) :]
        elif action == 2:
            text = text[:at]
        elif text:
            text = text[:at] + chance.choice(text) * chance.randrange(1, 3) + text[at:]
    folder = tmp_path_factory.mktemp("m")
    path = folder / "camp.yaml"
    raw = text.encode("utf-8", "surrogateescape")
    if chance.random() < 0.1:  # bytes that are not UTF-8
        raw = raw[: len(raw) // 2] + bytes([0xFF, 0xFE]) + raw[len(raw) // 2 :]
    path.write_bytes(raw)
    for command in ("validate", "plan"):
        code, _, err = cli(command, str(path))
        check(code, err, path, "campaign")


# --- manifests ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_manifest(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A manifest of a real (fake-ncu) run, with results."""
    folder = tmp_path_factory.mktemp("run")
    campaign = folder / "camp.yaml"
    campaign.write_text(
        f"application: {{command: [{json.dumps(sys.executable)}, {json.dumps(str(FAKE_APP))}]}}\n"
        "defaults: {sections: SpeedOfLight, launch_count: 1, retries: 0, stop_grace: 2}\n"
        "targets:\n  - {name: a, kernel_name: rmsnorm_kernel}\n  - {name: b, kernel_name: typo_kernel}\n"
    )
    assert run_cli("run", str(campaign), "--out", "runs", cwd=folder, env=fake_env()).returncode == 1
    return json.loads(next((folder / "runs" / "camp").glob("2*/manifest.json")).read_text())


def mutate_json(data: object, chance: random.Random, depth: int = 0) -> object:
    if isinstance(data, dict) and data:
        key = chance.choice(list(data))
        action = chance.randrange(5)
        copy = dict(data)
        if action == 0:
            del copy[key]
        elif action == 1:
            copy[key] = chance.choice([None, -1, 10**40, "x", [], {}, 1.5, True, "\x1b[2J", "9" * 50])
        elif action == 2:
            copy[key] = mutate_json(copy[key], chance, depth + 1)
        elif action == 3:
            copy["unexpected"] = 1
        else:
            copy[key] = [copy[key]]
        return copy
    if isinstance(data, list) and data:
        copy = list(data)
        index = chance.randrange(len(copy))
        copy[index] = mutate_json(copy[index], chance, depth + 1) if chance.random() < 0.7 else None
        return copy
    return chance.choice([None, "", -5, 10**30, "\x07", [data], {"x": data}])


@SETTINGS
@given(
    seed=st.integers(min_value=0, max_value=2**32), edits=st.integers(min_value=1, max_value=6), raw=st.integers(0, 9)
)
def test_mutated_manifests(
    tmp_path_factory: pytest.TempPathFactory, real_manifest: dict, seed: int, edits: int, raw: int
) -> None:
    chance = random.Random(seed)
    data: object = real_manifest
    for _ in range(edits):
        data = mutate_json(data, chance)
    text = json.dumps(data)
    if raw == 0:
        text = text[: chance.randrange(len(text))]
    elif raw == 1:
        text = '{"manifest_version": 1, "x": ' + "[" * 50000 + "]" * 50000 + "}"
    elif raw == 2:
        text = text.replace('"manifest_version": 1', '"manifest_version": ' + "1" * 5000)
    run = tmp_path_factory.mktemp("r")
    (run / "manifest.json").write_bytes(text.encode() if raw != 3 else text.encode()[:-10] + b"\xff\xfe}")
    for command in (
        ("summarize", str(run)),
        ("summarize", str(run), "--format", "csv"),
        ("compare", str(run), str(run)),
        ("report", str(run), "-o", str(run / "r.html")),
    ):
        code, _, err = cli(*command)
        check(code, err, run / "manifest.json", "manifest")


# --- reports --------------------------------------------------------------------------------------------

WORKER = """
import contextlib, io, json, sys
from ncucampaign.cli import main
for path in sys.argv[1:]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["summarize", path])
    print(json.dumps([path, code, err.getvalue()]), flush=True)
"""


def test_damaged_reports(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")
    chance = random.Random(0 if os.environ.get("CI") else time.time_ns())
    sources = sorted((FIXTURES / "reports").glob("*.ncu-rep"))
    files = []
    for number in range(max(EXAMPLES // 3, 20)):
        data = bytearray(chance.choice(sources).read_bytes())
        if number % 2:
            data = data[: chance.randrange(len(data))]
        else:
            for _ in range(chance.randrange(1, 50)):
                data[chance.randrange(len(data))] ^= 1 << chance.randrange(8)
        path = tmp_path / f"r{number}.ncu-rep"
        path.write_bytes(bytes(data))
        files.append(path)
    done = subprocess.run(
        [sys.executable, "-c", WORKER, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=CASE_SECONDS * len(files),
        env=fake_env(),
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY)),
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, (
        done.returncode,
        done.stderr[-2000:],
        files[len(results)] if len(results) < len(files) else "",
    )
    assert len(results) == len(files)
    for path, code, err in results:
        check(code, err, Path(path), "report")
