"""Reading a report has bounds: a crafted .ncu-repz, a real report followed by 256 MB of
zeros inside its zstd frame, kept summarize busy 28 s at 2.3 GB. It is refused before NVIDIA's reader
sees it, and the reader's process is limited in time and memory by the report's size."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
import zstandard

from ncucampaign.errors import ReportUnreadable
from tests.conftest import FIXTURES, run_cli

REAL = FIXTURES / "reports" / "full_decode2.ncu-rep"


def padded(path: Path, zeros: int, real: Path = REAL) -> Path:
    """A real report and `zeros` bytes of zeros in one zstd frame, written as a stream."""
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    with path.open("wb") as out:
        out.write(compressor.compress(real.read_bytes()))
        block = bytes(1 << 20)
        for _ in range(zeros >> 20):
            out.write(compressor.compress(block))
        out.write(compressor.flush())
    return path


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
@pytest.mark.parametrize("command", ["summarize", "findings"])
def test_a_report_padded_with_zeros_inside_its_frame_is_refused_at_once(tmp_path: Path, command: str) -> None:
    hostile = padded(tmp_path / "padded.ncu-repz", 256 << 20)
    assert hostile.stat().st_size < 200_000
    done = run_cli(command, str(hostile), cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "inflates to more than" in done.stderr and "not a report ncu wrote" in done.stderr, done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
@pytest.mark.parametrize("command", ["summarize", "findings"])
def test_a_small_report_that_inflates_thousands_of_times_is_refused_at_once(tmp_path: Path, command: str) -> None:
    """Before the fix: 18.8 KB inflating to 64 MiB (3,575x) passed the rule (a floor of 64 MiB was added to
    the ratio's allowance) and cost summarize 60 s and 2.3 GB, findings 114 s."""
    small = FIXTURES / "reports" / "name_exact.ncu-rep"
    hostile = padded(tmp_path / "small.ncu-repz", 64 << 20, real=small)
    assert hostile.stat().st_size < 40_000
    done = run_cli(command, str(hostile), cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "inflates to more than" in done.stderr and "not a report ncu wrote" in done.stderr, done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
@pytest.mark.parametrize("level", [1, 3, 19])
def test_every_real_report_compressed_passes_the_rule(tmp_path: Path, level: int) -> None:
    from ncucampaign.results.reading.report_limits import read_limits

    for report in sorted((FIXTURES / "reports").glob("*.ncu-rep")):
        packed = tmp_path / f"{report.stem}.ncu-repz"
        packed.write_bytes(zstandard.ZstdCompressor(level=level).compress(report.read_bytes()))
        assert read_limits(packed).seconds > 0, report  # not refused


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_real_compressed_report_reads_within_its_limits(tmp_path: Path) -> None:
    from ncucampaign.results.reading.report_limits import read_limits

    real = padded(tmp_path / "real.ncu-repz", 0)
    limits = read_limits(real)
    assert limits.seconds < 60 and limits.memory < 2 << 30
    done = run_cli("summarize", str(real), cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and "rmsnorm_kernel" in done.stdout, done.stdout + done.stderr


def test_the_reader_worker_gets_an_address_space_limit(tmp_path: Path) -> None:
    from ncucampaign.results.reading.report_limits import FLOOR_BYTES, read_limits

    limits = read_limits(REAL)
    assert resource.RLIMIT_AS and limits.memory >= 1 << 30  # room for Python and the reader
    with pytest.raises(ReportUnreadable, match="inflates to more than"):
        read_limits(padded(tmp_path / "p.ncu-repz", FLOOR_BYTES + (128 << 20)))


def test_the_size_a_frame_declares_is_read_from_its_header() -> None:
    from ncucampaign.results.reading.report_limits import declared_size

    frame = zstandard.ZstdCompressor(write_content_size=True).compress(bytes(5000))
    assert declared_size(frame[:18]) == 5000
    assert declared_size(b"not zstd at all") is None
