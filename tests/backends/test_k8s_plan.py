"""plan --k8s: the Indexed Job a campaign becomes, validated by the official client's models
(the API-server emulator accepts what a real one refuses), and the flags and the campaign's
`kubernetes:` section that make it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ncucampaign.backends.k8s.job import job_name
from ncucampaign.errors import EnvironmentProblem
from tests.conftest import ROOT, fake_env, run_cli

pytest.importorskip("kubernetes")

from ncucampaign.backends.k8s.api import validated_job

DECODE = ROOT / "campaigns" / "decode.yaml"


def planned(*args: str, cwd: Path = ROOT) -> dict:
    done = run_cli("plan", str(DECODE), "--k8s", *args, cwd=cwd, env=fake_env())
    assert done.returncode == 0, done.stderr
    (job,) = list(yaml.safe_load_all(done.stdout))
    return job


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_decode_becomes_one_valid_indexed_job() -> None:
    piped = subprocess.run(
        f"{sys.executable} -m ncucampaign plan campaigns/decode.yaml --k8s | "
        f"{sys.executable} -c 'import yaml,sys; list(yaml.safe_load_all(sys.stdin))'",
        shell=True, cwd=ROOT, env=fake_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr  # the issue's own check, as written
    job = planned()
    validated_job(job)
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    units = run_cli("plan", str(DECODE), "--slurm", cwd=ROOT, env=fake_env()).stdout
    arrays = [int(line.rsplit("-", 1)[1]) + 1 for line in units.splitlines() if line.startswith("#SBATCH --array=0-")]
    assert spec["completions"] == sum(arrays)  # one index per task of Slurm's arrays (a trace pool's second stage)
    assert len(arrays) == 2 and "--dependency=afterany:<job 1>_" in units  # Slurm holds the second stage back
    assert spec["backoffLimitPerIndex"] == 1 and spec["parallelism"] == 4  # retries: 1; kubernetes.parallelism
    (fail_index, ignore) = spec["podFailurePolicy"]["rules"]
    assert fail_index["action"] == "FailIndex" and fail_index["onExitCodes"]["values"] == [1, 2]
    assert ignore == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert container["command"][:5] == ["python3", "-m", "ncucampaign", "k8s-task", "/runs/decode/plan"]
    assert pod["volumes"] == [{"name": "runs", "persistentVolumeClaim": {"claimName": "ncucampaign-runs"}}]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and pod["restartPolicy"] == "Never"
    assert "suspend" not in spec and "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_flags_win_over_the_section() -> None:
    job = planned(
        "--k8s-image", "mine:1", "--k8s-namespace", "prof", "--k8s-volume", "nfs:/mnt/runs", "--k8s-queue",
        "gpu-queue", "--k8s-node-selector", "pool=h200", "--k8s-toleration", "dedicated=prof:NoExecute",
        "--k8s-service-account", "profiler", "--k8s-parallelism", "2",
    )  # fmt: skip
    validated_job(job)
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["namespace"] == "prof" and pod["containers"][0]["image"] == "mine:1"
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "nfs"
    assert pod["containers"][0]["command"][4] == "/mnt/runs/decode/plan"  # run directories go on the volume
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true", "pool": "h200"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},  # the section's, then the flag's
        {"key": "dedicated", "operator": "Equal", "value": "prof", "effect": "NoExecute"},
    ]
    assert pod["serviceAccountName"] == "profiler" and job["spec"]["parallelism"] == 2
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue" and job["spec"]["suspend"] is True


@pytest.mark.parametrize(
    ("mutate", "said"),
    [
        (lambda j: j["spec"].__setitem__("completionz", 3), ".spec.completionz: not a field"),
        (lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": 1}),
         "valid string"),
        (lambda j: j["spec"]["template"]["spec"]["containers"][0].pop("name"), "V1Container"),
        (lambda j: j["spec"].__setitem__("completions", "all"), "valid integer"),
        (lambda j: j["spec"]["podFailurePolicy"]["rules"][0].pop("action"), "V1PodFailurePolicyRule"),
    ],
)  # fmt: skip
@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_the_clients_models_refuse_a_wrong_field(mutate, said: str) -> None:
    job = copy.deepcopy(planned())
    mutate(job)
    with pytest.raises(EnvironmentProblem, match="not valid for the Kubernetes client") as caught:
        validated_job(job)
    assert said in str(caught.value)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--k8s-volume", "nfs"), "--k8s-volume 'nfs': write it as CLAIM:PATH"),
        (("--k8s-namespace", "Not_A_Name"), "--k8s: namespace: a Kubernetes name"),
        (("--k8s-toleration", "noeffect"), "KEY[=VALUE]:EFFECT"),
        (("--k8s-toleration", "k:Sometimes"), "--k8s: tolerations.1.effect: must be 'NoSchedule'"),
        (("--k8s-node-selector", "gpu=H200\n"), "--k8s: node_selector.gpu: a Kubernetes label value"),
        (("--k8s-node-selector", "g pu=H200"), "--k8s: node_selector.g pu: a Kubernetes label key"),
        (("--k8s-toleration", "\x1bkey:NoSchedule"), "--k8s: tolerations.1.key: a Kubernetes label key"),
        (("--k8s-service-account", "a..b"), "--k8s: service_account: a Kubernetes name"),
        (("--k8s-image", " "), "--k8s: image: an image reference"),
    ],
)
@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_bad_flags_are_usage_errors(args: tuple[str, ...], said: str) -> None:
    done = run_cli("plan", str(DECODE), "--k8s", *args, cwd=ROOT, env=fake_env())
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_without_an_image_or_a_volume_it_says_what_is_missing(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: k\n")
    done = run_cli("plan", str(campaign), "--k8s", cwd=tmp_path)
    assert done.returncode == 2 and "--k8s needs the container image" in done.stderr
    done = run_cli("plan", str(campaign), "--k8s", "--k8s-image", "x", cwd=tmp_path)
    assert done.returncode == 2 and "--k8s needs a ReadWriteMany volume" in done.stderr
    done = run_cli("plan", str(campaign), "--k8s-image", "x", cwd=tmp_path)
    assert done.returncode == 2 and "--k8s-image goes with --k8s" in done.stderr
    done = run_cli("run", str(campaign), "--k8s", "--slurm", cwd=tmp_path)
    assert done.returncode == 2 and "--slurm and --k8s: choose one" in done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_misspelt_key_of_the_section_is_named(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: k\n")
    campaign.write_text(campaign.read_text() + "kubernetes:\n  imag: x\n")
    done = run_cli("validate", str(campaign), cwd=tmp_path)
    assert done.returncode == 2 and "kubernetes.imag: unknown key 'imag'; did you mean 'image'?" in done.stderr


def test_job_names_are_dns_labels_and_differ_by_run_directory() -> None:
    name = job_name("A_Very_Long_Campaign_Name.With.Dots" * 3, "20261201-120000", 12, Path("/runs/x"))
    assert len(name) <= 52 and name == name.lower() and name.endswith("-12")
    assert all(ch.isalnum() or ch == "-" for ch in name) and not name.startswith("-")
    assert job_name("c", "20261201-120000", 1, Path("/a")) != job_name("c", "20261201-120000", 1, Path("/b"))


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_run_without_the_client_says_how_to_install_it_and_makes_no_run(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    campaign.write_text(campaign.read_text() + f"kubernetes: {{image: x, volume: {{claim: r, path: '{tmp_path}'}}}}\n")
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "kubernetes.py").write_text("raise ImportError('not installed')\n")  # as if absent
    env = fake_env()
    env["PYTHONPATH"] = f"{shadow}:{env['PYTHONPATH']}"
    done = run_cli("run", str(campaign), "--k8s", cwd=tmp_path, env=env)
    assert done.returncode == 3 and "pip install 'ncucampaign[k8s]'" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_the_sections_names_are_explained_in_kubernetes_words(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: k\n")
    bad = "kubernetes: {namespace: Prof, volume: {claim: Runs_1, path: runs}, queue: 'a b'}\n"
    campaign.write_text(campaign.read_text() + bad)
    done = run_cli("validate", str(campaign), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    for said in ("kubernetes.namespace: a Kubernetes name", "kubernetes.volume.claim: a Kubernetes name",
                 "kubernetes.volume.path: an absolute path", "kubernetes.queue: a label value"):  # fmt: skip
        assert said in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ('{node_selector: {"gpu\\n": x}}', "kubernetes.node_selector.gpu\\n: a Kubernetes label key"),
        ('{node_selector: {gpu: "H200\\n"}}', "kubernetes.node_selector.gpu: a Kubernetes label value"),
        ('{tolerations: [{key: "\\ek", operator: Exists}]}', "kubernetes.tolerations[0].key: a Kubernetes label key"),
        ("{tolerations: [{key: k, operator: Exists, value: v}]}", "operator 'Exists' has no value"),
        ("{service_account: a..b}", "kubernetes.service_account: a Kubernetes name"),
        ("{image: ' '}", "kubernetes.image: an image reference"),
        ("{python: ''}", "kubernetes.python: a command in the image"),
    ],
)
@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_values_kubernetes_refuses_are_validation_errors(
    tmp_path: Path, write_campaign, section: str, said: str
) -> None:
    """Before the fix: each planned with exit 0, and only the API server refused it, at submission (exit 3)."""
    campaign = write_campaign("- name: a\n  kernel_name: k\n")
    campaign.write_text(campaign.read_text() + f"kubernetes: {section}\n")
    done = run_cli("validate", str(campaign), cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert f"{campaign}:" in done.stderr  # file:line: key.path: message
