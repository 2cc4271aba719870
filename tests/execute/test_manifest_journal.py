"""execute/rundir/journal.py and the record book: a change costs what it changed (a journal line), manifest.json is
rewritten now and then and at the end, and every reader sees the last change, also after the runner was killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ncucampaign.errors import UsageError
from ncucampaign.execute.rundir import journal
from ncucampaign.execute.rundir.book import RecordBook
from ncucampaign.execute.rundir.journal import JOURNAL, ManifestFiles, journal_entries, replayed
from ncucampaign.execute.rundir.manifest import SharedRunRecord
from ncucampaign.execute.rundir.reading import read_manifest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import load_run
from tests.manifests import manifest_with, target_record


def opened_book(tmp_path: Path, targets: int = 3) -> tuple[RunStore, RecordBook]:
    store = RunStore.create(tmp_path / "runs", "c")
    manifest = manifest_with([target_record(f"t{i}", Status.PENDING) for i in range(targets)])
    manifest.state = "running"
    book = RecordBook(manifest, store.save_manifest, files=ManifestFiles(store))
    book.save()
    return store, book


def on_disk(store: RunStore) -> dict[str, object]:
    return json.loads(store.run.manifest.read_text())


def test_a_change_is_a_journal_line_and_the_manifest_is_not_rewritten_for_it(tmp_path: Path) -> None:
    store, book = opened_book(tmp_path)
    record = book.records["t1"]
    book.commit(lambda: setattr(record, "status", Status.RUNNING), record)
    assert on_disk(store)["targets"][1]["status"] == "pending"  # manifest.json as it was
    (line,) = journal_entries(store.run.root)
    assert line["target"]["name"] == "t1" and line["target"]["status"] == "running"
    assert load_run(store.run.root).manifest.targets[1].status == Status.RUNNING  # readers see it


def test_the_manifest_is_rewritten_once_the_interval_is_over_and_the_journal_emptied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, book = opened_book(tmp_path)
    record = book.records["t0"]
    monkeypatch.setattr(journal, "REWRITE_S", 0.0)  # every change is due, however long a rewrite takes
    monkeypatch.setattr(journal, "REWRITE_SHARE", float("inf"))
    book.commit(lambda: setattr(record, "status", Status.OK), record)
    assert on_disk(store)["targets"][0]["status"] == "ok"
    assert journal_entries(store.run.root) == []


def test_the_end_of_a_run_leaves_the_whole_manifest_and_an_empty_journal(tmp_path: Path) -> None:
    store, book = opened_book(tmp_path)
    for name in ("t0", "t1", "t2"):
        record = book.records[name]
        book.commit(lambda record=record: setattr(record, "status", Status.OK), record)
    book.commit(lambda: setattr(book.manifest, "state", "finished"))
    book.close()
    assert {t["status"] for t in on_disk(store)["targets"]} == {"ok"} and on_disk(store)["state"] == "finished"
    assert (store.run.root / JOURNAL).read_bytes() == b""


def test_a_runner_killed_mid_run_leaves_every_change_to_its_readers(tmp_path: Path) -> None:
    """A child process commits changes and is killed with SIGKILL after the last one it says it made."""
    script = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from pathlib import Path
from tests.execute.test_manifest_journal import opened_book
from ncucampaign.execute.rundir.status import Status
store, book = opened_book(Path({str(tmp_path)!r}), targets=50)
for i in range(50):
    record = book.records[f"t{{i}}"]
    book.commit(lambda record=record: setattr(record, "status", Status.OK), record)
print(store.run.root, flush=True)
time.sleep(60)
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    root = Path(child.stdout.readline().strip())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert {t.status for t in load_run(root).manifest.targets} == {Status.OK}
    assert read_manifest(root).targets[-1].status == Status.OK


def test_a_line_applied_twice_changes_nothing_and_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    store, book = opened_book(tmp_path)
    record = book.records["t2"]
    book.commit(lambda: setattr(record, "status", Status.OK), record)
    lines = (store.run.root / JOURNAL).read_bytes()
    (store.run.root / JOURNAL).write_bytes(lines + lines + b'{"target": {"name": "t2", "sta')
    assert read_manifest(store.run.root).model_dump(mode="json")["targets"][2]["status"] == "ok"
    base = on_disk(store)
    once = replayed(json.loads(json.dumps(base)), journal_entries(store.run.root)[:1])
    assert replayed(json.loads(json.dumps(once)), journal_entries(store.run.root)) == once


def test_a_damaged_line_before_the_last_is_a_clear_error(tmp_path: Path) -> None:
    store, _ = opened_book(tmp_path)
    (store.run.root / JOURNAL).write_bytes(b'{"target": {"name"\n{"manifest": {"state": "running"}}\n')
    with pytest.raises(UsageError, match="line 1 is damaged"):
        load_run(store.run.root)


def test_two_shared_runs_of_one_name_are_told_apart_by_their_place(tmp_path: Path) -> None:
    """A resumed run enters its discovery trace again under the trace's name, beside the killed run's."""
    store, book = opened_book(tmp_path)
    fields = dict(
        target="trace", argv=[], shell_command="", env={}, cwd="", timeout_s=1, retries=0, collects_sections=True
    )
    old, new = (
        SharedRunRecord(
            name="shared/trace-1",
            status=status,
            log="l",
            expected_results=None,
            members=[],
            window="trace",
            kind="trace",
            **fields,
        )
        for status in (Status.INTERRUPTED, Status.RUNNING)
    )
    book.commit(lambda: book.manifest.shared_runs.append(old), old)
    book.commit(lambda: book.manifest.shared_runs.append(new), new)
    book.commit(lambda: setattr(new, "status", Status.OK), new)
    runs = read_manifest(store.run.root).model_dump(mode="json")["shared_runs"]
    assert [run["status"] for run in runs] == ["interrupted", "ok"]


def test_a_full_disk_leaves_whole_lines_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, book = opened_book(tmp_path)
    record = book.records["t0"]
    book.commit(lambda: setattr(record, "status", Status.RUNNING), record)
    size = (store.run.root / JOURNAL).stat().st_size
    real_write = os.write
    monkeypatch.setattr(journal.os, "write", lambda fd, data: real_write(fd, data[:7]))  # the disk fills mid-line
    from ncucampaign.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match="No space left on device"):
        book.commit(lambda: setattr(record, "status", Status.OK), record)
    assert (store.run.root / JOURNAL).stat().st_size == size
    assert read_manifest(store.run.root).model_dump(mode="json")["targets"][0]["status"] == "running"
