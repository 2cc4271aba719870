"""The backend seam stays as narrow as its work: Backend holds what every backend does (at most 8 members), batch
systems add theirs in BatchSystem, the local backend writes no member that only returns None or raises (the
contract's defaults stand for those), nothing recovers a backend's settings or a tracer's memo by isinstance or
assert, and the run directory's records name no backend."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "ncucampaign"


def class_members(path: Path, name: str) -> dict[str, ast.AST]:
    tree = ast.parse(path.read_text())
    found = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)
    members: dict[str, ast.AST] = {}
    for node in found.body:
        if isinstance(node, ast.FunctionDef):
            members[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members[node.target.id] = node
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            members[node.targets[0].id] = node
    return members


def does_nothing(function: ast.AST) -> bool:
    """A body that only returns None, raises, or is `...` (a docstring aside)."""
    assert isinstance(function, ast.FunctionDef)
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return True
    only = body[0] if len(body) == 1 else None
    returns_none = isinstance(only, ast.Return) and (
        only.value is None or (isinstance(only.value, ast.Constant) and only.value.value is None)
    )
    return returns_none or isinstance(only, ast.Raise)


def test_the_backend_contract_holds_at_most_eight_members() -> None:
    members = class_members(PACKAGE / "backends" / "contract.py", "Backend")
    assert len(members) <= 8, sorted(members)
    assert {"active_jobs", "task_index", "task_placement"} <= set(
        class_members(PACKAGE / "backends" / "contract.py", "BatchSystem")
    )


def test_the_local_backend_writes_no_member_that_does_nothing() -> None:
    methods = {n: m for n, m in class_members(PACKAGE / "backends" / "local.py", "LocalBackend").items()
               if isinstance(m, ast.FunctionDef)}  # fmt: skip
    assert methods and [name for name, method in methods.items() if does_nothing(method)] == []


def test_the_check_can_fail() -> None:
    tree = ast.parse("def a(self):\n    return None\ndef b(self):\n    raise X\ndef c(self):\n    return 1\n")
    assert [does_nothing(f) for f in tree.body] == [True, True, False]


def test_nothing_recovers_a_backends_settings_or_a_tracers_memo_by_isinstance_or_assert() -> None:
    recovering = re.compile(r"(isinstance|assert isinstance)\([^)]*\.(settings|memo)\b")
    found = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if recovering.search(p.read_text())]
    assert found == []


def test_the_run_directorys_records_name_no_backend() -> None:
    naming = re.compile(r"Literal\[[^\]]*\"(slurm|kubernetes)\"|^\s+(slurm|slurm_arrays|kubernetes)\s*:", re.M)
    found = [
        str(p.relative_to(PACKAGE))
        for p in (PACKAGE / "execute" / "rundir").rglob("*.py")
        if naming.search(p.read_text())
    ]
    assert found == []
