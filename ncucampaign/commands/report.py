"""`ncucampaign report RUN_DIR|REPORT`: one self-contained HTML page for a run, or for a report someone sent."""

from __future__ import annotations

import argparse
from pathlib import Path

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.parts.command import Command
from ncucampaign.errors import EXIT_OK, UsageError
from ncucampaign.results.page.html import write_report
from ncucampaign.results.reading.records import is_bare_report, report_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN_DIR|REPORT", help="a run directory, or a .ncu-rep/.ncu-repz file")
    parser.add_argument("-o", "--output", metavar="FILE", help="default: RUN_DIR/report.html, or REPORT.html beside it")


def run(args: argparse.Namespace) -> int:
    output = checked_output(Path(args.output)) if args.output else None
    given = Path(args.run)
    if is_bare_report(given):  # a report someone sent: its page beside it
        loaded = report_run(given)
        output = output or checked_output(given.with_suffix(".html"))
    else:
        loaded = load_collected(args.run)
    written = write_report(loaded, output)
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
