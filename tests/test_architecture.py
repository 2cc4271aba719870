"""The package layout is the pipeline: spec -> plan -> execute -> results -> backends -> discover -> commands -> cli.
A stage imports only from earlier stages (and the base modules); modules and functions stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ncucampaign"
STAGES = ("spec", "plan", "execute", "results", "backends", "discover", "commands", "cli")
BASE = {"errors", "escaping", "markers", "own_time", "__init__"}  # importable from anywhere; import no stage
MAX_MODULE_LINES = 280
MAX_FUNCTION_LINES = 45
MODULES = sorted(PACKAGE.rglob("*.py"))


def stage_of(module: str) -> str:
    """'ncucampaign.execute.shared.run' -> 'execute'; 'ncucampaign.cli' -> 'cli'; base modules -> 'base'."""
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


def stage_problems(module: str, imports: set[str]) -> list[str]:
    """Imports of `module` that point to a later stage (or from a base module into a stage)."""
    own, problems = stage_of(module), []
    for name in sorted(imports):
        other = stage_of(name)
        if name == "ncucampaign" or other == "base":
            if own == "base" and name not in ("ncucampaign", "ncucampaign.errors"):
                problems.append(f"{module} imports {name}")
        elif own == "base":
            problems.append(f"base module {module} imports the stage module {name}")
        elif STAGES.index(other) > STAGES.index(own):
            problems.append(f"{module} ({own}) imports {name} ({other})")
    return problems


EXECUTE = "ncucampaign.execute."
# execute/'s rooms (docs/architecture.md): what each may import of execute/ besides itself. The top of
# execute/ (context, units, open_run, runner, ...) is "top"; a room missing here may import any.
ROOM_MAY_IMPORT = {
    "rundir": set(),
    "process": {"rundir"},
    "attempt": {"rundir", "process"},
    "trace": {"rundir", "process", "attempt"},
    "shared": {"rundir", "process", "attempt", "trace"},
}
ROOMS = {path.name for path in (PACKAGE / "execute").iterdir() if (path / "__init__.py").is_file()}
BACKENDS = "ncucampaign.backends."
# backends/: what each sibling may import of the others. The contract (contract.py: the Backend
# protocol and its values) imports none and every sibling may import it; the batch room is named for no
# system and imports no system; a system imports the batch room; the local runner imports no other
# sibling; the table (systems.py) imports them all.
SIBLING_MAY_IMPORT = {
    "contract": set(),
    "local": {"contract"},
    "batch": {"contract"},
    "slurm": {"batch", "contract"},
    "k8s": {"batch", "contract"},
}


def room_of(module: str) -> str | None:
    """'ncucampaign.execute.shared.run' -> 'shared'; 'ncucampaign.execute.units' -> 'top'; else None."""
    if not module.startswith(EXECUTE):
        return None
    first = module[len(EXECUTE) :].split(".")[0]
    return first if first in ROOMS else "top"


def room_problems(module: str, imports: set[str]) -> list[str]:
    """execute/'s room rules: each room imports only the rooms below it (no backend: the stage rule)."""
    own, problems = room_of(module), []
    if own is None:
        return []
    for name in sorted(imports):
        other = room_of(name)
        if other is None or (other == own and own != "top"):
            continue
        allowed = ROOM_MAY_IMPORT.get(own)
        if allowed is not None and other not in allowed:
            problems.append(f"{module} ({own}) imports {name} ({other})")
    return problems


def backend_problems(module: str, imports: set[str]) -> list[str]:
    """backends/'s siblings: SIBLING_MAY_IMPORT."""
    if not module.startswith(BACKENDS):
        return []
    own, problems = module[len(BACKENDS) :].split(".")[0], []
    allowed = SIBLING_MAY_IMPORT.get(own)
    for name in sorted(imports):
        other = name[len(BACKENDS) :].split(".")[0] if name.startswith(BACKENDS) else None
        if allowed is not None and other is not None and other != own and other not in allowed:
            problems.append(f"{module} ({own}) imports {name} ({other})")
    return problems


def raw_imports(path: Path) -> set[str]:
    """Every module the file imports, anywhere in it (subprocess included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def process_problems(module: str, imports: set[str]) -> list[str]:
    """Only execute/process/ starts processes."""
    if module.startswith(EXECUTE + "process."):
        return []
    return [f"{module} imports {name}" for name in sorted(imports) if name in ("subprocess", "multiprocessing")]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_point_only_to_earlier_stages(path: Path) -> None:
    assert stage_problems(module_name(path), imported(path)) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_execute_rooms_import_only_what_they_may(path: Path) -> None:
    assert room_problems(module_name(path), imported(path)) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_only_the_process_room_starts_processes(path: Path) -> None:
    assert process_problems(module_name(path), raw_imports(path)) == []


def test_the_package_has_no_import_cycle() -> None:
    graph = {module_name(path): {n for n in imported(path) if n != "ncucampaign"} for path in MODULES}
    assert import_cycle(graph) is None


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the import graph, or None (function-local imports count: they hide a cycle)."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for following in sorted(graph.get(node, ())):
            found = visit(following, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    return next((c for c in (visit(node, []) for node in sorted(graph)) if c), None)


def test_the_checks_can_fail() -> None:
    """Each checker fed an import it must refuse (and one it must accept)."""
    assert stage_problems("ncucampaign.plan.share", {"ncucampaign.backends.local"})
    assert stage_problems("ncucampaign.errors", {"ncucampaign.plan.share"})
    assert not stage_problems("ncucampaign.backends.local", {"ncucampaign.plan.share", "ncucampaign.errors"})
    assert room_problems("ncucampaign.execute.attempt.attempts", {"ncucampaign.execute.shared.run"})
    assert stage_problems("ncucampaign.execute.attempt.attempts", {"ncucampaign.backends.batch.files"})
    assert stage_problems("ncucampaign.results.reading.runs", {"ncucampaign.backends.systems"})
    assert room_problems("ncucampaign.execute.attempt.attempts", {"ncucampaign.execute.shared"})
    assert stage_problems("ncucampaign.execute.units", {"ncucampaign.backends.batch.task"})
    assert backend_problems("ncucampaign.backends.batch.collect", {"ncucampaign.backends.k8s.api"})
    assert backend_problems("ncucampaign.backends.slurm.submit", {"ncucampaign.backends.k8s.api"})
    assert backend_problems("ncucampaign.backends.local", {"ncucampaign.backends.batch.task"})
    assert not backend_problems("ncucampaign.backends.k8s.task", {"ncucampaign.backends.batch.files"})
    assert not backend_problems("ncucampaign.backends.systems", {"ncucampaign.backends.k8s.system"})
    assert stage_problems("ncucampaign.execute.shared.run", {"ncucampaign.backends.local"})
    assert room_problems("ncucampaign.execute.rundir.book", {"ncucampaign.execute.process.groups"})
    assert not room_problems("ncucampaign.execute.shared.run", {"ncucampaign.execute.attempt.attempts"})
    assert process_problems("ncucampaign.execute.attempt.ncu_checks", {"subprocess"})
    assert not process_problems("ncucampaign.execute.process.groups", {"subprocess"})
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


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


# results/'s rooms, the ground first: each may import only the rooms before it (reading/ none).
RESULTS = "ncucampaign.results."
RESULTS_ORDER = ("reading", "gate", "history", "tables", "page")


def results_problems(module: str, imports: set[str]) -> list[str]:
    """An import of a results room by a room before it (an upward arrow)."""
    own = module[len(RESULTS) :].split(".")[0] if module.startswith(RESULTS) else None
    if own not in RESULTS_ORDER:
        return []
    rooms = {name: name[len(RESULTS) :].split(".")[0] for name in imports if name.startswith(RESULTS)}
    return [
        f"{module} ({own}) imports {name} ({room})"
        for name, room in sorted(rooms.items())
        if room in RESULTS_ORDER and RESULTS_ORDER.index(room) > RESULTS_ORDER.index(own)
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_results_rooms_import_only_the_rooms_below_them(path: Path) -> None:
    assert results_problems(module_name(path), imported(path)) == []


def test_the_results_rule_can_fail() -> None:
    assert results_problems("ncucampaign.results.reading.reader", {"ncucampaign.results.page.html"})
    assert results_problems("ncucampaign.results.gate.compare", {"ncucampaign.results.history.reference"})
    assert not results_problems("ncucampaign.results.page.html", {"ncucampaign.results.reading.runs"})


def test_results_is_in_rooms_each_named_where_the_layout_is_told() -> None:
    """At most 8 modules flat in results/, at most 8 in gate/ and 10 in another room, and every room
    named in results/__init__.py and docs/architecture.md."""
    results = PACKAGE / "results"
    flat = [p.name for p in results.glob("*.py") if p.name != "__init__.py"]
    rooms = sorted(p.name for p in results.iterdir() if (p / "__init__.py").is_file())
    assert len(flat) <= 8, flat
    assert len(rooms) >= 5 and all(len(list((results / r).glob("*.py"))) - 1 <= 10 for r in rooms)
    assert len(list((results / "gate").glob("*.py"))) - 1 <= 8
    told = (results / "__init__.py").read_text(), (PACKAGE.parent / "docs" / "architecture.md").read_text()
    assert [r for r in rooms if not all(f"{r}/" in text for text in told)] == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_backends_are_siblings(path: Path) -> None:
    assert backend_problems(module_name(path), imported(path)) == []


# Where the word for Kubernetes' backend may be written: its own folder and command side,
# the campaign's section (spec/) and the manifest's list of backends.
KUBERNETES_PLACES = ("backends/k8s/", "spec/")


def test_only_the_kubernetes_backend_names_it() -> None:
    naming = [
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if '"kubernetes"' in path.read_text() and not str(path.relative_to(PACKAGE)).startswith(KUBERNETES_PLACES)
    ]
    assert naming == []


def test_the_plan_command_stays_pure_and_commands_register_themselves() -> None:
    """commands/plan.py imported execute/ (the backend table, RunRequest); a command was a line in cli.COMMANDS,
    an add_parser and a set_defaults(handler=...) besides its module."""
    assert [n for n in imported(PACKAGE / "commands" / "plan.py") if n.startswith("ncucampaign.execute")] == []
    commands = sorted((PACKAGE / "commands").rglob("*.py"))
    assert [p.name for p in commands if "set_defaults(handler=" in p.read_text()] == []
