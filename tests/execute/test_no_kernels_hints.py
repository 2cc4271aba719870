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
