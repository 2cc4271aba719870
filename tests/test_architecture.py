"""The package layout is the pipeline: spec -> plan -> execute -> results -> discover -> commands -> cli.
A stage imports only from earlier stages (and the base modules); modules and functions stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ncucampaign"
STAGES = ("spec", "plan", "execute", "results", "discover", "commands", "cli")
BASE = {"errors", "markers", "__init__"}  # importable from anywhere; import no stage
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 50
MODULES = sorted(PACKAGE.rglob("*.py"))


def stage_of(module: str) -> str:
    """'ncucampaign.execute.runner' -> 'execute'; 'ncucampaign.cli' -> 'cli'; base modules -> 'base'."""
    part = module.split(".")[1] if "." in module else "__init__"
    if part in ("__main__", "_entry"):
        return "cli"  # `python -m ncucampaign` and the console script are the command line
    return "base" if part in BASE else part


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(relative.parts)


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    # The package's public API (`ncucampaign.load_run`) is resolved on first use, inside the package's
    # module __getattr__: importing the package still imports no stage.
    nodes = tree.body if module_name(path) == "ncucampaign.__init__" else list(ast.walk(tree))
    names = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name == "ncucampaign" or name.startswith("ncucampaign.")}


def test_every_module_belongs_to_a_stage_or_the_base() -> None:
    for path in MODULES:
        assert stage_of(module_name(path)) in (*STAGES, "base"), path


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_only_to_earlier_stages(path: Path) -> None:
    own = stage_of(module_name(path))
    for name in imported(path):
        other = stage_of(name)
        if name == "ncucampaign" or other == "base":
            assert own != "base" or name in ("ncucampaign", "ncucampaign.errors"), f"{path} imports {name}"
            continue
        assert own != "base", f"base module {path} imports the stage module {name}"
        assert STAGES.index(other) <= STAGES.index(own), f"{module_name(path)} ({own}) imports {name} ({other})"


def test_the_stage_check_can_fail() -> None:
    assert STAGES.index(stage_of("ncucampaign.results.runs")) > STAGES.index(stage_of("ncucampaign.execute.runner"))
    assert stage_of("ncucampaign.errors") == "base"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_modules_are_small(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path}: {lines} lines"


def function_lengths() -> list[tuple[int, str]]:
    found = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((length, f"{module_name(path)}.{node.name}"))
    return sorted(found, reverse=True)


def test_functions_are_small() -> None:
    too_long = [(length, name) for length, name in function_lengths() if length > MAX_FUNCTION_LINES]
    assert not too_long, too_long


if __name__ == "__main__":  # the closing note's "largest functions"
    for length, name in function_lengths()[:5]:
        print(f"{length:4d}  {name}")
