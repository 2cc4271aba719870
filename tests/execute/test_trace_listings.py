"""What ncu listed of a cached discovery trace, kept beside it (execute/trace/listings.py): read back
exactly, and never believed when it is of another file or not what was written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ncucampaign.execute.trace.listings import decode, encode
from ncucampaign.plan.share.launches import Launch

STAMP = [64768, 1234, 5678, 1_700_000_000_000_000_000]
SYMBOL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEvT0_T1_"
EVERY = [
    Launch(0, SYMBOL, (1, 1, 1), (128, 1, 1), ()),
    Launch(1, "rmsnorm_kernel", (8, 1, 1), (256, 1, 1), ("default:decode_step", "default:layer")),
    Launch(2, SYMBOL, (1, 1, 1), (128, 1, 1), ("default:decode_step",)),
]
LISTED = {
    (): EVERY,
    ("--kernel-name", "rmsnorm_kernel"): [EVERY[1]],
    ("<function names>",): [Launch(x.id, "vectorized_elementwise_kernel", x.grid, x.block, x.nvtx) for x in EVERY],
    ("--nvtx", "--nvtx-include", "decode_step/"): [],
}


def kept() -> dict[str, Any]:
    return json.loads(encode(LISTED, STAMP).model_dump_json())  # as a later run reads it


def test_kept_listings_read_back_as_listed_and_hold_each_string_once() -> None:
    data = kept()
    assert decode(data, STAMP) == LISTED
    assert data["strings"].count(SYMBOL) == 1


def test_listings_of_another_file_are_not_used() -> None:
    assert decode(kept(), [*STAMP[:3], STAMP[3] + 1]) == {}  # the trace rewritten since


def damaged(change) -> dict[str, Any]:
    data = kept()
    change(data)
    return data


@pytest.mark.parametrize(
    "data",
    [
        damaged(lambda d: d["listings"][0][1].pop()),  # a launch lost: the trace would seem to end sooner
        damaged(lambda d: d["strings"].__setitem__(0, "other_kernel")),
        damaged(lambda d: d.pop("digest")),
        damaged(lambda d: d.__setitem__("listings", {"a": 1})),
        damaged(lambda d: d.__setitem__("strings", [1, 2])),
        None,
        [],
        "text",
        {"stamp": STAMP},
    ],
    ids=[
        "launch-lost",
        "string-changed",
        "no-digest",
        "listings-not-a-list",
        "strings-not-text",
        "null",
        "list",
        "str",
        "stamp-only",
    ],
)
def test_damaged_kept_listings_are_no_listings(data: object) -> None:
    assert decode(data, STAMP) == {}


@pytest.mark.parametrize(
    "row",
    [[0, 99, 1, 2, []], [0, 0, 1, 2, [True]], [-1, 0, 1, 2, []], [0, 0, 1, 2], ["0", 0, 1, 2, []], [0, 0, 1, 2, {}]],
    ids=["string-out-of-range", "bool", "negative", "short", "id-as-text", "nvtx-not-a-list"],
)
def test_a_row_encode_never_writes_is_no_listing_even_with_its_digest(row: list[Any]) -> None:
    from ncucampaign.execute.trace import listings

    data = kept()
    data["listings"][0][1][0] = row
    data["digest"] = listings._digest(data["strings"], data["listings"])
    assert decode(data, STAMP) == {}


def test_listings_kept_before_nvtx_names_were_read_as_now_are_listed_again() -> None:
    """A file whose digest was made without the listing format (before CCCL's messages were cut from their
    ranges' names) holds names a new listing of the same trace would not: it is not believed."""
    import hashlib

    data = kept()
    before = json.dumps([data["strings"], data["listings"]], separators=(",", ":"))
    data["digest"] = hashlib.sha256(before.encode()).hexdigest()
    assert decode(data, STAMP) == {}
