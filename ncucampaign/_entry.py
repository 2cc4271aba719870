"""The `ncucampaign` command's entry point: imports the command line inside a Ctrl-C guard, so that an
interrupt during start-up ends quietly with exit 130 (the console-script wrapper that pip writes
imports its target module before anything of ours runs, so this module stays tiny)."""

from __future__ import annotations

import signal
import sys


def main() -> int:
    code = 130
    try:
        from ncucampaign.cli import main as cli_main

        code = cli_main()
    except KeyboardInterrupt:
        print("ncucampaign: interrupted", file=sys.stderr)
    finally:
        _ignore_late_interrupts()
    return code


def _ignore_late_interrupts() -> None:
    """The exit code is decided: a Ctrl-C arriving now (a flood of them, say) must not turn it into a
    death by SIGINT while the interpreter shuts down."""
    while True:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            return
        except KeyboardInterrupt:
            continue
