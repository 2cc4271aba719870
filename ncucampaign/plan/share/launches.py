"""The launch record of sharing, read from ncu's raw CSV. Pure. Both sides of a verification (trace and union
report) are read alike and name kernels by mangled symbol: the demangled text ncu prints for one launch differs
between reports (docs/ncu-behaviour.md, "Launch identity"). People read function names."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

_NVTX_COLUMN = "thread Domain:Push/Pop_Range"
_NO_MESSAGE = ":none" * 6  # an entry's last six fields where its range has no payload, color or message
_QUOTED = re.compile(r'"([^"]*)"')
_DIMS = re.compile(r"\((\d+), (\d+), (\d+)\)")  # a grid or block as ncu lists it: (x, y, z)
Dims = tuple[int, int, int]
NO_DIMS: Dims = (0, 0, 0)  # of a listing without the column


_NO_NAMES: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Launch:
    """One kernel launch, the one record of it from the discovery trace to the split, whoever listed it: ncu's raw
    CSV of a trace or of a union's report (`id`: its ID there), or an Nsight Systems trace (`id`: its position among
    the launches held, `function`: its function name, which a kernel filter also matches). The report read for
    results is another record (results/reading/reader.py ReportedLaunch): it holds what ncu measured."""

    id: int
    symbol: str  # the kernel's mangled name (--print-kernel-base mangled): the same in every report
    grid: Dims
    block: Dims
    nvtx: tuple[str, ...]  # 'domain:range' from the bottom of the push/pop stack to its top
    function: str = ""  # ncu's listings give it in a listing of their own (listings.py BY_FUNCTION)

    @property
    def identity(self) -> tuple[str, Dims, Dims, tuple[str, ...]]:
        return (self.symbol, self.grid, self.block, self.nvtx)

    def describe(self, names: Mapping[str, str] = _NO_NAMES, full: bool = False) -> str:
        """For a person: its function name (`names`: symbol -> function name, as ncu lists them), grid,
        block and NVTX stack; `full`: the symbol itself."""
        stack = "/".join(part.split(":", 1)[-1] for part in self.nvtx)
        name = self.symbol if full else names.get(self.symbol) or short_name(self.symbol)
        return f"{name} grid {dims_text(self.grid)} block {dims_text(self.block)}" + (f" in {stack}" if stack else "")


def dims_text(xyz: Dims) -> str:
    """A grid or block as ncu lists it: (x, y, z)."""
    return f"({xyz[0]}, {xyz[1]}, {xyz[2]})"


def dims(text: str) -> Dims:
    """A grid or block of ncu's listing (garbled() refuses a listing whose column says otherwise)."""
    found = _DIMS.fullmatch(text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else NO_DIMS


def short_name(symbol: str) -> str:
    """The function name a mangled symbol (Itanium C++ ABI) names, without namespaces or template
    arguments: `_ZN2at6native29vectorized_elementwise_kernelILi8E...` -> `vectorized_elementwise_kernel`.
    A name that is not mangled (extern "C", Triton) is its own function name. For display only: ncu's
    own function names (--print-kernel-base function) are used wherever they decide anything."""
    if not symbol.startswith("_Z"):
        return symbol
    index, last = 2, None
    nested = symbol[index : index + 1] == "N"
    index += 1 if nested else 0
    while index < len(symbol):
        if symbol.startswith("St", index):  # std::
            index += 2
            continue
        digits = re.match(r"\d+", symbol[index:])
        if digits is None:
            break
        start = index + len(digits.group())
        last = symbol[start : start + int(digits.group())]
        index = start + int(digits.group())
        if not nested:
            break
    return last or symbol


def raw_csv_rows(text: str) -> list[dict[str, str]]:
    """Every row of `--page raw --csv` by column name, the units row included (ncu's own ==PROF== lines are skipped)."""
    lines = [line for line in text.splitlines() if not line.startswith("==")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def garbled(text: str) -> str | None:
    """What is wrong with a raw CSV listing of launches, as far as its own shape tells (None: nothing): every row has
    the header's fields, one units row (no ID) at most, then IDs that only grow, each with a kernel name."""
    lines = [line for line in text.splitlines() if not line.startswith("==")]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines)), strict=True))
    except csv.Error as exc:
        return f"not CSV ({exc})"
    if not rows:
        return None
    header, last = rows[0], -1
    if "ID" not in header or "Kernel Name" not in header:
        return "no ID and Kernel Name columns"
    ident, kernel = header.index("ID"), header.index("Kernel Name")
    sizes = [header.index(name) for name in ("Grid Size", "Block Size") if name in header]
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            return f"row {number} has {len(row)} fields, the header {len(header)}"
        if not row[ident].strip() and number == 2:
            continue  # the units row
        if not row[ident].strip().isdigit() or int(row[ident]) <= last or not row[kernel]:
            return f"row {number} is no launch after launch {last} (ID {row[ident][:20]!r})"
        odd = next((row[i] for i in sizes if not _DIMS.fullmatch(row[i])), None)
        if odd is not None:
            return f"row {number} has a grid or block of {odd[:40]!r}, not (x, y, z)"
        last = int(row[ident])
    return None


def _domain_and_range(entry: str) -> str:
    """'domain:range' of an entry of the push/pop column, which ncu writes as
    DOMAIN:RANGE:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg: the six fields after the range are dropped, so
    that a range named like PyTorch's (`aten::linear`) keeps its whole name. A message that is text repeats the
    range's name, colons and all (CUB's registered `CCCL:cub::DeviceReduce::Sum:none:none:none:none:REGISTERED:
    cub::DeviceReduce::Sum`, docs/ncu-behaviour.md): the fields end where that message begins."""
    if entry.endswith(_NO_MESSAGE) and entry.count(":") >= 7:
        return entry[: -len(_NO_MESSAGE)]  # most entries: every range a default domain's
    fields = entry.split(":")
    if len(fields) < 8:
        return ":".join(fields[:2])
    for cut in range(len(fields) - 6, 1, -1):  # the message's first field, from the last one leftwards
        head, message = ":".join(fields[:cut]), ":".join(fields[cut + 5 :])
        if fields[cut + 4] != "none" and head.endswith(":" + message):
            return head
        if cut == len(fields) - 6 and message == "none":
            return head  # no message: the last six fields, as every default-domain range is written
    return ":".join(fields[:-6])


def parse_raw_csv(text: str) -> list[Launch]:
    """Rows of `--page raw --csv` (the units row and ncu's own ==PROF== lines are skipped); the
    "Kernel Name" column as listed (the symbol when listed with --print-kernel-base mangled)."""
    rows = raw_csv_rows(text)
    header = rows[0] if rows else {}  # a row with more fields than the header adds a None key
    nvtx_column = next((name for name in header if isinstance(name, str) and name.startswith(_NVTX_COLUMN)), None)
    launches = []
    for row in rows:
        ident = (row.get("ID") or "").strip()
        if not ident.isdigit():
            continue  # the units row
        stack = _QUOTED.findall(row.get(nvtx_column) or "") if nvtx_column else []
        launches.append(
            Launch(
                id=int(ident),
                symbol=row.get("Kernel Name") or "",
                grid=dims(row.get("Grid Size") or ""),
                block=dims(row.get("Block Size") or ""),
                nvtx=tuple(_domain_and_range(entry) for entry in stack),
            )
        )
    return launches
