"""Selecting launches of an Nsight Systems trace as ncu's filters do (plan/share/nsys_select.py), and
reading them from its SQLite export (execute/trace/nsys_export.py)."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.trace.listings import keep_launches, kept_launches
from ncucampaign.execute.trace.nsys_export import Bounds, ExportRefused, read_export
from ncucampaign.plan.share.launches import Dims, Launch, parse_raw_csv
from ncucampaign.plan.share.nsys_select import (
    as_launch,
    name_test,
    selected,
    selector,
    why_not_launcher,
    why_not_nsys,
)
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_grammar import DEFAULT_DOMAIN
from tests.conftest import FIXTURES


def traced(id: int, symbol: str, function: str, grid: Dims, block: Dims, stack: tuple[str, ...]) -> Launch:
    """A launch as an Nsight Systems trace holds it: its ranges of the default domain, its function name."""
    return Launch(id, symbol, grid, block, tuple(f"{DEFAULT_DOMAIN}:{name}" for name in stack), function)


STACKS = [("decode_step", "layer", "attention"), ("decode_step", "layer", "mlp"), ("prefill",), ()]
LAUNCHES = [traced(i, f"_Z3k{i}v", f"k{i}", (1, 1, 1), (32, 1, 1), stack) for i, stack in enumerate(STACKS)]


def read_all(path: Path) -> list[Launch]:
    """Every launch of an export (the trace's filters select all of them)."""
    return read_export(path, lambda _launch: True, 10**6, Bounds())


def options(**values: Any) -> TargetOptions:
    return TargetOptions.model_construct(**values)


@pytest.mark.parametrize(
    ("expression", "picked"),
    [
        ("decode_step/", [0, 1]),
        ("layer/", [0, 1]),  # anywhere in the stack
        ("[layer/", []),  # '[': at the bottom
        ("[decode_step/", [0, 1]),
        ("mlp]", [1]),  # ']': on top
        ("layer]", []),
        ("decode_step/*/attention/", [0]),  # '*': zero or more ranges between
        ("decode_step/*/attention", [0]),
        ("layer/*/attention/", [0]),
        ("decode_step/+/mlp", [1]),  # '+': exactly one between
        ("layer/+/mlp", []),
        ("layer/mlp/", [1]),
        ("decode_step/mlp/", []),  # named one after the other: directly nested
        ("prefill/", [2]),
    ],
)
def test_push_pop_expressions_select_as_ncu_documents_them(expression: str, picked: list[int]) -> None:
    o = options(nvtx=True, nvtx_include=(expression,))
    assert why_not_nsys(o, {}) is None
    assert selected(LAUNCHES, o) == picked


def test_includes_are_ored_and_an_exclude_removes_from_them() -> None:
    assert selected(LAUNCHES, options(nvtx_include=("prefill/", "attention]"))) == [0, 2]
    assert selected(LAUNCHES, options(nvtx_include=("decode_step/",), nvtx_exclude=("mlp]",))) == [0]
    assert selected(LAUNCHES, options(nvtx_exclude=("decode_step/",))) == [2, 3]


def test_kernel_names_match_the_function_name_or_with_base_mangled_the_symbol() -> None:
    assert selected(LAUNCHES, options(kernel_name="k1")) == [1]
    assert selected(LAUNCHES, options(kernel_name="k")) == []  # exact: the whole function name
    assert selected(LAUNCHES, options(kernel_name="regex:k[23]")) == [2, 3]  # a search
    assert selected(LAUNCHES, options(kernel_name="regex:^_Z", kernel_name_base="mangled")) == [0, 1, 2, 3]
    assert selected(LAUNCHES, options(kernel_name="regex:^_Z")) == []
    both = options(kernel_name="regex:k[01]", nvtx_include=("mlp]",))
    assert selected(LAUNCHES, both) == [1]


@pytest.mark.parametrize(
    ("values", "env", "why"),
    [
        ({"nvtx_include": ("regex:.*decode.*/",)}, {}, "matched only by ncu"),
        ({"nvtx_include": ("Domain@range/",)}, {}, "names a domain"),
        ({"nvtx_include": ("NCCL@ncclAllReduce/",)}, {}, "names a domain"),  # placed otherwise by nsys
        ({"nvtx_include": ("CCCL@cub::DeviceReduce::Sum/",)}, {}, None),  # placed alike: docs/ncu-behaviour.md
        ({"nvtx_include": ("CCCL@a_start_end_range",)}, {}, "matched only by ncu"),
        ({"nvtx_include": ("a_start_end_range",)}, {}, "matched only by ncu"),
        ({"nvtx_exclude": (r"A\[i\]/",)}, {}, "matched only by ncu"),
        ({"kernel_name_base": "demangled"}, {}, "--kernel-name-base demangled"),
        ({"python_include": ("app.py@step",)}, {}, "python_include"),
        ({"call_stack_type": ("python",)}, {}, "call_stack_type"),
        ({"target_processes": "application-only"}, {}, "--target-processes"),
        ({"nvtx_push_pop_scope": "process"}, {}, "--nvtx-push-pop-scope"),
        ({"devices": (1,)}, {}, "--devices"),
        ({"devices": (0,)}, {"CUDA_VISIBLE_DEVICES": "3"}, None),  # --gpus: every device of its view
        ({"devices": (0, 1)}, {"CUDA_VISIBLE_DEVICES": "2,3"}, None),
        ({"kernel_name": "regex:x", "nvtx_include": ("a/*/b]",), "target_processes": "all"}, {}, None),
    ],
)
def test_what_only_ncu_can_select_keeps_the_ncu_trace(
    values: dict[str, Any], env: dict[str, str], why: str | None
) -> None:
    found = why_not_nsys(options(**values), env)
    assert found == why if why is None else why in (found or "")


@pytest.mark.parametrize(
    ("argv", "launcher"),
    [
        (
            ["python3", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1", "w.py"],
            "torch.distributed.run",
        ),
        (["/usr/bin/torchrun", "w.py"], "torchrun"),
        (["python3", "train.py", "--nproc-per-node", "2"], "--nproc-per-node"),
        (["python3", "decode.py", "--steps", "4"], None),
    ],
)
def test_an_application_a_multi_process_launcher_starts_keeps_the_ncu_trace(
    argv: list[str], launcher: str | None
) -> None:
    why = why_not_launcher(argv)
    assert why == (f"a multi-process launcher ({launcher}) starts the application" if launcher else None)


def test_a_traced_launch_reads_as_ncu_lists_it() -> None:
    """The identity compared when a split is verified: symbol, grid, block and NVTX stack as ncu's raw
    CSV page has them (a real listing from the H200)."""
    listed = parse_raw_csv((FIXTURES / "csv" / "nvtx_rangefilter_raw.csv").read_text())[0]
    stack = tuple(entry.split(":", 1)[1] for entry in listed.nvtx)
    held = traced(7, listed.symbol, "f", listed.grid, listed.block, stack)
    assert as_launch(listed.id, held) == listed
    assert as_launch(0, held, by_function=True).symbol == "f"


# --- the export ----------------------------------------------------------------------------------------

SCHEMA = (
    "create table StringIds (id integer primary key, value text);"
    "create table CUPTI_ACTIVITY_KIND_KERNEL (start int, end int, correlationId int, globalPid int, gridX int,"
    " gridY int, gridZ int, blockX int, blockY int, blockZ int, shortName int, mangledName int, graphNodeId int);"
    "create table CUPTI_ACTIVITY_KIND_RUNTIME (start int, end int, correlationId int, globalTid int);"
    "create table NVTX_EVENTS (start int, end int, eventType int, text text, globalTid int, domainId int,"
    " textId int);"
)
PID, THREAD, OTHER = 7 << 24, (7 << 24) + 7, (7 << 24) + 8


def export(
    tmp_path: Path,
    kernels: list[tuple],
    ranges: list[tuple],
    strings: dict[int, str] | None = None,
    domains: dict[int, str] | None = None,
) -> Path:
    """kernels: (correlationId, called at, thread, function, symbol or None, graph node, pid);
    ranges: (start, end, text, thread, domain, textId); domains: each created domain's name by its ID."""
    path = tmp_path / "trace.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    names = dict(strings or {})
    for correlation, called, thread, function, symbol, node, pid in kernels:
        ids = []
        for name in (function, symbol):
            if name is not None and name not in names.values():
                names[len(names) + 100] = name
            ids.append(next((k for k, v in names.items() if v == name), None))
        db.execute(
            "insert into CUPTI_ACTIVITY_KIND_KERNEL values (?, ?, ?, ?, 4, 1, 1, 128, 1, 1, ?, ?, ?)",
            (called + 5, called + 9, correlation, pid, ids[0], ids[1], node),
        )
        db.execute(
            "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (?, ?, ?, ?)", (called, called + 1, correlation, thread)
        )
    for start, end, text, thread, domain, text_id in ranges:
        db.execute("insert into NVTX_EVENTS values (?, ?, 59, ?, ?, ?, ?)", (start, end, text, thread, domain, text_id))
    for domain, name in (domains or {}).items():
        db.execute("insert into NVTX_EVENTS values (1, null, 75, ?, ?, ?, null)", (name, THREAD, domain))
    db.executemany("insert into StringIds values (?, ?)", names.items())
    db.commit()
    db.close()
    return path


def test_launches_come_in_call_order_with_the_ranges_open_on_their_thread(tmp_path: Path) -> None:
    path = export(
        tmp_path,
        kernels=[
            (3, 50, THREAD, "late", "_Z4latev", None, PID),
            (1, 10, THREAD, "first", None, None, PID),  # not C++: its symbol is its name
            (2, 30, OTHER, "other", None, 0, PID),
        ],
        ranges=[
            (5, 60, "step", THREAD, 0, None),
            (20, None, None, THREAD, None, 1),  # still open at the end; its name by StringIds
            (25, 40, "elsewhere", OTHER, 0, None),
            (5, 8, "closed before", THREAD, 0, None),
        ],
        strings={1: "layer"},
    )
    launches = read_all(path)
    assert [(x.id, x.function, x.symbol, x.nvtx) for x in launches] == [
        (0, "first", "first", (f"{DEFAULT_DOMAIN}:step",)),
        (1, "other", "other", (f"{DEFAULT_DOMAIN}:elsewhere",)),
        (2, "late", "_Z4latev", (f"{DEFAULT_DOMAIN}:step", f"{DEFAULT_DOMAIN}:layer")),
    ]
    assert launches[0].grid == (4, 1, 1) and launches[0].block == (128, 1, 1)
    kept = tmp_path / "kept.json"
    keep_launches(kept, launches)
    assert kept_launches(kept) == launches


@pytest.mark.parametrize(
    ("kernels", "ranges", "why"),
    [
        ([(1, 10, THREAD, "k", None, None, PID), (2, 20, THREAD, "k", None, None, PID + (1 << 24))], [], "processes"),
        ([(1, 10, THREAD, "k", None, None, PID)], [(5, 20, None, THREAD, 0, None)], "without a name"),
        # NCCL's range, on another thread and closed long before: still refused (ncu placed one at every launch)
        ([(1, 10, THREAD, "k", None, None, PID)], [(1, 2, "ncclCommInitRankConfig", OTHER, 3, None)], "'NCCL'"),
        ([(1, 10, THREAD, "k", None, None, PID)], [(1, 2, "r", THREAD, 4, None)], "domain of no name"),  # not created
    ],
)
def test_what_cannot_be_ordered_or_named_as_ncu_does_is_refused(
    tmp_path: Path, kernels: list[tuple], ranges: list[tuple], why: str
) -> None:
    with pytest.raises(ExportRefused, match=why):
        read_all(export(tmp_path, kernels, ranges, domains={3: "NCCL"}))


def test_cubs_ranges_are_read_in_their_domain_as_ncu_lists_them(tmp_path: Path) -> None:
    """CCCL's ranges (CUB's registered strings, by StringIds) take their domain's name, beside the default
    domain's, in the order they were pushed; a launch inside reads as ncu's real listing of one reads."""
    path = export(
        tmp_path,
        kernels=[
            (1, 10, THREAD, "before", None, None, PID),
            (2, 30, THREAD, "DeviceReduceSingleTileKernel", None, None, PID),
            (3, 50, THREAD, "after", None, None, PID),
        ],
        ranges=[(5, 60, "step", THREAD, 0, None), (25, 35, None, THREAD, 1, 1)],
        strings={1: "cub::DeviceReduce::Sum"},
        domains={1: "CCCL"},
    )
    launches = read_all(path)
    assert [x.nvtx for x in launches] == [
        (f"{DEFAULT_DOMAIN}:step",),
        (f"{DEFAULT_DOMAIN}:step", "CCCL:cub::DeviceReduce::Sum"),
        (f"{DEFAULT_DOMAIN}:step",),
    ]
    real = parse_raw_csv((FIXTURES / "zoo" / "cccl" / "moe_train-reduce-sum.function.csv").read_text())
    assert [x.nvtx for x in real] == [("CCCL:cub::DeviceReduce::Sum",)] * 3
    assert selected(launches, options(nvtx_include=("CCCL@cub::DeviceReduce::Sum/",))) == [1]
    assert selected(launches, options(nvtx_include=("CCCL@[cub::DeviceReduce::Sum]",))) == [1]
    # each domain keeps its own stack, as ncu does: CUB's range on top hides nothing of the default domain's
    assert selected(launches, options(nvtx_include=("step]",))) == [0, 1, 2]
    assert selected(launches, options(nvtx_include=("cub::DeviceReduce::Sum/",))) == []


def test_the_nodes_of_a_graph_launch_come_as_they_ran(tmp_path: Path) -> None:
    path = export(
        tmp_path,
        kernels=[
            (5, 50, THREAD, "node_b", None, 2, PID),  # one graph launch (correlation 5): two nodes
            (5, 50, THREAD, "node_a", None, 1, PID),
            (4, 40, THREAD, "before", None, None, PID),
        ],
        ranges=[(30, 60, "graphed", THREAD, 0, None)],
    )
    with sqlite3.connect(path) as db:  # node_a ran first on the GPU
        db.execute("update CUPTI_ACTIVITY_KIND_KERNEL set start = 70 where correlationId = 5 and graphNodeId = 2")
    launches = read_all(path)
    assert [(x.function, x.nvtx) for x in launches] == [
        ("before", (f"{DEFAULT_DOMAIN}:graphed",)),
        ("node_a", (f"{DEFAULT_DOMAIN}:graphed",)),
        ("node_b", (f"{DEFAULT_DOMAIN}:graphed",)),
    ]
    assert read_export(path, selector(options(kernel_name="before")), 5, Bounds()) == launches[:1]
    held = read_export(path, selector(options(kernel_name="regex:node")), 1, Bounds())
    assert held == [dataclasses.replace(launches[1], id=0)]  # numbered as the trace holds them, as ncu's are


def test_a_launch_without_its_api_call_is_refused(tmp_path: Path) -> None:
    path = export(tmp_path, [(1, 10, THREAD, "k", None, None, PID)], [])
    with sqlite3.connect(path) as db:
        db.execute("delete from CUPTI_ACTIVITY_KIND_RUNTIME")
    with pytest.raises(ExportRefused, match="no API call"):
        read_all(path)


def test_an_export_without_kernels_holds_no_launch_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    assert read_all(empty) == []
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 300)
    with pytest.raises(ExportRefused, match="cannot be"):
        read_all(damaged)
    with pytest.raises(ExportRefused, match="cannot be"):
        read_all(tmp_path / "missing" / "x.sqlite")


def _many(tmp_path: Path, count: int) -> Path:
    return export(tmp_path, [(i, 10 * i, THREAD, f"k{i % 3}", None, None, PID) for i in range(1, count + 1)], [])


def test_reading_stops_once_the_trace_holds_what_it_was_asked_and_keeps_what_its_filters_select(
    tmp_path: Path,
) -> None:
    path = _many(tmp_path, 50)
    held = read_export(path, selector(options(kernel_name="k1")), 4, Bounds(rows=20))  # k1: every third launch
    assert [x.function for x in held] == ["k1"] * 4  # read up to the 12th launch: within 20 rows
    with pytest.raises(ExportRefused, match="more than 20 launches before the trace's 40"):
        read_export(path, selector(options(kernel_name="k1")), 40, Bounds(rows=20))
    k1 = options(kernel_name="k1")  # the rows of other kernels are never read: 17 of k1's within 20 rows
    assert len(read_export(path, selector(k1), 40, Bounds(rows=20), name_test(k1))) == 17


def test_reading_is_bounded_in_bytes_and_seconds_and_stops_with_the_run(tmp_path: Path) -> None:
    path = _many(tmp_path, 5)
    with pytest.raises(ExportRefused, match="MiB, above the 0 MiB read"):
        read_export(path, lambda _launch: True, 10, Bounds(size=100))
    with sqlite3.connect(path) as db:  # a kernel table that never ends
        db.executescript(
            "alter table CUPTI_ACTIVITY_KIND_KERNEL rename to k_rows; create view CUPTI_ACTIVITY_KIND_KERNEL as"
            " with recursive n(i) as (select 1 union all select i + 1 from n) select k.* from n, k_rows k"
        )
    with pytest.raises(ExportRefused, match=r"reading it took longer than 0\.3 s"):
        read_export(path, lambda _launch: True, 10, Bounds(seconds=0.3))
    stop = StopRequest()
    outcome: list[object] = []

    def reading() -> None:
        try:
            outcome.append(read_export(path, lambda _launch: True, 10, Bounds(stop=stop)))
        except ExportRefused as exc:
            outcome.append(exc)

    reader = threading.Thread(target=reading)
    reader.start()
    stop.request(1)  # a Ctrl-C, whenever it comes: before the read began or during it
    reader.join(timeout=60)
    assert not reader.is_alive() and "the run is stopping" in str(outcome[0])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("update CUPTI_ACTIVITY_KIND_KERNEL set gridX = null", "grid or block of (None, 1, 1)"),
        ("update CUPTI_ACTIVITY_KIND_KERNEL set blockX = 'wide'", "grid or block of ('wide', 1, 1)"),
        ("update CUPTI_ACTIVITY_KIND_KERNEL set gridY = 9e999", "grid or block of (4, inf, 1)"),
        ("update CUPTI_ACTIVITY_KIND_KERNEL set gridZ = 0", "grid or block of (4, 1, 0)"),
        ("update CUPTI_ACTIVITY_KIND_RUNTIME set start = 'soon'", "start or thread that is no integer"),
        ("update StringIds set value = cast(x'c328' as text)", "cannot be read"),
        ("update StringIds set value = x'01'", "no kernel name"),
        ("update NVTX_EVENTS set end = 'later'", "start, end or thread that is no integer"),
        ("update NVTX_EVENTS set start = null", "start, end or thread that is no integer"),
        ("update NVTX_EVENTS set domainId = 'CCCL'", "the domain of no name"),  # an ID that no creation names
    ],
)
def test_a_value_of_another_type_than_the_schema_says_refuses_the_export(tmp_path: Path, change: str, why: str) -> None:
    path = export(tmp_path, [(1, 10, THREAD, "k", None, None, PID)], [(5, 20, "step", THREAD, 0, None)])
    with sqlite3.connect(path) as db:
        db.execute(change)
    with pytest.raises(ExportRefused, match=re.escape(why)):
        read_all(path)


def test_kept_launches_write_each_name_once_as_ncu_would_list_them(tmp_path: Path) -> None:
    """Kept as listings are (execute/trace/listings.py): each string once, and a digest; with every name
    written out, 400,000 launches of 50 functions took 57 MB."""
    launches = [
        traced(i, "_Z3onev", "one", (1, 1, 1), (32, 1, 1), ("step",))
        if i % 2 == 0
        else traced(i, "_Z3twov", "two", (2, 1, 1), (64, 1, 1), ("step", "layer"))
        for i in range(1000)
    ]
    kept = tmp_path / "kept.json"
    keep_launches(kept, launches)
    written = json.loads(kept.read_text())
    assert len(written["strings"]) == len(set(written["strings"])) < 12
    assert kept_launches(kept) == launches


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        '{"launches": [["s", "f", [1, 1, 1], [1, 1, 1], []]]}',  # format 1: every name in full
        '{"format": 2, "names": [["s", "f"]], "stacks": [[]], "launches": [[1, 1, 1, 1, 1, 1, 1, 0]]}',
        '{"format": 2, "names": [["s", "f"]], "stacks": [[]], "launches": [[-1, 1, 1, 1, 1, 1, 1, 0]]}',
        '{"format": 2, "names": [["s", "f"]], "stacks": [[]], "launches": [[0, 1, 1, 1, 1, 1, 0]]}',
        '{"format": 2, "names": [["s"]], "stacks": [[]], "launches": [[0, 1, 1, 1, 1, 1, 1, 0]]}',
        '{"format": 2, "names": [["s", "f"]], "launches": [[0, 1, 1, 1, 1, 1, 1, 0]]}',
        '{"format": 2, "names": [["s", "f"]], "stacks": [[]], "launches": [[0.5, 1, 1, 1, 1, 1, 1, 0]]}',
        '{"format": 2, "names": [["s", "f"]], "stacks": 3, "launches": [[0, "x", 1, 1, 1, 1, 1, 0]]}',
    ],
)
def test_kept_launches_that_are_damaged_read_as_none(tmp_path: Path, text: str) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text(text)
    assert kept_launches(kept) is None
    assert kept_launches(tmp_path / "missing.json") is None


def test_kept_launches_whose_listings_are_valid_but_do_not_make_launches_read_as_none(tmp_path: Path) -> None:
    from ncucampaign.execute.trace.listings import BY_FUNCTION, encode

    kept = tmp_path / "kept.json"
    odd, other = Launch(0, "_Z1kv", (1, 1, 1), (1, 1, 1), ()), Launch(1, "_Z1kv", (1, 1, 1), (1, 1, 1), ())
    for listed in ({(): [odd], BY_FUNCTION: [odd, other]}, {(): [odd]}, {(): [odd], BY_FUNCTION: []}):
        kept.write_text(encode(listed, []).model_dump_json())
        assert kept_launches(kept) is None
