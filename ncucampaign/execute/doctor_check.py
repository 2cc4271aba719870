"""One check of `doctor` (execute/doctor.py), a value: results/reading/reader.py makes the report reader's."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """One check's outcome: state ok, warn (runs will work; something to know), fail (runs will fail)
    or skip (it could not be asked: an earlier check failed). `certain`: a failure that every target
    would meet too (run refuses to start on it); an uncertain one (a probe that timed out) is a note."""

    name: str
    state: str
    detail: str
    fix: str = ""
    certain: bool = True
