"""The `ncucampaign` entry point, kept tiny: pip's wrapper imports it first. Start-up (every command, pydantic,
rich, PyYAML) runs under a SIGINT handler that only notes the interrupt, so a Ctrl-C neither prints a traceback
from mid-import nor is lost; then Python's handler is installed and `cli.main` turns Ctrl-C into exit 130."""

from __future__ import annotations

import gc
import os
import signal
import sys
from types import FrameType

_NO_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # every one of them a stop: exit 130 (docs/running.md)


def main() -> int:
    sys.unraisablehook = _quiet_signal_race
    interrupted: list[int] = []

    def note(_signum: int, _frame: FrameType | None) -> None:
        interrupted.append(1)

    stops = stops_to_handle()
    for stopping in stops:
        signal.signal(stopping, note)
    # pydantic looks for plugins of every installed distribution as it builds our models (all at
    # import): on a GPU machine's Python, with torch and its kin, a scan of their metadata that a run
    # pays at every start. No plugin has business with ncucampaign's own models, and the variable is
    # gone again before anything starts a child (the application may use pydantic's plugins).
    own_setting = _NO_PLUGINS not in os.environ
    if own_setting:
        os.environ[_NO_PLUGINS] = "__all__"
    gc.disable()  # imports build classes and schemas, no garbage: frozen after, never walked by a collection again
    try:
        from ncucampaign import cli

        cli.load_commands()
    except KeyboardInterrupt:  # one already on its way when the guard went up
        interrupted.append(1)
    except ModuleNotFoundError as exc:  # a Python without ncucampaign's dependencies (pyproject.toml)
        return _missing(exc)
    finally:
        gc.freeze()
        gc.enable()
        if own_setting:
            os.environ.pop(_NO_PLUGINS, None)
        _stops_interrupt(stops)
    code = 130
    try:
        if not interrupted:
            code = cli.main()
        else:
            print("ncucampaign: interrupted", file=sys.stderr)
    except KeyboardInterrupt:
        print("ncucampaign: interrupted", file=sys.stderr)
    finally:
        _ignore_late_interrupts()
    return code


def _missing(exc: ModuleNotFoundError) -> int:
    """One line for a dependency this Python lacks (a GPU box's system Python beside the venv); exit 3."""
    package = (exc.name or "").split(".")[0]
    if not package or package == "ncucampaign":
        raise exc  # our own module missing: a broken install, an internal error
    from ncucampaign.errors import EXIT_ENVIRONMENT  # the standard library's alone

    print(f"ncucampaign: cannot start: the package {package!r} it needs is not installed for {sys.executable}; "
          "install ncucampaign into this Python with its dependencies (in a checkout: pip install -e '.[reports]', "
          "README.md)", file=sys.stderr)  # fmt: skip
    return EXIT_ENVIRONMENT


def stops_to_handle() -> tuple[signal.Signals, ...]:
    """SIGINT, SIGTERM and SIGHUP, but a SIGHUP this process was started ignoring (`nohup`: a run meant to outlive
    its terminal) stays ignored."""
    return tuple(sig for sig in STOPS if sig != signal.SIGHUP or signal.getsignal(sig) != signal.SIG_IGN)


def _stops_interrupt(stops: tuple[signal.Signals, ...]) -> None:
    """Python's own handler, also where SIGINT came in ignored (a background job of a script, or `nohup`): a Ctrl-C
    or `kill -INT` stops the command at any moment with 130, as the run's own handler does (one during the probe
    before the run was lost, and the run finished); a SIGTERM or SIGHUP before a run handles its own: 130 too, not
    death by the signal."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stopping in stops[1:]:
        signal.signal(stopping, _as_interrupt)


def _as_interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _ignore_late_interrupts() -> None:
    """The exit code is decided: a Ctrl-C (or SIGTERM, SIGHUP) arriving now (a flood of them, say) must not turn it
    into a death by signal while the interpreter shuts down."""
    for stopping in STOPS:  # one ignored from the start (nohup) stays so
        while True:
            try:
                signal.signal(stopping, signal.SIG_IGN)
                break
            except KeyboardInterrupt:
                continue


def _quiet_signal_race(unraisable: sys.UnraisableHookArgs) -> None:
    """A SIGINT caught just before its handler became SIG_IGN (Ctrl-C flooding a run's end): CPython reports it
    as an unraisable "Signal 2 ignored due to race condition"; ignoring it was the point. Others: Python's hook."""
    value = unraisable.exc_value
    if isinstance(value, OSError) and "ignored due to race condition" in str(value):
        return
    sys.__unraisablehook__(unraisable)
