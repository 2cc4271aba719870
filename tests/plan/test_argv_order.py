"""ncu's options come out in OPTION_SPECS order and only where set: argv.py reads only the fields an invocation
sets, which is right only while every TargetOptions field defaults to None."""

from __future__ import annotations

from typing import Any

from ncucampaign.plan.argv import _SPECS, _given
from ncucampaign.spec.model import TargetOptions


def test_every_option_field_defaults_to_none() -> None:
    """A field with another default would hold a value without being set: argv.py would leave it out."""
    assert {
        name: field.default for name, field in TargetOptions.model_fields.items() if field.default is not None
    } == {}


def _every_field(options: TargetOptions) -> list[tuple[Any, Any]]:
    values = options.__dict__
    return [(spec, values[field]) for spec, field in _SPECS if values[field] is not None]


def test_the_options_set_come_in_spec_order_however_they_were_made() -> None:
    made = [
        TargetOptions.model_validate({"launch_count": 1, "sections": ["SpeedOfLight"], "kernel_name": "regex:gemm"}),
        TargetOptions.model_construct(kill=True, launch_skip=3, nvtx_include=("a/",), cache_control="all"),
        TargetOptions.model_validate({"set": "full"}).model_copy(update={"launch_skip": 2, "kernel_id": "::k:2"}),
        TargetOptions.model_construct(),
    ]
    for options in made:
        given = _given(options)
        assert given == _every_field(options)
    assert [spec.key for spec, _ in _given(made[1])] == [spec.key for spec, _ in _every_field(made[1])]
    assert len(_given(made[1])) == 4
