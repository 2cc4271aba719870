"""The packages a Python application runs with, for the trace cache's key (workload.py): `pip install -U torch` in the
same environment changes the kernels a script launches (cuBLAS, Triton, flash-attention variants) without changing
the script, its folder or its environment variables. Where the command is a Python interpreter (`python3 x.py`,
`python -m`) or a script whose first line names one (`torchrun`, `accelerate`), that interpreter, with the same
environment, folder and isolating flags, lists the installed distributions on its sys.path (`*.dist-info`,
`*.egg-info`, `*.egg-link`, `*.pth`: names carry versions) and its own version. Other commands are not probed."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ncucampaign.execute.process.short import probed

PROBE_S = 10.0  # a Python start that lists its paths: well under a second, on a slow shared filesystem more
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?$")
_FLAGS = frozenset({"-S", "-s", "-E", "-I"})  # what changes the interpreter's sys.path
_LIST = (
    "import os, sys\n"
    "print(sys.version)\n"
    "for entry in sys.path:\n"
    "    try:\n"
    "        names = os.listdir(entry or '.')\n"
    "    except OSError:\n"
    "        continue\n"
    "    kept = sorted(n for n in names if n.endswith(('.dist-info', '.egg-info', '.egg-link', '.pth')))\n"
    "    print(repr(entry), *kept)\n"
)


def packages_digest(app_argv: Sequence[str], env: Mapping[str, str], cwd: Path, run: str = "") -> str | None:
    """A digest of what the application's Python has installed; None when the command is no Python's, or its
    interpreter does not answer (then the key is as it was without it). `run`: the run asking (its traces share
    one listing; another run lists again)."""
    found = interpreter(app_argv, env, cwd)
    if found is None:
        return None
    python, flags = found
    return _listed(python, flags, tuple(sorted(env.items())), str(cwd), run)


def interpreter(app_argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[str, tuple[str, ...]] | None:
    """The Python that runs the command, with the flags it is given that change its sys.path; None: none found."""
    if not app_argv:
        return None
    path = _located(app_argv[0], env, cwd)
    if path is None:
        return None
    if _PYTHON.match(Path(app_argv[0]).name):
        flags: list[str] = []
        for word in app_argv[1:]:
            if not word.startswith("-") or word in ("-m", "-c", "-"):
                break
            flags.extend(flag for flag in ("-" + letter for letter in word[1:]) if flag in _FLAGS)
        return path, tuple(flags)
    try:
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split() if head.startswith(b"#!") else []
    if words and Path(words[0]).name == "env" and len(words) > 1:
        words = [shutil.which(words[1], path=env.get("PATH")) or words[1], *words[2:]]
    if words and _PYTHON.match(Path(words[0]).name) and os.path.isabs(words[0]):
        return words[0], tuple(word for word in words[1:] if word in _FLAGS)
    return None


def _located(word: str, env: Mapping[str, str], cwd: Path) -> str | None:
    if os.sep in word:
        path = Path(word) if os.path.isabs(word) else cwd / word
        return str(path) if path.is_file() else None
    return shutil.which(word, path=env.get("PATH"))


@functools.lru_cache(maxsize=16)
def _listed(python: str, flags: tuple[str, ...], env: tuple[tuple[str, str], ...], cwd: str, run: str) -> str | None:
    """Once per interpreter, flags, environment and folder in a run: every trace of a run shares it."""
    done = probed([python, *flags, "-c", _LIST], PROBE_S, Path(cwd), env=dict(env))
    if not done.ok:
        return None
    return hashlib.sha256(done.data).hexdigest()
