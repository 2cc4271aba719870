"""A GitHub Actions runner in miniature, for tests: runs a workflow's job, or a composite action, as a runner does.

Per step: its `if:` decided (a condition without a status function is `success() && (...)`), its `${{ }}` expressions
expanded (contexts inputs, github, steps, env, runner; literals, `.`/`[]`, `!`, `==`, `!=`, `&&`, `||`, always(),
success(), failure(), cancelled(); `==` on strings ignores case, as GitHub's does), `run:` as
`bash --noprofile --norc -eo pipefail FILE` in the workspace, with GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STEP_SUMMARY,
GITHUB_WORKSPACE, RUNNER_TEMP and, in a composite action, GITHUB_ACTION_PATH. `uses:` runs what it knows:
actions/checkout (the test made the workspace its checkout already), actions/upload-artifact (a copy under
`artifacts/<name>`), and composite actions that `actions` maps a `uses:` to. Anything else is an error, never a step
that silently passes."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||[!()\[\],.])|([A-Za-z_][A-Za-z0-9_-]*)|(\d+(?:\.\d+)?))")
STATUS = re.compile(r"\b(always|success|failure|cancelled)\(\)")
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class Unsupported(Exception):
    """What this runner does not know: the test must fail rather than pass a step it did not run."""


@dataclass
class Job:
    """What a job (or an action run on its own) left: its outcome, each step's, the summary and the artifacts."""

    workspace: Path
    temp: Path  # the job's own: its steps' files and its artifacts
    runner_temp: Path  # RUNNER_TEMP
    env: dict[str, str]
    github: dict[str, Any]
    actions: dict[str, Path] = field(default_factory=dict)
    failed: bool = False
    log: list[str] = field(default_factory=list)
    summary: str = ""
    outcomes: dict[str, str] = field(default_factory=dict)

    @property
    def artifacts(self) -> Path:
        return self.temp / "artifacts"


def evaluate(text: str, contexts: dict[str, Any], failed: bool = False) -> Any:
    tokens: list[tuple[str, str]] = []
    at, text = 0, text.strip()
    while at < len(text):
        match = TOKEN.match(text, at)
        if not match or match.end() == at:
            raise Unsupported(f"expression {text!r}: cannot read at {text[at:]!r}")
        kind = next(i for i, group in enumerate(match.groups()) if group is not None)
        tokens.append((("str", "op", "name", "num")[kind], match.group(kind + 1)))
        at = match.end()
    parser = _Parser(tokens, contexts, failed)
    value = parser.either()
    if parser.at != len(tokens):
        raise Unsupported(f"expression {text!r}: left over {tokens[parser.at :]}")
    return value


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and not (isinstance(value, float) and math.isnan(value))


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    try:
        return float(value.strip() or 0) if isinstance(value, str) else math.nan
    except ValueError:
        return math.nan


def loosely_equal(one: Any, other: Any) -> bool:
    if isinstance(one, str) and isinstance(other, str):
        return one.lower() == other.lower()
    return _number(one) == _number(other)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], contexts: dict[str, Any], failed: bool) -> None:
        self.tokens, self.contexts, self.failed, self.at = tokens, contexts, failed, 0

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) and self.tokens[self.at][0] == "op" else None

    def take(self, op: str) -> None:
        if self.peek() != op:
            raise Unsupported(f"expected {op!r} at token {self.at} of {self.tokens}")
        self.at += 1

    def either(self) -> Any:
        value = self.both()
        while self.peek() == "||":
            self.at += 1
            other = self.both()
            value = value if truthy(value) else other
        return value

    def both(self) -> Any:
        value = self.compared()
        while self.peek() == "&&":
            self.at += 1
            other = self.compared()
            value = other if truthy(value) else value
        return value

    def compared(self) -> Any:
        value = self.unary()
        if self.peek() in ("==", "!="):
            op = self.tokens[self.at][1]
            self.at += 1
            equal = loosely_equal(value, self.unary())
            return equal if op == "==" else not equal
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.at += 1
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        if self.peek() == "(":
            self.at += 1
            value = self.either()
            self.take(")")
            return value
        kind, word = self.tokens[self.at]
        self.at += 1
        if kind == "str":
            return word[1:-1].replace("''", "'")
        if kind == "num":
            return float(word)
        if kind != "name":
            raise Unsupported(f"unexpected {word!r}")
        if word in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[word]
        if self.peek() == "(":
            self.take("(")
            self.take(")")
            functions = {"always": True, "success": not self.failed, "failure": self.failed, "cancelled": False}
            if word not in functions:
                raise Unsupported(f"function {word}()")
            return functions[word]
        if word not in self.contexts:
            raise Unsupported(f"context {word!r}")
        value = self.contexts[word]
        while self.peek() in (".", "["):
            if self.tokens[self.at][1] == ".":
                self.at += 1
                key = self.tokens[self.at][1]
                self.at += 1
            else:
                self.at += 1
                key = as_text(self.either())
                self.take("]")
            value = value.get(key) if isinstance(value, dict) else None
        return value


def expand(text: str, contexts: dict[str, Any], failed: bool = False) -> str:
    return EXPRESSION.sub(lambda m: as_text(evaluate(m.group(1), contexts, failed)), text)


def condition(step: dict[str, Any], contexts: dict[str, Any], failed: bool) -> bool:
    raw = step.get("if")
    if raw is None:
        return not failed
    text = str(raw).strip()
    text = text[3:-2] if text.startswith("${{") and text.endswith("}}") else text
    if not STATUS.search(text):
        text = f"success() && ({text})"
    return truthy(evaluate(text, contexts, failed))


def _outputs_of(path: Path) -> dict[str, str]:
    """name=value lines and name<<DELIMITER blocks, as GITHUB_OUTPUT and GITHUB_ENV hold them."""
    found: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index + 1)
            found[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
            continue
        name, equals, value = line.partition("=")
        if not equals:
            raise Unsupported(f"{path.name}: a line that is neither name=value nor name<<DELIMITER: {line!r}")
        found[name] = value
        index += 1
    return found


def run_steps(job: Job, steps: list[dict[str, Any]], contexts: dict[str, Any], action_path: Path | None) -> bool:
    """The steps in order; True when one failed. Each step's outputs and outcome go into contexts['steps']."""
    failed = False
    for number, step in enumerate(steps):
        ident = step.get("id") or f"__step{number}"
        if not condition(step, contexts, failed):
            contexts["steps"][ident] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            job.outcomes[step.get("name") or ident] = "skipped"
            continue
        env = {key: expand(str(value), contexts, failed) for key, value in (step.get("env") or {}).items()}
        if "run" in step:
            ok, outputs = _run(job, step, env, contexts, action_path, number)
        elif "uses" in step:
            with_ = {key: expand(str(value), contexts, failed) for key, value in (step.get("with") or {}).items()}
            ok, outputs = _uses(job, str(step["uses"]), with_)
        else:
            raise Unsupported(f"a step with neither run nor uses: {step}")
        failed = failed or not ok
        outcome = "success" if ok else "failure"
        contexts["steps"][ident] = {"outputs": outputs, "outcome": outcome, "conclusion": outcome}
        job.outcomes[step.get("name") or ident] = outcome
    return failed


def _run(
    job: Job, step: dict[str, Any], env: dict[str, str], contexts: dict[str, Any], action_path: Path | None, n: int
) -> tuple[bool, dict[str, str]]:
    shell = step.get("shell", "bash" if action_path is None else None)
    if shell != "bash":
        raise Unsupported(f"shell {shell!r} (a composite action's run step must name its shell)")
    folder = job.temp / "steps" / f"{len(job.log)}-{n}"
    folder.mkdir(parents=True)
    script, output, summary, more_env = (folder / name for name in ("step.sh", "output", "summary.md", "env"))
    script.write_text(expand(str(step["run"]), contexts))
    files = {"GITHUB_OUTPUT": output, "GITHUB_STEP_SUMMARY": summary, "GITHUB_ENV": more_env}
    step_env = {**job.env, **{key: str(path) for key, path in files.items()}, **env}
    if action_path is not None:
        step_env["GITHUB_ACTION_PATH"] = str(action_path)
    cwd = job.workspace / expand(str(step.get("working-directory", ".")), contexts)
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]
    done = subprocess.run(command, cwd=cwd, env=step_env, capture_output=True, text=True, timeout=900)
    job.log.append(f"== {step.get('name') or step.get('id')}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    job.summary += summary.read_text(encoding="utf-8") if summary.exists() else ""
    job.env.update(_outputs_of(more_env))
    return done.returncode == 0, _outputs_of(output)


def _uses(job: Job, uses: str, with_: dict[str, str]) -> tuple[bool, dict[str, str]]:
    if uses in job.actions:
        return run_action(job, job.actions[uses], with_)
    name = uses.split("@")[0]
    if name == "actions/checkout":
        job.log.append(f"== {uses}: the workspace is the test's checkout")
        return True, {}
    if name == "actions/upload-artifact":
        return _upload(job, with_), {}
    raise Unsupported(f"uses: {uses}")


def _upload(job: Job, with_: dict[str, str]) -> bool:
    paths = [Path(line.strip()) for line in with_["path"].splitlines() if line.strip()]
    if any(not path.is_absolute() for path in paths):
        paths = [path if path.is_absolute() else job.workspace / path for path in paths]
    target = job.artifacts / with_.get("name", "artifact")
    if target.exists():
        job.log.append(f"== upload-artifact: an artifact named {target.name} exists already")
        return False
    present = [path for path in paths if path.exists()]
    if not present:
        job.log.append(f"== upload-artifact: no files found at {paths}")
        return with_.get("if-no-files-found", "warn") != "error"
    target.mkdir(parents=True)
    for path in present:
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, target / path.name)
    return True


def run_action(job: Job, folder: Path, with_: dict[str, str]) -> tuple[bool, dict[str, str]]:
    """A composite action: its inputs (defaults expanded, `with_` over them), its steps, its outputs."""
    meta = yaml.safe_load((folder / "action.yml").read_text(encoding="utf-8"))
    if meta["runs"]["using"] != "composite":
        raise Unsupported(f"runs.using {meta['runs']['using']}")
    declared = meta.get("inputs") or {}
    unknown = set(with_) - set(declared)
    if unknown:
        raise Unsupported(f"inputs the action does not declare: {sorted(unknown)}")
    base = {"github": {**job.github, "action_path": str(folder)}, "env": job.env, "runner": _runner(job), "steps": {}}
    inputs = {name: expand(str(spec.get("default", "")), base) for name, spec in declared.items()}
    missing = [name for name, spec in declared.items() if spec.get("required") and name not in with_]
    if missing:
        raise Unsupported(f"required inputs not given: {missing}")
    contexts = {**base, "inputs": {**inputs, **with_}}
    failed = run_steps(job, meta["runs"]["steps"], contexts, folder)
    outputs = {name: expand(str(spec["value"]), contexts) for name, spec in (meta.get("outputs") or {}).items()}
    return not failed, outputs


def _runner(job: Job) -> dict[str, str]:
    return {"temp": str(job.runner_temp), "os": "Linux", "arch": "X64"}


def run_job(job: Job, workflow: Path, name: str) -> bool:
    """One job of a workflow file; True when it succeeded."""
    data = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    spec = data["jobs"][name]
    contexts = {"github": job.github, "env": job.env, "runner": _runner(job), "steps": {}, "inputs": {}}
    job.failed = run_steps(job, spec["steps"], contexts, None)
    return not job.failed


def new_job(
    workspace: Path,
    temp: Path,
    env: dict[str, str],
    github: dict[str, Any],
    actions: dict[str, Path],
    runner_temp: Path | None = None,
) -> Job:
    """A job on this runner: the GITHUB_* variables a step sees from `github`; RUNNER_TEMP `runner_temp` (a
    self-hosted runner's, which jobs share one after another), else a folder of the job's own."""
    runner_temp = runner_temp or temp / "runner-temp"
    runner_temp.mkdir(parents=True, exist_ok=True)
    variables = {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_EVENT_NAME": str(github.get("event_name", "")),
        "GITHUB_SHA": str(github.get("sha", "")),
        "GITHUB_BASE_REF": str(github.get("base_ref", "")),
    }
    github = {**github, "workspace": str(workspace)}
    return Job(workspace, temp, runner_temp, env={**env, **variables}, github=github, actions=actions)
