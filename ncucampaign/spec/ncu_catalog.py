"""What ncu accepts: its options (which campaign key owns which), sections and sets, from ncu 2025.3.1's
`--help`, `--list-sections` and `--list-sets` (data/). ncu takes any unique prefix of a long option, so a typo
can become another option: extra arguments must use full names from that list."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from ncucampaign.spec.ncu_versions import ADDED_OPTIONS, LATEST_KNOWN, MEASURED, REPORT_SUFFIX, NcuVersion, release_text

# The one metric of a discovery trace, the timing pass and discover's pass, and the duration every result records.
DURATION = "gpu__time_duration.sum"

OptionForm = Literal["value", "repeat", "join", "onoff", "yes", "switch", "onoff_path"]


@dataclass(frozen=True)
class OptionSpec:
    """How a campaign key becomes ncu arguments. value `--flag v`; repeat `--flag a --flag b`; join `--flag a,b`;
    onoff `--flag on|off`; yes `--flag yes` when true (never `--kill no`); switch `--flag` when true."""

    key: str
    flag: str
    form: OptionForm


# Emission order follows the commands of campaigns/manual.yaml (sets, then filters, then launch limits).
OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("devices", "--devices", "join"),
    OptionSpec("set", "--set", "value"),
    OptionSpec("sections", "--section", "repeat"),
    OptionSpec("metrics", "--metrics", "join"),
    OptionSpec("profile_from_start", "--profile-from-start", "onoff"),
    OptionSpec("disable_profiler_start_stop", "--disable-profiler-start-stop", "switch"),
    OptionSpec("call_stack_type", "--call-stack-type", "repeat"),
    OptionSpec("python_include", "--python-include", "repeat"),
    OptionSpec("python_exclude", "--python-exclude", "repeat"),
    OptionSpec("native_include", "--native-include", "repeat"),
    OptionSpec("native_exclude", "--native-exclude", "repeat"),
    OptionSpec("target_processes", "--target-processes", "value"),
    OptionSpec("target_processes_filter", "--target-processes-filter", "join"),
    OptionSpec("nvtx", "--nvtx", "switch"),
    OptionSpec("nvtx_include", "--nvtx-include", "repeat"),
    OptionSpec("nvtx_exclude", "--nvtx-exclude", "repeat"),
    OptionSpec("nvtx_push_pop_scope", "--nvtx-push-pop-scope", "value"),
    OptionSpec("range_filter", "--range-filter", "value"),
    OptionSpec("kernel_name_base", "--kernel-name-base", "value"),
    OptionSpec("kernel_name", "--kernel-name", "value"),
    OptionSpec("kernel_id", "--kernel-id", "value"),
    OptionSpec("filter_mode", "--filter-mode", "value"),
    OptionSpec("launch_skip_before_match", "--launch-skip-before-match", "value"),
    OptionSpec("launch_skip", "--launch-skip", "value"),
    OptionSpec("launch_count", "--launch-count", "value"),
    OptionSpec("kill", "--kill", "yes"),
    OptionSpec("graph_profiling", "--graph-profiling", "value"),
    OptionSpec("replay_mode", "--replay-mode", "value"),
    OptionSpec("app_replay_mode", "--app-replay-mode", "value"),
    OptionSpec("app_replay_match", "--app-replay-match", "value"),
    OptionSpec("cache_control", "--cache-control", "value"),
    OptionSpec("clock_control", "--clock-control", "value"),
    OptionSpec("config_file", "--config-file", "onoff_path"),
    OptionSpec("rename_kernels", "--rename-kernels", "onoff_path"),
    OptionSpec("communicator", "--communicator", "value"),
    OptionSpec("communicator_tcp_num_peers", "--communicator-tcp-num-peers", "value"),
    OptionSpec("communicator_tcp_port", "--communicator-tcp-port", "value"),
    OptionSpec("communicator_shmem_num_peers", "--communicator-shmem-num-peers", "value"),
    OptionSpec("lockstep_kernel_launch", "--lockstep-kernel-launch", "switch"),
    OptionSpec("page", "--page", "value"),
)

# Options ncucampaign manages itself, or that would break running and classifying an attempt.
MANAGED_OPTIONS: dict[str, str] = {
    "--export": "ncucampaign chooses the report path (reports/<target>.ncu-rep, .ncu-repz from ncu 2026.3)",
    "--force-overwrite": "ncucampaign always passes -f",
    "--import": "a campaign profiles applications; it does not read reports",
    "--log-file": "ncucampaign captures ncu's console output to logs/<target>.log to classify each attempt",
    "--quiet": "ncucampaign reads ncu's ==PROF==/==ERROR== lines to classify each attempt",
    "--open-in-ui": "runs are unattended",
    "--mode": "only launch-and-attach profiles an application started by the campaign",
    "--process-id": "it attaches to a running process (--mode attach); a campaign starts its application",
    "--help": "it prints help and profiles nothing",
    "--version": "it prints the version and profiles nothing",
    "--list-sets": "it lists and profiles nothing",
    "--list-sections": "it lists and profiles nothing",
    "--list-rules": "it lists and profiles nothing",
    "--list-metrics": "it lists and profiles nothing",
    "--list-chips": "it lists and profiles nothing",
    "--query-metrics": "it queries and profiles nothing",
    "--query-metrics-mode": "it queries and profiles nothing",
    "--query-metrics-collection": "it queries and profiles nothing",
    "--section-folder-restore": "it changes files on the machine",
    "--config-file-path": "use the key config_file: with the file's path",
    "--rename-kernels-path": "use the key rename_kernels: with the file's path",
    "--rename-kernels-export": "it writes ncu's renames file instead of profiling as asked",
}


@dataclass(frozen=True)
class NcuOption:
    flag: str
    short: str
    takes_value: bool


@cache
def known_options() -> dict[str, NcuOption]:
    """Long and short spellings (without '=value') -> option: ncu 2025.3.1's --help, and the options
    later releases added (spec/ncu_versions.py), which the installed ncu is checked for at run time."""
    table: dict[str, NcuOption] = {flag: NcuOption(flag, "", value) for flag, (_, value) in ADDED_OPTIONS.items()}
    text = _data("ncu-2025.3.1-options.tsv")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        flag, short, kind = line.split("\t")
        option = NcuOption(flag, short, kind == "arg")
        table[flag] = option
        if short:
            table[f"-{short}"] = option
    return table


def check_extra_args(args: tuple[str, ...]) -> None:
    """Raise ValueError with a clear message when extra ncu arguments cannot be used as given (by any
    ncu release this tool knows; `missing_options` checks them against the installed one)."""
    options = known_options()
    modelled = {spec.flag: spec.key for spec in OPTION_SPECS}
    index = 0
    while index < len(args):
        token = args[index]
        if not token.startswith("-"):
            raise ValueError(
                f"{token!r} is not an ncu option; extra_args holds ncu options (application arguments go in 'args')"
            )
        spelled, has_inline_value, _ = token.partition("=")
        option = options.get(spelled)
        if option is None:
            # by the names without their dashes, closely: every option's "--" and its common words made
            # '--no-such-option' look like '--section'
            names = [k[2:] for k in options if k.startswith("--")]
            hint = difflib.get_close_matches(spelled.lstrip("-"), names, n=1, cutoff=0.75)
            suggestion = f"; did you mean '--{hint[0]}'?" if hint else ""
            raise ValueError(
                f"{spelled!r} is not an option of ncu {MEASURED} through {release_text(LATEST_KNOWN)} "
                "(use full option names)"
                f"{suggestion}"
            )
        if option.flag in MANAGED_OPTIONS:
            raise ValueError(f"{spelled!r} cannot be used: {MANAGED_OPTIONS[option.flag]}")
        if option.flag in modelled:
            raise ValueError(f"{spelled!r} has its own key: use '{modelled[option.flag]}:' instead")
        if option.takes_value and not has_inline_value:
            if index + 1 >= len(args):
                raise ValueError(f"{spelled!r} needs a value")
            index += 1
        index += 1


def option_flags(args: tuple[str, ...]) -> list[str]:
    """The long names of the ncu options in `args` (already checked by check_extra_args)."""
    options = known_options()
    return [options[token.partition("=")[0]].flag for token in args if token.partition("=")[0] in options]


def missing_options(flags: list[str], version: NcuVersion, listed: frozenset[str] | None) -> list[str]:
    """What `version` of ncu does not have among `flags`, each with why: its own --help does not list
    it (`listed`, when known), or NVIDIA added it in a later release."""
    found = []
    for flag in dict.fromkeys(flags):
        added = version.lacks(flag)
        if listed is not None and flag not in listed:
            since = f" (NVIDIA added it in ncu {release_text(added)})" if added else ""
            found.append(f"{flag}: the installed {version.name} does not list it in --help{since}")
        elif listed is None and added is not None:
            found.append(f"{flag}: needs ncu {release_text(added)} or later; this is {version.name}")
    return found


def _data(name: str) -> str:
    return resources.files("ncucampaign.spec").joinpath("data", name).read_text()


@cache
def known_sections() -> tuple[frozenset[str], frozenset[str]]:
    """ncu 2025.3.1's section and set identifiers."""
    sections: set[str] = set()
    sets: set[str] = set()
    current = sections
    for line in _data("ncu-2025.3.1-sections.txt").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line == "sets:":
            current = sets
            continue
        current.add(line.strip())
    return frozenset(sections), frozenset(sets)


@dataclass(frozen=True)
class InstalledNcu:
    """What the ncu on PATH says of itself (`--version`, `--list-sections`, `--list-sets`, `--help`)."""

    version: str | None
    sections: frozenset[str]
    sets: frozenset[str]
    options: frozenset[str] | None = None  # long option names its --help lists (None: unknown)

    @property
    def facts(self) -> NcuVersion:
        return NcuVersion(self.version)


def report_suffix(installed: InstalledNcu | None) -> str:
    """The suffix of the reports this ncu writes by default (.ncu-rep when it is not known)."""
    return installed.facts.report_suffix if installed is not None else REPORT_SUFFIX


def parse_help_options(text: str) -> frozenset[str] | None:
    """Long option names from `ncu --help` ('  -o [ --export ] arg', '  --nvtx', ...); None when the
    text lists none (not a help text)."""
    found = set(re.findall(r"^\s+(?:-\w \[ )?(--[a-z][a-z0-9-]*)", text, flags=re.MULTILINE))
    return frozenset(found) if len(found) > 10 else None


def parse_listing(text: str) -> frozenset[str]:
    """Identifiers from `ncu --list-sections` / `--list-sets` (first column of the table's rows)."""
    found = set()
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z][A-Za-z0-9_]*)\s+\S", line)
        if match and match.group(1) != "Identifier":
            found.add(match.group(1))
    return frozenset(found)
