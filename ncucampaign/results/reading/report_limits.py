"""What reading one report may cost, decided before NVIDIA's reader sees it. Pure but for reading the file. A
19 KB `.ncu-repz` whose zstd frame held 256 MB of zeros kept `summarize` 28 s at 2.3 GB; ncu's reports compress
4.1x to 31.7x (docs/ncu-behaviour.md, "Compressed reports"), so a frame inflating far beyond (with a floor for
small files) is refused; the reader's process gets time and memory limits scaled to the report's size."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ncucampaign.errors import ReportUnreadable

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_RATIO = 400  # decompressed / compressed: 12 times the most a real report showed (31.7x)
FLOOR_BYTES = 4 << 20  # a tiny file may inflate this far whatever its ratio (the smallest real report: 79 KB)
CHUNK = 1 << 20
BASE_SECONDS, SECONDS_PER_MIB, MAX_SECONDS = 20.0, 2.0, 600.0
BASE_MEMORY, MEMORY_PER_BYTE = 1 << 30, 32  # the reader held 150-180 MB reading 2-8 MB reports


@dataclass(frozen=True)
class ReadLimits:
    seconds: float  # the reader process is stopped after this
    memory: int  # bytes of address space it may map


def read_limits(report: Path) -> ReadLimits:
    """The limits for reading `report`; ReportUnreadable when its compressed content inflates beyond
    what a report can (a damaged or crafted file)."""
    size = report.stat().st_size
    content = size
    with report.open("rb") as handle:
        if handle.read(4) == ZSTD_MAGIC:
            handle.seek(0)
            content = _inflated(handle, report, max(FLOOR_BYTES, MAX_RATIO * size))
    seconds = min(MAX_SECONDS, BASE_SECONDS + SECONDS_PER_MIB * content / (1 << 20))
    return ReadLimits(seconds, BASE_MEMORY + MEMORY_PER_BYTE * content)


def _inflated(handle: BinaryIO, report: Path, cap: int) -> int:
    """How many bytes the zstd frames inflate to, up to `cap` (refused beyond)."""
    try:
        import zstandard
    except ImportError:  # without the decompressor: what the first frame declares, when it does
        declared = declared_size(handle.read(18))
        if declared is not None and declared > cap:
            raise _too_big(report, cap) from None
        return declared if declared is not None else cap
    total = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True) as reader:
            while chunk := reader.read(CHUNK):
                total += len(chunk)
                if total > cap:
                    raise _too_big(report, cap)
    except zstandard.ZstdError as exc:
        raise ReportUnreadable(f"{report}: a damaged zstd frame ({exc})") from None
    return total


def _too_big(report: Path, cap: int) -> ReportUnreadable:
    return ReportUnreadable(
        f"{report}: inflates to more than {cap / (1 << 20):.1f} MiB, over {MAX_RATIO} times its size (real "
        "reports: at most 32 times): not a report ncu wrote (damaged or crafted); not read"
    )


def declared_size(header: bytes) -> int | None:
    """The content size a zstd frame header declares (RFC 8878, 3.1.1.1), None when it declares none."""
    if len(header) < 5 or header[:4] != ZSTD_MAGIC:
        return None
    descriptor = header[4]
    size_flag, single_segment, dictionary_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    at = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dictionary_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if width == 0 or len(header) < at + width:
        return None
    value = int.from_bytes(header[at : at + width], "little")
    return value + 256 if width == 2 else value
