"""`ncucampaign reference update RUN... [--to DIR]`: the runs' results as the campaign's reference,
one file per GPU model (refs/<model>.yaml beside the campaign), for git; it prints, as a Markdown
table for a pull request, what moved against the file it replaces (results/history/reference.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.parts.command import Command
from ncucampaign.errors import EXIT_OK, EnvironmentProblem, UsageError, plural, printable
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.store import write_text_atomic
from ncucampaign.results.history.reference import (
    file_name,
    gpu_model,
    left_out,
    moved,
    moved_markdown,
    of_one_setting,
    reference_data,
)
from ncucampaign.results.history.reference_file import Reference, parsed_reference
from ncucampaign.spec.yaml_lines import MAX_FILE_BYTES, parse_yaml

REFS = "refs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    update = actions.add_parser("update", help="write refs/<GPU model>.yaml from runs of the campaign")
    update.add_argument("runs", nargs="+", metavar="RUN", help="run directories (several: more samples)")
    update.add_argument("--to", metavar="DIR", help="where the files go (default: refs/ beside the campaign)")


def run(args: argparse.Namespace) -> int:
    runs = [load_collected(path).manifest for path in args.runs]
    names = sorted({m.campaign.name for m in runs})
    if len(names) > 1:
        raise UsageError(f"the runs are of {len(names)} campaigns ({', '.join(map(printable, names))}): one at a time")
    folder = Path(args.to) if args.to else default_folder(runs[-1])
    by_model: dict[str, list[Manifest]] = {}
    for manifest in sorted(runs, key=lambda m: (m.started_at, m.run_id)):
        by_model.setdefault(gpu_model(manifest), []).append(manifest)
    for model, same in sorted(by_model.items()):
        path = folder / file_name(model)
        previous = read_reference(path) if path.exists() else None
        same, other_settings = of_one_setting(same)
        data = reference_data(same, previous)
        if not data.targets:
            raise UsageError(f"{model}: no target is ok in every run given; no reference written")
        text = yaml.safe_dump(data.file_data(), sort_keys=True, allow_unicode=True, width=100, default_flow_style=None)
        written = _replace(path, text)
        notes, taken = left_out(same)
        counts = sorted({taken.get(name, len(same)) for name in data.targets})
        pooled = plural(counts[0], "run") if len(counts) == 1 else f"{counts[0]}-{counts[-1]} runs"
        print(f"{path}: {plural(len(data.targets), 'target')} from {pooled}" + ("" if written else " (unchanged)"))
        for note in [*other_settings, *notes]:
            print(printable(f"note: {note}"))
        print(moved_markdown(moved(previous, data)))
    return EXIT_OK


def default_folder(manifest: Manifest) -> Path:
    source = manifest.campaign.source
    return (Path(source).parent if source else Path.cwd()) / REFS


def read_reference(path: Path) -> Reference:
    """A reference file, checked to be one (a damaged or foreign file is named, not a traceback)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise UsageError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB: not a reference")
        data, _, _ = parse_yaml(raw.decode("utf-8", errors="replace"), str(path))  # bounded: aliases, depth
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    found = parsed_reference(data)
    if isinstance(found, str):
        raise UsageError(printable(f"{path}: {found}"))
    return found


def _replace(path: Path, text: str) -> bool:
    """Write `text` to `path` with the store's atomic write (a link there is refused, never written
    through); False when it holds exactly that already."""
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror or exc}") from None
    write_text_atomic(path, text)
    return True


COMMAND = Command("reference", "a campaign's reference in git: update it from runs", add_arguments, run)
