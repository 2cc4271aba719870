"""Every write into a run directory goes through `writing`: a failed write (disk full, read-only,
permissions, a name too long) is an environment problem naming the file, never a traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """A failed write (disk full, read-only, permissions, a name too long) is an environment problem."""
    try:
        yield
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror or exc}") from None
