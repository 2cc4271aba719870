"""The links of the run's page: every href names a file in the run directory (never one a manifest names outside it),
and every link resolves. A target read out of a shared run has no log nor report of its own: its log link
opens its shared run's log, its report link the shared run's report with which of its results are the target's, and
the page names the command that writes a report of its own (`ncucampaign export`)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from ncucampaign.escaping import html_text as escape
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord


def run_link(root: Path, base: Path | None, relative: str) -> str | None:
    """An href (escaped) for a file the manifest names inside the run directory; None for anything else (absolute,
    leaving the run directory, control characters, `javascript:...`): a manifest may have been edited."""
    path = PurePosixPath(relative)
    if not relative or path.is_absolute() or ".." in path.parts or "\\" in relative:
        return None
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in relative) or ":" in path.parts[0]:
        return None  # control characters, or what reads as a URL scheme (javascript:, data:)
    if base is None:  # an absolute path: no scheme, and a ':' in it is encoded too
        return escape(quote(str(root / relative), safe="/"))
    target = os.path.relpath(root / relative, base)
    # percent-encoded, and never starting with a scheme: a ':' in it is encoded too
    encoded = quote(target, safe="/")
    return escape(encoded if encoded.startswith(("../", "./")) else f"./{encoded}")


class TargetLinks:
    """A target's links (report, log) on the page of the run in `root`."""

    def __init__(self, manifest: Manifest, root: Path, href: Callable[[str], str | None]) -> None:
        self.root, self.href = root, href
        self.shared = {record.name: record for record in manifest.shared_runs}

    def of(self, target: TargetRecord) -> str:
        shared = self.shared.get(target.obtained.shared_run or "") if target.obtained else None
        links = [
            self._report(target, shared.name if shared else None),
            self._log(target, shared.log if shared else None),
        ]
        return " &middot; ".join(link for link in links if link)

    def _report(self, target: TargetRecord, shared: str | None) -> str:
        report = target.report
        if report is None:
            return ""
        if report.ids is None or shared is None:
            return self._link("report", report.path)
        held = f"{len(report.ids)} of its results" if len(report.ids) != 1 else "one of its results"
        export = shlex.join(["ncucampaign", "export", str(self.root), "--only", target.name])
        return (
            f"{self._link(f'report of {shared}', report.path)} ({escape(held)}; a report of its own: "
            f"<code>{escape(export)}</code>)"
        )

    def _log(self, target: TargetRecord, shared_log: str | None) -> str:
        if target.log and self._is_file(target.log):
            return self._link("log", target.log)
        if shared_log and self._is_file(shared_log):
            return self._link("log of its shared run", shared_log)
        return f"log: <code>{escape(target.log)}</code> (not a file in the run directory)" if target.log else ""

    def _is_file(self, relative: str) -> bool:
        return self.href(relative) is not None and (self.root / relative).is_file()

    def _link(self, kind: str, path: str) -> str:
        link = self.href(path)
        if link is None:
            return f"{escape(kind)}: <code>{escape(path)}</code> (not a file in the run directory)"
        css = "report" if kind.startswith("report") else "log"
        return f'<a class="{css}-link" href="{link}">{escape(kind)}</a>'
