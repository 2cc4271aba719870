"""A target that profiled nothing gets the closest exact kernel name, not a broad regex."""

from __future__ import annotations

import pytest

from ncucampaign.execute.attempt.classify import parse_console
from ncucampaign.execute.attempt.diagnose import diagnose
from ncucampaign.execute.rundir.status import Status
from ncucampaign.spec.model import TargetOptions
from tests.conftest import FIXTURES


@pytest.mark.slow  # runs the CLI end to end
def test_a_misspelled_kernel_gets_the_closest_exact_name_not_a_broad_regex() -> None:
    console = parse_console((FIXTURES / "logs" / "nomatch.log").read_text())
    for typo in ("rmsnrm_kernel", "rmsnrom_kernel"):
        hints = diagnose(TargetOptions(kernel_name=typo), console, Status.NO_KERNELS)
        assert hints[-1] == "kernel_name: rmsnorm_kernel", hints


def test_an_nvtx_typo_is_named_with_the_ranges_the_trace_saw_and_the_one_meant() -> None:
    """Before: `nvtx_include: decode_stpe/` got the thread-scope hint, pointing the wrong way."""
    from ncucampaign.execute.attempt.trace_hints import trace_hints

    stacks = [("<default domain>:decode_step", "<default domain>:layer", "<default domain>:mlp"), ()]
    (hint,) = trace_hints(TargetOptions(nvtx_include=("decode_stpe/",)), stacks, 0)
    assert hint == (
        "no NVTX range 'decode_stpe' in the discovery trace; ranges seen: decode_step, layer, mlp; "
        "did you mean 'decode_step/'?"
    )
    assert trace_hints(TargetOptions(nvtx_include=("decode_step/*/mlp/",)), stacks, 0) == []  # the names are there
    assert trace_hints(TargetOptions(nvtx_include=("regex:dec.*/",)), stacks, 0) == []


def test_a_launch_skip_past_the_end_says_how_many_launches_match() -> None:
    from ncucampaign.execute.attempt.trace_hints import trace_hints

    (hint,) = trace_hints(TargetOptions(kernel_name="k", launch_skip=40), [()], 12)
    assert hint == "launch_skip 40 is past the end: its filters match 12 launches in the discovery trace " \
        "(launch_skip 0 to 11 profile one of them)"  # fmt: skip


@pytest.mark.slow  # runs the CLI end to end
def test_a_run_says_the_nvtx_typo_of_a_target_decided_on_the_trace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.conftest import campaign_text, fake_env, run_cli
    from tests.execute.shared_campaigns import TRACE_TARGETS

    typo = "- name: typo\n  nvtx_include: decode_stpe/\n  kernel_name: rmsnorm_kernel\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(TRACE_TARGETS + typo))
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = json.loads((tmp_path / "runs" / "camp" / "latest" / "manifest.json").read_text())
    (record,) = [t for t in manifest["targets"] if t["name"] == "typo"]
    assert record["status"] == "no_kernels" and "did you mean 'decode_step/'?" in record["diagnosis"][0]
    assert not any("nvtx_push_pop_scope" in hint for hint in record["diagnosis"])
