"""A fake `ncu` for tests: reproduces what docs/ncu-behaviour.md states for ncu 2025.3.1.

- It parses ncu's command line (unknown options, unknown sections, bad regexes and --nvtx-include
  without --nvtx fail with ncu's own ==ERROR== text and exit code 1).
- It launches the application as its child, in its own process group (like ncu), and reads the
  kernel launches and NVTX pushes/pops the fake application reports on a pipe (fake_app.py).
- Kernel name (exact / regex:, matched against the function name as ncu's default
  --kernel-name-base function does), --kernel-id ::[regex:]NAME:INVOCATIONS (the Nth launch of each
  function among those that pass the NVTX filter, as measured on the H200), --launch-skip, --launch-skip-before-match, --launch-count, --kill,
  NVTX push/pop includes and excludes ('A/', 'A/*/B', 'A]', '[A', regex:), --range-filter ::N and
  --profile-from-start off select launches; each profiled one prints `==PROF== Profiling "k"`.
- Exit codes: 0 when nothing was profiled (plus `No kernels were profiled.` and `Available Kernels:`),
  the application's code when it fails (with `The application returned an error code (N).`).
- A `collective` launch (fake_app.py --ranks N) profiled under kernel replay hangs as a collective
  waiting for its peers does, with ncu's warning (FAKE_NCU_HANG_WARN_S).
- SIGINT: shuts the application down, writes the report, then dies of SIGINT (as real ncu did on
  the H200). SIGTERM: dies at once and leaves the application running (an orphan), as observed.
- `slower REGEX FACTOR` on the pipe (fake_app.py --slower REGEX=FACTOR, a code change that slows a kernel): each
  launch of a kernel whose function REGEX matches lasts FACTOR times as long, in its report and in listings.
- The report is a copy of a real fixture report from $FAKE_NCU_REPORTS with the same number of
  results (1, 2, 3, 4, 5 or 8); for other counts the largest of those below it, its results repeated in
  turn up to the count (with_results), so that a report holds a result for every launch profiled.

- `--import R`: re-filters a report it wrote (kernel name, NVTX include/exclude, --launch-skip,
  --launch-count) into `-o` (`==ERROR== No results were matched to export` when nothing matches) or
  lists it with `--page raw --csv` in ncu's column layout. What a report holds is kept beside the
  fake's state, by the report file's inode (renames and hard links keep it).
- Kernel names in a listing follow `--print-kernel-base`: `function`, `mangled` (a made-up symbol,
  the same in every report) or `demangled` (the default), which ncu simplifies by default
  (`--rename-kernels on`) depending on the other kernels the report holds, as measured
  (docs/ncu-behaviour.md, "Launch identity"): here, a report of at most 3 distinct kernels drops the
  `at::` qualifiers inside template arguments; `--rename-kernels off` lists the names as launched.

Test knobs: FAKE_NCU_IGNORE_SIGINT=1 (a stuck ncu), FAKE_NCU_SECONDS_PER_KERNEL (slow replay;
FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL: a one-metric pass's, as a discovery trace's, where it differs),
FAKE_NCU_FIXTURE=<name> (write that fixture report whatever was profiled), FAKE_NCU_TIMELINE=<file>,
FAKE_NCU_TRUNCATE=<fraction> (write only that fraction of the report, as a killed or disk-full ncu would),
FAKE_NCU_HANG_WARN_S=<seconds>|never (when a hanging collective's replay warning is printed; default 0.2),
FAKE_NCU_NO_LISTINGS=1 (--list-sections and --list-sets fail: what the installed ncu lists is unknown),
FAKE_NCU_IMPORT_HANG=<file> (while it exists, every --import hangs, after appending its pid to <file>.pids),
FAKE_NCU_GARBLE_LISTING=N (every Nth launch row of a --page raw --csv listing cut in half),
FAKE_NCU_TRACE_LISTING=empty|renumbered|odd-grid (a listing of a discovery trace's report, one whose
name holds `trace-`, lists no launch, numbers its launches from 5, or gives a grid that is no number),
FAKE_NCU_FAIL_ON=<regex> (profiling with more than one pass a kernel it matches, or with a --section it matches, ncu
fails: `==ERROR== Failed to profile "<kernel>" in process <pid>`, the application killed, exit 1; a one-metric
pass, as a trace, goes through),
FAKE_NCU_COUNTERS=denied|library (no access to the GPU's performance counters: ERR_NVGPUCTRPERM, or
the counter library failing to load, as in some containers; the application runs on, ncu exits 1),
FAKE_NCU_VERSION=<version> (default 2025.3.1.0): what --version prints, and what changes with the
release (docs/ncu-behaviour.md, "Versions"): the options 2026.1 and 2026.2 added (accepted and listed
by --help), and from 2026.3 `-o NAME` writes NAME.ncu-repz, zstd-compressed (the 2026.3 reader reads
it). `-o NAME.ncu-rep` writes exactly that name (measured on 2025.3.1), `-o NAME.rep` NAME.rep.ncu-rep.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

# csv, io, json, shutil, subprocess and zlib are imported where used, or not at all: the suite starts this fake
# about 3,000 times, and those imports were half of each start (docs/testing.md, "Where the time goes").

HERE = Path(__file__).resolve().parent
OPTIONS_TSV = HERE.parent.parent / "ncucampaign" / "spec" / "data" / "ncu-2025.3.1-options.tsv"
SECTIONS = {
    "ComputeWorkloadAnalysis",
    "InstructionStats",
    "LaunchStats",
    "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Chart",
    "MemoryWorkloadAnalysis_Tables",
    "Occupancy",
    "SchedulerStats",
    "SourceCounters",
    "SpeedOfLight",
    "WarpStateStats",
    "WorkloadDistribution",
    "PmSampling",
}
SETS = {"basic": 10, "detailed": 21, "full": 37, "nvlink": 3, "pmsampling": 2, "roofline": 12}
# Options NVIDIA added after 2025.3.1 (docs/ncu-behaviour.md, "Versions"): flag -> (release, takes a value).
ADDED = {
    "--communicator": ((2026, 1), True),
    "--communicator-tcp-num-peers": ((2026, 1), True),
    "--communicator-tcp-hostname": ((2026, 1), True),
    "--communicator-tcp-port": ((2026, 1), True),
    "--communicator-shmem-num-peers": ((2026, 1), True),
    "--lockstep-kernel-launch": ((2026, 1), False),
    "--lockstep-nvtx-include": ((2026, 1), True),
    "--lockstep-nvtx-exclude": ((2026, 1), True),
    "--metric-distribution-groups": ((2026, 1), True),
    "--process-id": ((2026, 2), True),
}
FIXTURE_BY_COUNT = {1: "name_exact", 2: "demangled", 3: "count3", 4: "count4", 5: "count5", 8: "rangefilter_multi"}


class Shutdown(Exception):
    pass


COLLECTIVE = re.compile(r"nccl|nvshmem", re.IGNORECASE)
REPLAY_WARNING = (
    "==WARNING== Launching the workload is taking more time than expected. If this continues to hang, terminate "
    "the profile and re-try by profiling the range of all related launches using '--replay-mode range'."
)


class Child:
    """The application, started as ncu starts it: its stdout and stderr ncu's own, the channel's write end
    (`keep`) the only descriptor it inherits besides those. os.posix_spawnp where subprocess.Popen was: the same
    process, without the import of subprocess (a third of this fake's start)."""

    def __init__(self, argv: list[str], env: dict[str, str], keep: int) -> None:
        os.set_inheritable(keep, True)
        self.pid = os.posix_spawnp(argv[0], argv, env)
        self.returncode: int | None = None

    def kill(self) -> None:
        if self.returncode is None:  # not waited for: there, if only as a zombie
            os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        """Its exit code, or minus the signal that ended it (as Popen.wait)."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def which(name: str) -> str | None:
    """The first executable `name` on PATH (shutil.which, without importing shutil)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def replay_collective(kernel: str, child: Child) -> int:
    """A collective (a `collective` line: it has peers) replayed alone waits for them forever
    (docs/ncu-behaviour.md, "Multi-rank jobs"): ncu's progress stops at 0%, its warning follows, and
    SIGINT ends it with 'Failed to profile' and the application's error code 9."""
    print(f'==PROF== Profiling "{kernel}": 0%..', end="", flush=True)
    warn_after = os.environ.get("FAKE_NCU_HANG_WARN_S", "0.2")
    try:
        if warn_after != "never":
            time.sleep(float(warn_after))
            print("\n" + REPLAY_WARNING, flush=True)
        while True:
            time.sleep(3600)
    except Shutdown:
        shown = kernel if len(kernel) <= 30 else kernel[:29] + "..."
        print(f'\n==ERROR== Failed to profile "{shown}" in process {child.pid}', flush=True)
        child.kill()
        child.wait()
        print("==ERROR== The application returned an error code (9).", flush=True)
        return 9


def fail(message: str, code: int = 1) -> None:
    print(f"==ERROR== {message}", flush=True)
    sys.exit(code)


def version() -> str:
    return os.environ.get("FAKE_NCU_VERSION", "2025.3.1.0")


def release() -> tuple[int, int]:
    year, minor = version().split(".")[:2]
    return int(year), int(minor)


def option_table() -> dict[str, tuple[str, bool]]:
    """Spelling -> (long name, takes a value): 2025.3.1's --help and what later releases added."""
    table: dict[str, tuple[str, bool]] = {}
    for line in OPTIONS_TSV.read_text().splitlines():
        if line and not line.startswith("#"):
            flag, short, kind = line.split("\t")
            table[flag] = (flag, kind == "arg")
            if short:
                table["-" + short] = (flag, kind == "arg")
    for flag, (since, takes_value) in ADDED.items():
        if release() >= since:
            table[flag] = (flag, takes_value)
    return table


def print_help() -> int:
    """ncu's --help layout: '  -o [ --export ] arg   ...' or '  --nvtx   ...' per option."""
    print("usage: ncu [options] [program] [program-arguments]\n\nGeneral Options:")
    shorts = {flag: name for name, (flag, _) in option_table().items() if not name.startswith("--")}
    for name, (flag, takes_value) in option_table().items():
        if name.startswith("--"):
            spelled = f"-{shorts[flag][1:]} [ {flag} ]" if flag in shorts else flag
            print(f"  {spelled}{' arg' if takes_value else ''}{' ' * 8}(fake ncu {version()})")
    return 0


def report_path(name: str) -> Path:
    """Where `-o NAME` writes: NAME as given when it ends with a report suffix this release knows,
    else NAME plus its default suffix."""
    name = name.replace("%%", "%")
    suffixes = (".ncu-rep", ".ncu-repz") if release() >= (2026, 3) else (".ncu-rep",)
    if name.endswith(suffixes):
        return Path(name)
    return Path(name + (".ncu-repz" if release() >= (2026, 3) else ".ncu-rep"))


def parse(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    table = option_table()
    options: dict[str, list[str]] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return options, argv[index + 1 :]
        if not token.startswith("-"):
            return options, argv[index:]
        name, has_value, value = token.partition("=")
        if name not in table:
            fail(f"unrecognised option '{name}'. Use --help for further details.")
        flag, takes_value = table[name]
        if takes_value and not has_value:
            index += 1
            if index >= len(argv):
                fail(f"the required argument for option '{flag}' is missing. Use --help for further details.")
            value = argv[index]
        options.setdefault(flag, []).append(value if takes_value else "")
        index += 1
    return options, []


def state_file(report: Path) -> Path:
    import tempfile  # only where no test set FAKE_NCU_STATE (tests/conftest.py does): its own TMPDIR, not /tmp

    folder = Path(os.environ.get("FAKE_NCU_STATE") or Path(tempfile.gettempdir()) / f"fake-ncu-state-{os.getuid()}")
    folder.mkdir(parents=True, exist_ok=True)
    info = report.stat()  # a reused inode number with other contents is another report
    return folder / f"{info.st_dev}-{info.st_ino}-{info.st_size}-{info.st_mtime_ns}.json"


def register(report: Path, launches: list[dict]) -> None:
    import json

    state_file(report).write_text(json.dumps(launches))  # after the report is complete: its final mtime


def grid_of(kernel: str) -> str:
    return f"({len(kernel) % 7 + 1}, 1, 1)"


def write_report(report: Path, launches: list[dict]) -> None:
    """A real fixture report with as many results (the largest with fewer, its results repeated up to the count),
    and what it holds."""
    fitting = max(n for n in FIXTURE_BY_COUNT if n <= len(launches))
    fixture = os.environ.get("FAKE_NCU_FIXTURE") or FIXTURE_BY_COUNT[fitting]
    source = Path(os.environ.get("FAKE_NCU_REPORTS", "")) / f"{fixture}.ncu-rep"
    truncate = os.environ.get("FAKE_NCU_TRUNCATE")  # what a killed or disk-full ncu leaves
    data = source.read_bytes() if fixture and source.is_file() else b""
    if data and not os.environ.get("FAKE_NCU_FIXTURE") and len(launches) > fitting:
        data = with_results(data, len(launches))
    scales = [float(launch.get("scale", 1.0)) for launch in launches]
    if data and any(scale != 1.0 for scale in scales):
        data = slowed(data, scales, report)
    if data and truncate:
        report.write_bytes(data[: int(len(data) * float(truncate))])
    elif data and report.name.endswith(".ncu-repz"):
        import site  # the fakes start without site (tests/conftest.py, PYTHON_SHIM): the venv's packages

        site.main()
        import zstandard  # what ncu 2026.3 compresses its reports with

        report.write_bytes(zstandard.ZstdCompressor().compress(data))
    elif data:
        report.write_bytes(data)
    else:
        report.write_bytes(b"fake ncu report placeholder\n")
    register(report, launches)


def with_results(data: bytes, count: int) -> bytes:
    """A report's bytes with `count` results: its own, then its result blocks again in turn. A report is "NVR\\0", a
    size-prefixed file header, then blocks, each a size-prefixed header (protobuf: field 2 the number of results
    it holds, field 5 its payload's size) and the payload; appending a result block adds a result (ncu_report reads
    them in file order), as real exports of 3, 4 and 5 results differ (tests/fixtures/cases.tsv)."""
    at = 8 + int.from_bytes(data[4:8], "little")
    blocks = []  # (results, bytes)
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "little")
        fields = protobuf_varints(data[at + 4 : at + 4 + size])
        end = at + 4 + size + fields.get(5, 0)
        blocks.append((fields.get(2, 0), data[at:end]))
        at = end
    results = [block for held, block in blocks if held]
    last = max(i for i, (held, _) in enumerate(blocks) if held)
    extra = [results[i % len(results)] for i in range(count - len(results))]
    kept = [block for _, block in blocks]
    return data[: 8 + int.from_bytes(data[4:8], "little")] + b"".join(kept[: last + 1] + extra + kept[last + 1 :])


def slowed(data: bytes, scales: list[float], scratch: Path) -> bytes:
    """A report's bytes with result i's gpu__time_duration (.sum, .avg, .min, .max: one launch's, all one value)
    times scales[i]: each result is a block of its own in every fixture, its duration an 8-byte double there
    (ncu_report reads the values; `scratch` is where the unscaled report is written for it)."""
    import site  # the fakes start without site (tests/conftest.py, PYTHON_SHIM): the venv's packages
    import struct

    site.main()
    import ncu_report

    scratch.write_bytes(data)
    actions = ncu_report.load_report(str(scratch)).range_by_idx(0)
    durations = [
        actions.action_by_idx(i).metric_by_name("gpu__time_duration.sum").value() for i in range(actions.num_actions())
    ]
    at = 8 + int.from_bytes(data[4:8], "little")
    out, result = [data[:at]], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "little")
        fields = protobuf_varints(data[at + 4 : at + 4 + size])
        end = at + 4 + size + fields.get(5, 0)
        block = data[at:end]
        if fields.get(2, 0) == 1 and result < len(scales) and scales[result] != 1.0:
            value = durations[result]
            block = block.replace(struct.pack("<d", value), struct.pack("<d", float(round(value * scales[result]))))
        result += 1 if fields.get(2, 0) else 0
        out.append(block)
        at = end
    return b"".join(out)


def protobuf_varints(message: bytes) -> dict[int, int]:
    """The varint fields of a protobuf message (field number -> value); the others skipped."""
    fields, at = {}, 0

    def varint() -> int:
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = message[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(message):
        key = varint()
        kind = key & 7
        if kind == 0:
            fields[key >> 3] = varint()
        elif kind == 2:
            length = varint()  # (read first: varint() moves `at`)
            at += length
        elif kind == 1:
            at += 8
        elif kind == 5:
            at += 4
        else:
            break
    return fields


def selected(options: dict[str, list[str]], launches: list[dict]) -> list[dict]:
    kernel = one(options, "--kernel-name")
    includes, excludes = options.get("--nvtx-include", []), options.get("--nvtx-exclude", [])
    picked = []
    for number, launch in enumerate(launches):
        launch = {**launch, "id": number}  # ncu lists a result by its ID in the imported report
        name, stack = launch["kernel"], launch["nvtx"]
        if kernel and kernel.startswith("regex:") and not re.search(kernel[len("regex:") :], function_of(name)):
            continue
        if kernel and not kernel.startswith("regex:") and function_of(name) != kernel:
            continue
        if includes and not any(nvtx_matches(e, stack) for e in includes):
            continue
        if any(nvtx_matches(e, stack) for e in excludes):
            continue
        picked.append(launch)
    skip = int(one(options, "--launch-skip", "0") or 0)
    count = one(options, "--launch-count")
    return picked[skip : skip + int(count)] if count is not None else picked[skip:]


def import_report(options: dict[str, list[str]]) -> int:
    hang = os.environ.get("FAKE_NCU_IMPORT_HANG")  # while this file exists, an import hangs
    if hang and os.path.exists(hang):
        with open(hang + ".pids", "a") as handle:
            handle.write(f"{os.getpid()}\n")
        while os.path.exists(hang):
            time.sleep(0.1)
    import csv
    import io
    import json

    source = Path(one(options, "--import") or "")
    if not source.is_file():
        fail(f"Could not open report file '{source}'.")
    try:
        launches = json.loads(state_file(source).read_text())
    except OSError:
        fail(f"fake ncu: no record of what {source} holds")
    picked = selected(options, launches)
    export = one(options, "--export")
    if export:
        if not picked:
            fail("No results were matched to export")
        report = report_path(export)
        for launch in picked:
            print(f'==PROF== Exported launch "{launch["kernel"]}" in process {launch["pid"]}', flush=True)
        write_report(report, [{k: v for k, v in launch.items() if k != "id"} for launch in picked])
        print(f"==PROF== Report: {report}", flush=True)
        return 0
    if one(options, "--page") == "raw" and "--csv" in options:
        columns = [
            "ID",
            "Process ID",
            "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
            "Kernel Name",
            "Block Size",
            "Grid Size",
            "gpu__time_duration.sum",
        ]
        buffer = io.StringIO()
        out = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
        distinct = len({launch["kernel"] for launch in launches})  # in the whole report
        damaged = os.environ.get("FAKE_NCU_TRACE_LISTING", "") if "trace-" in source.name else ""
        picked = [] if damaged == "empty" else picked
        out.writerow(columns)
        out.writerow(["", "", "", "", "", "", "ns"])
        for launch in picked:
            ranges = "".join(f'  "{listed_range(name)}"' for name in launch["nvtx"])
            nvtx = f"{launch['pid']}{ranges} " if ranges else ""
            name = listed_name(launch["kernel"], options, distinct)
            grid = "(wide, 1, 1)" if damaged == "odd-grid" else grid_of(launch["kernel"])
            ident = launch["id"] + 5 if damaged == "renumbered" else launch["id"]
            duration = round(duration_of(launch["kernel"]) * launch.get("scale", 1.0))
            out.writerow([ident, launch["pid"], nvtx, name, "(128, 1, 1)", grid, duration])
        sys.stdout.write(garble(buffer.getvalue()))
    return 0


def garble(listing: str) -> str:
    """FAKE_NCU_GARBLE_LISTING=N: every Nth launch row cut in half, as a broken pipe or a crafted ncu might."""
    every = int(os.environ.get("FAKE_NCU_GARBLE_LISTING") or 0)
    if not every:
        return listing
    lines = listing.splitlines(keepends=True)
    for index in range(2 + every - 1, len(lines), every):
        lines[index] = lines[index][: len(lines[index]) // 2] + "\n"
    return "".join(lines)


def listed_name(kernel: str, options: dict[str, list[str]], distinct: int) -> str:
    """A kernel as a listing names it (--print-kernel-base, --rename-kernels); `distinct`: how many
    distinct kernels the report holds."""
    base = one(options, "--print-kernel-base", "demangled")
    if base == "function":
        return function_of(kernel)
    if base == "mangled":
        return mangled_of(kernel)
    renames = (one(options, "--rename-kernels", "on") or "on").lower() in ("on", "yes", "1", "true")
    if renames and distinct <= 3 and "<" in kernel:
        cut = kernel.index("<")
        return kernel[:cut] + kernel[cut:].replace("at::", "")
    return kernel


def mangled_of(kernel: str) -> str:
    """A made-up symbol for a demangled name: the name itself when it is not C++ (extern "C", Triton),
    else `_Z<length><function>I<hash>E`, one per demangled name."""
    if not any(mark in kernel for mark in "<(: "):
        return kernel
    import zlib

    function = function_of(kernel)
    digest = format(zlib.crc32(kernel.encode()), "08x")
    return f"_Z{len(function)}{function}I{digest}E"


# What a launch lasts, in ns, by kernel family: the GEMMs and attention hold most of the GPU time, as
# on the H200 (a 2.6 us rmsnorm beside GEMMs of tens of us).
DURATIONS_NS = (("nvjet", 21_000), ("flash", 14_000), ("rmsnorm", 2_600))


def duration_of(kernel: str) -> int:
    return next((ns for part, ns in DURATIONS_NS if part in kernel), 1_000)


def function_of(kernel: str) -> str:
    """The function name of a demangled kernel name (ncu's --kernel-name-base function): no return
    type, no template arguments or parameters, no namespaces."""
    name = kernel.removeprefix("void ")
    depth, kept = 0, []
    for char in name:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif depth == 0:
            kept.append(char)
    return "".join(kept).split("::")[-1].strip()


def parse_kernel_id(value: str | None):  # a fake's: (name test, invocation regex) or None
    """ctx:stream:[regex:]name:invocation; contexts and streams are not simulated (one of each)."""
    if value is None:
        return None
    parts = value.split(":")
    if len(parts) == 5 and parts[2] == "regex":
        pattern = re.compile(parts[3])
        return (lambda name: pattern.search(name) is not None), parts[4]
    if len(parts) != 4:
        fail(f"the argument for option '--kernel-id' is invalid ({value})")
    return (lambda name: not parts[2] or name == parts[2]), parts[3] or ".*"


def one(options: dict[str, list[str]], flag: str, default: str | None = None) -> str | None:
    return options.get(flag, [default])[-1]


def listed_range(name: str) -> str:
    """A range as ncu 2025.3.1 lists it in the push/pop column: one pushed as DOMAIN@name is of that domain, its
    name repeated as a registered message, as CUB's CCCL ranges are (tests/fixtures/zoo/cccl)."""
    if "@" in name:
        domain, _, text = name.rpartition("@")
        return f"{domain}:{text}:none:none:none:none:REGISTERED:{text}"
    return f"<default domain>:{name}:none:none:none:none:none:none"


def nvtx_matches(expression: str, stack: list[str]) -> bool:
    """Push/pop expressions only; a bare name is a start/end expression and never matches these. Each domain
    has a stack of its own: an expression matches the ranges of its domain (DOMAIN@, else the default)."""
    use_regex = expression.startswith("regex:")
    body = expression[len("regex:") :] if use_regex else expression
    domain = ""
    if "@" in body:
        domain, body = body.split("@", 1)
    stack = [n.rpartition("@")[2] for n in stack if n.rpartition("@")[0] == domain]
    top = body.endswith("]")
    bottom = body.startswith("[")
    body = body.strip("[]")
    if "/" not in body and not (top or bottom):
        return False
    parts = [p for p in body.split("/") if p]

    def same(pattern: str, name: str) -> bool:
        return re.fullmatch(pattern, name) is not None if use_regex else pattern == name

    position = 0
    last = -1
    for part in parts:
        if part in ("*", "+"):
            continue
        while position < len(stack) and not same(part, stack[position]):
            position += 1
        if position == len(stack):
            return False
        if last == -1 and bottom and position != 0:
            return False
        last = position
        position += 1
    return not top or last == len(stack) - 1


PROBES = ("--version", "--help", "-h", "--list-sections", "--list-sets")  # ask ncu about itself: no GPU


def timeline(event: str) -> None:
    """FAKE_NCU_TIMELINE: append '<event> <time> <CUDA_VISIBLE_DEVICES>' (concurrency tests); not for
    the probes, which run whenever the cache of what the installed ncu lists is cold."""
    path = os.environ.get("FAKE_NCU_TIMELINE")
    if path and not any(arg in PROBES for arg in sys.argv[1:]):
        with open(path, "a") as handle:
            handle.write(f"{event} {time.time()} {os.environ.get('CUDA_VISIBLE_DEVICES', '-')}\n")


# reference.md 8.2, as printed by ncu 2025.3.1
COUNTER_ERRORS = {
    "denied": "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
    "Counters on the target device 0. For instructions on enabling permissions and to get more information see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
    "library": "==ERROR== Failed to initialize the profiler: LibraryNotLoaded",
}


def main() -> int:
    timeline("start")
    try:
        return profile()
    finally:
        timeline("end")


def config_args(argv: list[str]) -> list[str]:
    """What ncu's config file adds before the command line (NVIDIA's CLI reference, "config file"):
    `config.ncu-cfg` from the working directory, else `$HOME/.config/NVIDIA Corporation/`, or
    --config-file-path; its [Launch-and-attach] section when profiling, [Import] when importing; lines
    `--option = value` or `--flag`. None with --config-file off."""
    options, app = parse(argv)
    if (one(options, "--config-file", "on") or "on").lower() in ("off", "no", "0", "false"):
        return []
    home = Path(os.environ.get("HOME", "/")) / ".config" / "NVIDIA Corporation" / "config.ncu-cfg"
    found = [Path(p) for p in options.get("--config-file-path", [])] or [Path("config.ncu-cfg"), home]
    path = next((p for p in found if p.is_file()), None)
    if path is None:
        return []
    if app and "--import" not in options:  # profiling: real ncu 2025.3.1 says so first (docs/ncu-behaviour.md)
        print(f'==PROF== Using config file "{path.absolute()}"', flush=True)
    wanted = "import" if "--import" in options else "launch-and-attach"
    words, active = [], False
    for line in path.read_text().splitlines():
        line = line.split(";", 1)[0].strip()
        if line.startswith("["):
            active = wanted in [part.strip().lower() for part in line.strip("[]").split(",")]
        elif line and active:
            name, _, value = (part.strip() for part in line.partition("="))
            words += [name, value] if value else [name]
    return words


def profile() -> int:
    argv = sys.argv[1:]
    options, app = parse(config_args(argv) + argv)
    if "--version" in options:
        print(f"NVIDIA (R) Nsight Compute Command Line Profiler\nVersion {version()} (build 0) (fake)")
        return 0
    if "--help" in options:
        return print_help()
    for listing in ("sections", "sets"):  # the real ncu 2025.3.1's own listings
        if f"--list-{listing}" in options and os.environ.get("FAKE_NCU_NO_LISTINGS"):
            fail("fake ncu: listings switched off (FAKE_NCU_NO_LISTINGS)")
        if f"--list-{listing}" in options:
            print((HERE.parent / "fixtures" / f"list-{listing}.txt").read_text(), end="")
            return 0
    if "--import" in options:
        return import_report(options)
    includes, excludes = options.get("--nvtx-include", []), options.get("--nvtx-exclude", [])
    if includes and "--nvtx" not in options:
        fail("--nvtx-include requires --nvtx")
    for section in options.get("--section", []):
        if section not in SECTIONS and not section.startswith("regex:"):
            print(f"==ERROR== Option '--section {section}' did not match any section.")
            fail("Use --list-sections to see the list of available sections.")
    kernel = one(options, "--kernel-name")
    kernel_id = parse_kernel_id(one(options, "--kernel-id"))
    invocations: dict[str, int] = {}
    kernel_regex = None
    if kernel and kernel.startswith("regex:"):
        try:
            kernel_regex = re.compile(kernel[len("regex:") :])
        except re.error as exc:
            fail(f"Invalid regex provided to --kernel option. {exc}")
    if not app:
        fail("No application specified.")
    executable = which(app[0]) if "/" not in app[0] else app[0]
    if not executable or not os.access(executable, os.X_OK):
        fail(f"'{app[0]}' does not exist or is not an executable. Please make sure to specify the absolute path.")

    skip = int(one(options, "--launch-skip", "0") or 0)
    skip_before = int(one(options, "--launch-skip-before-match", "0") or 0)
    count = one(options, "--launch-count")
    limit = int(count) if count is not None else None
    kill = (one(options, "--kill", "no") or "no").lower() in ("yes", "on", "1", "true")
    from_start = (one(options, "--profile-from-start", "on") or "on").lower() in ("yes", "on", "1", "true")
    range_filter = one(options, "--range-filter")
    kernel_replay = (one(options, "--replay-mode", "kernel") or "kernel") == "kernel"
    nvtx_instances = range_filter.split(":")[2] if range_filter else ""
    passes = SETS.get(one(options, "--set", "basic") or "basic", 10)
    if "--metrics" in options and "--set" not in options and "--section" not in options:
        passes = 1
    export = one(options, "--export")
    report = report_path(export) if export else None
    delay = float(os.environ.get("FAKE_NCU_SECONDS_PER_KERNEL", "0"))
    if passes == 1 and os.environ.get("FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL") is not None:  # a trace's, apart
        delay = float(os.environ["FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL"])

    def on_sigint(_signum: int, _frame: object) -> None:
        raise Shutdown

    if os.environ.get("FAKE_NCU_IGNORE_SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGINT, on_sigint)

    read_end, write_end = os.pipe()
    env = {**os.environ, "FAKE_NCU_FD": str(write_end)}
    child = Child(app, env, write_end)
    os.close(write_end)
    print(f"==PROF== Connected to process {child.pid} ({executable})", flush=True)

    seen: list[str] = []
    slower: list[tuple[re.Pattern[str], float]] = []
    profiled_launches: list[dict] = []
    profiled = 0
    matched = 0
    launches = 0
    stack: list[str] = []
    instances = 0
    in_instance = False
    profiling_on = from_start
    killed = interrupted = refused = False
    counters = os.environ.get("FAKE_NCU_COUNTERS", "")  # denied or library: what doctor's probe must recognise
    if counters and counters not in COUNTER_ERRORS:
        fail(f"fake ncu: FAKE_NCU_COUNTERS={counters!r} is none of {sorted(COUNTER_ERRORS)}")
    try:
        with os.fdopen(read_end) as channel:
            for line in channel:
                verb, _, arg = line.strip().partition(" ")
                if verb == "push":
                    stack.append(arg)
                    if includes and not in_instance and any(nvtx_matches(e, stack) for e in includes):
                        instances += 1
                        in_instance = True
                    continue
                if verb == "pop":
                    stack.pop()
                    if in_instance and not any(nvtx_matches(e, stack) for e in includes):
                        in_instance = False
                    continue
                if verb == "profiler":
                    profiling_on = arg == "start"
                    continue
                if verb == "slower":  # fake_app.py --slower REGEX=FACTOR: these kernels' durations times FACTOR
                    pattern, _, factor = arg.rpartition(" ")
                    slower.append((re.compile(pattern), float(factor)))
                    continue
                launches += 1
                collective = verb == "collective" and kernel_replay and COLLECTIVE.search(arg)
                if arg not in seen:
                    seen.append(arg)
                if not profiling_on or launches <= skip_before:
                    continue
                if includes and not any(nvtx_matches(e, stack) for e in includes):
                    continue
                if any(nvtx_matches(e, stack) for e in excludes):
                    continue
                if nvtx_instances and (not in_instance or not re.fullmatch(nvtx_instances, str(instances))):
                    continue
                if kernel_regex is not None and not kernel_regex.search(function_of(arg)):
                    continue
                if kernel and kernel_regex is None and function_of(arg) != kernel:
                    continue
                if kernel_id is not None:  # the Nth launch of its function among those passing the NVTX filter
                    name_matches, number = kernel_id
                    if not name_matches(function_of(arg)):
                        continue
                    invocations[function_of(arg)] = invocations.get(function_of(arg), 0) + 1
                    if not re.fullmatch(number, str(invocations[function_of(arg)])):
                        continue
                matched += 1
                if matched <= skip or (limit is not None and profiled >= limit):
                    continue
                if counters:  # as reference.md 8.3 says: the application runs on, ncu exits 1 at the end
                    if not refused:
                        print(COUNTER_ERRORS[counters], flush=True)
                    refused = True
                    continue
                if collective:
                    return replay_collective(arg, child)
                fail_on = os.environ.get("FAKE_NCU_FAIL_ON")
                asked = [arg, *options.get("--section", [])]
                if fail_on and passes > 1 and any(re.search(fail_on, what) for what in asked):
                    print(f'==ERROR== Failed to profile "{arg[:29]}" in process {child.pid}', flush=True)
                    child.kill()
                    child.wait()
                    return 1
                time.sleep(delay)
                profiled += 1
                launch = {"kernel": arg, "nvtx": list(stack), "pid": child.pid}
                scale = next((factor for pattern, factor in slower if pattern.search(function_of(arg))), None)
                profiled_launches.append(launch if scale is None else {**launch, "scale": scale})
                shown = arg if len(arg) <= 60 else arg[:29] + "..."
                print(f'==PROF== Profiling "{shown}": 0%....50%....100% - {passes} passes', flush=True)
                if kill and limit is not None and profiled >= limit:
                    print("==PROF== Trying to shutdown target application", flush=True)
                    child.kill()
                    killed = True
                    break
    except Shutdown:
        print("==PROF== Trying to shutdown target application", flush=True)
        child.kill()
        killed = interrupted = True
    code = child.wait()
    if refused:
        print(f"==PROF== Disconnected from process {child.pid}", flush=True)
        return 1
    if not killed:
        print(f"==PROF== Disconnected from process {child.pid}", flush=True)
        if code != 0:
            app_code = -code if code < 0 else code
            print(f"==ERROR== The application returned an error code ({app_code}).", flush=True)
    if profiled == 0:
        print("==WARNING== No kernels were profiled.", flush=True)
        if includes and any("/" not in e and not e.endswith("]") for e in includes):
            print("==WARNING== Note that specified NVTX include expressions match only start/end ranges.")
        elif seen:
            print("Available Kernels:")
            for number, name in enumerate(sorted(seen), 1):
                print(f"{number}. {name}")
    elif report is not None:
        write_report(report, profiled_launches)
        print(f"==PROF== Report: {report}", flush=True)
    if interrupted:
        # Real ncu 2025.3.1, measured on the H200: after SIGINT it writes the report, then dies of
        # the signal itself (exit status -2 as Popen sees it).
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    if killed:
        return 0
    return -code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
