"""Copy what an attempt appends to its log to the console while it runs (the live view)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.05


class LogTail:
    """Copies what an attempt appends to its log to a callback (the live view)."""

    def __init__(self, path: Path, offset: int, echo: Callable[[str], None]) -> None:
        self._path, self._offset, self._echo = path, offset, echo
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with open(self._path, "rb") as handle:
            handle.seek(self._offset)
            while True:
                # Asked before the read: once the process has ended, one more read sees all it wrote (asked after
                # an empty read, the last lines written between that read and stop() would be lost).
                ended = self._done.is_set()
                chunk = handle.read(1 << 20)  # bounded: an application may print gigabytes at once
                if chunk:
                    self._echo(chunk.decode(errors="replace"))
                elif ended:
                    return
                else:
                    time.sleep(POLL_S)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)  # a loaded machine may keep the thread waiting
