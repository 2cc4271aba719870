"""action.yml on a GPU with real ncu (issue 82), run as a runner would (tests/cli/actions_runner.py): a repository of
two commits holding the decode workload (campaigns/decode_workload.py) and a campaign of its five kernel families,
one launch each; the second commit makes the MLP 1.2 times wider (DECODE_FFN_EXTRA's default 0 -> 1.2: the down
projection's GEMM reads 2.2 times the weight). The action installs ncucampaign from this checkout into a virtual
environment of its own (no registry on the GPU machine: PIP_NO_INDEX and PIP_FIND_LINKS=.whl, as docs/ci.md says for
an offline runner), checks the base out and runs ab. Expected: the job fails, verdict SLOWER on mlp_down_gemm.

On the GPU machine, from the repository root (wheels of the dependencies and setuptools in .whl):
    python3 tests/gpu/action_check.py OUT
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.cli.actions_runner import new_job, run_action  # noqa: E402

CAMPAIGN = """\
version: 1
name: gate
application:
  command: python3 workload.py --steps 6
  cwd: ..
defaults:
  metrics: [gpu__time_duration.sum, launch__registers_per_thread]
  cache_control: all
  clock_control: base
  timeout: 5m
  retries: 1
targets:
  - name: rmsnorm_mlp
    kernel_name: rmsnorm_kernel
    nvtx_include: "mlp]"
  - name: attention
    kernel_name: regex:.*(flash|fmha|sdpa|attention).*
    nvtx_include: "attention]"
  - name: mlp_down_gemm
    kernel_name: regex:nvjet
    nvtx_include: "mlp]"
    launch_skip: 1
  - name: qkv_gemm
    kernel_name: regex:nvjet
    nvtx_include: "attention]"
"""
GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT}, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"git {args}: {done.stderr}")
    return done.stdout.strip()


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)  # its results, wherever OUT is
    work = Path("/tmp/action_check")
    shutil.rmtree(work, ignore_errors=True)
    repo, bare, workspace = work / "repo", work / "origin.git", work / "workspace"
    (repo / "campaigns").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "campaigns" / "gate.yaml").write_text(CAMPAIGN)
    workload = (ROOT / "campaigns" / "decode_workload.py").read_text()
    (repo / "workload.py").write_text(workload)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "base", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo)
    git("checkout", "-q", "-b", "pr", cwd=repo)
    wider = workload.replace('os.environ.get("DECODE_FFN_EXTRA", "0")', 'os.environ.get("DECODE_FFN_EXTRA", "1.2")')
    assert wider != workload
    (repo / "workload.py").write_text(wider)
    git("commit", "-q", "-am", "a wider MLP", cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo)
    git("clone", "-q", "--bare", str(repo), str(bare), cwd=work)
    git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)
    git("clone", "-q", "--depth", "1", "--branch", "pr", f"file://{bare}", str(workspace), cwd=work)
    action = work / "action"
    shutil.copytree(ROOT, action, ignore=shutil.ignore_patterns(".git", ".whl", "__pycache__", "runs", ".venv"))
    # The runner's Python has the workload's packages installed, ncucampaign among them (the decode workload imports
    # ncucampaign.markers): a .pth file in its site-packages, where a venv does not look, as an install would be;
    # PYTHONPATH would reach the action's own environment too.
    site_packages = Path(
        subprocess.check_output(
            [sys.executable, "-c", "import site; print(site.getsitepackages()[0])"], text=True
        ).strip()
    )
    runner_pth = site_packages / "zz_action_check_runner.pth"
    runner_pth.write_text("".join(f"{part}\n" for part in os.environ.get("PYTHONPATH", "").split(os.pathsep) if part))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env |= {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(ROOT / ".whl")}
    event = {"pull_request": {"number": 1, "base": {"sha": base, "ref": "main"}, "head": {"sha": head}}}
    github = {"event_name": "pull_request", "sha": head, "base_ref": "main", "event": event}
    job = new_job(workspace, work / "job", env, github, {})
    started = time.monotonic()
    ok, outputs = run_action(job, action, {"campaign": "campaigns/gate.yaml", "args": "--pairs 1"})
    seconds = time.monotonic() - started
    runner_pth.unlink()
    (out / "action_log.txt").write_text("\n".join(job.log))
    (out / "action_summary.md").write_text(job.summary)
    result = {"job_ok": ok, "seconds": round(seconds, 1), "outputs": outputs, "steps": job.outcomes}
    (out / "action_result.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    print(job.summary[-3000:])
    expected = not ok and outputs.get("verdict") == "SLOWER" and "mlp_down_gemm" in outputs.get("gate-line", "")
    print("action check:", "as expected" if expected else "NOT as expected")
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())
