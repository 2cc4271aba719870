"""run's command line as one frozen RunRequest (execute/rundir/request.py), built once; `ab` builds the
same request without an argv. Each backend's own options come from its entry in the table of
backends (backends/systems.py): its flag (--slurm, --k8s) and its options, kept as given."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from ncucampaign.backends.systems import BACKENDS
from ncucampaign.commands.parts.common import ONLY_HELP, add_ncu_option, chosen_ncu
from ncucampaign.errors import UsageError
from ncucampaign.execute.rundir.request import HERE, BackendRequest, RunRequest
from ncucampaign.spec.model import MAX_SAMPLES


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """run's own options and every backend's."""
    parser.add_argument("file", metavar="FILE", nargs="?", help="the campaign (with --resume: default, the one it ran)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=ONLY_HELP)
    parser.add_argument(
        "--out", metavar="DIR", help="root of run directories (default: runs_dir: or runs/ beside the campaign file)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would run; create nothing")
    parser.add_argument(
        "--samples",
        type=int,
        metavar="N",
        help="samples per target for compare's verdicts (over every target's samples: in the campaign)",
    )
    add_ncu_option(parser)
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="RUN_DIR",
        help="complete a run: skip targets that are ok and unchanged (default: the latest run)",
    )
    parser.add_argument(
        "--rerun-failed",
        action="store_true",
        help="with --resume (implied): run only the targets that failed or are incomplete",
    )
    parser.add_argument(
        "--no-share",
        action="store_true",
        help="run every target in its own application run (default: targets with identical run settings share "
        "one, split and verified per target)",
    )
    parser.add_argument(
        "--weigh",
        action="store_true",
        help="after the targets, time every launch of the application once (as `weigh: true` does), so that "
        "findings rank by what they would gain the whole application",
    )
    add_here_arguments(parser)
    add_backend_arguments(parser, submits=True)


def add_here_arguments(parser: argparse.ArgumentParser) -> None:
    """What a run on this machine takes (a batch backend refuses them: its system places its tasks)."""
    parser.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")
    parser.add_argument("--gpus", metavar="LIST", help="run targets side by side, one per GPU: 0,1,... or all")
    parser.add_argument(
        "--jobs-per-gpu",
        type=int,
        default=1,
        metavar="N",
        help="ncu processes sharing one GPU (default 1: sharing can disturb the numbers)",
    )


def add_backend_arguments(parser: argparse.ArgumentParser, submits: bool) -> None:
    """Each batch backend's flag and options (for `plan`, `submits` False: what it prints instead)."""
    batch = [backend for backend in BACKENDS.values() if backend.words.flag]
    for backend in batch:
        what = backend.words.help if submits else f"print what {backend.words.flag} would submit (submits nothing)"
        parser.add_argument(backend.words.flag, action="store_true", help=what)
        for flag in backend.flags:
            kind: dict[str, Any] = {"type": int} if flag.number else {}
            repeat: dict[str, Any] = {"action": "append", "default": []} if flag.repeat else {}
            parser.add_argument(flag.name, metavar=flag.metavar, help=flag.help, **kind, **repeat)
    if submits:
        flags = " or ".join(backend.words.flag for backend in batch)
        parser.add_argument("--wait", action="store_true", help=f"with {flags}: follow it until it ends, then collect")


def backend_request(args: argparse.Namespace) -> BackendRequest:
    """The backend the command line chooses, with its options as given: a UsageError for options of a
    backend it does not choose, or for two backends at once."""
    chosen = [backend for backend in BACKENDS.values() if backend.words.flag and _given(args, backend.words.flag)]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(b.words.flag for b in chosen)}: choose one")
    options: dict[str, tuple[str, ...]] = {}
    for backend in BACKENDS.values():
        given = {flag.name: _values(args, flag.name) for flag in backend.flags if _values(args, flag.name)}
        if given and backend not in chosen:
            raise UsageError(f"{', '.join(given)} go{'es' if len(given) == 1 else ''} with {backend.words.flag}")
        options.update(given)
    wait = bool(getattr(args, "wait", False))
    if wait and not chosen:
        batch = " or ".join(b.words.flag for b in BACKENDS.values() if b.words.flag)
        raise UsageError(f"--wait goes with {batch}")
    return BackendRequest(name=chosen[0].name if chosen else HERE, wait=wait, options=options)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _given(args: argparse.Namespace, flag: str) -> bool:
    return bool(getattr(args, _dest(flag), False))


def _values(args: argparse.Namespace, flag: str) -> tuple[str, ...]:
    """A flag's values as given. argparse turns `--slurm-arg=--` into a list (its end-of-options
    marker): that is no option either."""
    value = getattr(args, _dest(flag), None)
    items = value if isinstance(value, list) else [] if value is None else [value]
    return tuple(str(item) if isinstance(item, str | int) else "--" for item in items)


def request_from(args: argparse.Namespace) -> RunRequest:
    """The request the parsed command line makes, in one validation: its fields by their names, besides --ncu
    (ncu_flag), --only (a tuple), --rerun-failed (implies --resume latest) and the backend's flags."""
    given = vars(args)
    fields = {name: given[name] for name in RunRequest.model_fields if given.get(name) is not None}
    resume = "latest" if args.rerun_failed and args.resume is None else args.resume
    only, backend = tuple(args.only or ()), backend_request(args)
    try:
        return RunRequest.model_validate(
            {**fields, "only": only, "ncu_flag": args.ncu, "resume": resume, "backend": backend}
        )
    except ValidationError as exc:  # a count out of its range (argparse gave every flag its type): said as the flag's
        field = str(exc.errors()[0]["loc"][0])
        if field == "samples":
            raise UsageError(f"--samples must be between 1 and {MAX_SAMPLES}") from None
        raise UsageError(f"--{field.replace('_', '-')} must be at least 1") from None


def ncu_of(request: RunRequest) -> str | None:
    """The ncu asked for: --ncu, else $NCUCAMPAIGN_NCU."""
    return chosen_ncu(request.ncu_flag)
