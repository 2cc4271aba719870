"""`ncucampaign report RUN_DIR`: one self-contained HTML page for a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.command import Command
from ncucampaign.errors import EXIT_OK, UsageError
from ncucampaign.results.page.html import write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("-o", "--output", metavar="FILE", help="default: RUN_DIR/report.html")


def run(args: argparse.Namespace) -> int:
    output = checked_output(Path(args.output)) if args.output else None
    written = write_report(load_collected(args.run), output)
    if output is None and written.parent.is_symlink():  # `latest` moves with the next run; its id does not
        written = written.parent.parent / written.parent.readlink() / written.name
    print(written)
    return EXIT_OK


def checked_output(output: Path) -> Path:
    """-o names a file in an existing folder; what is there must be a regular file (the writer refuses
    links and devices)."""
    if output.is_dir() and not output.is_symlink():
        raise UsageError(f"-o {output}: is a folder; name a file such as {output / 'report.html'}")
    if not output.absolute().parent.is_dir():
        raise UsageError(f"-o {output}: no such folder {output.absolute().parent}")
    return output


COMMAND = Command("report", "write one self-contained HTML page for a run", add_arguments, run)
